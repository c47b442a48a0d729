-- The table of protocol/pgstore, for the default names (schema "median",
-- table "calls"). pgstore.Migrate runs this (for the names in its Options)
-- under an advisory lock; teams that run their own migrations can apply it
-- themselves, or take pgstore.MigrationSQL(opts) for other names.
-- Idempotent: every statement is IF NOT EXISTS.

CREATE SCHEMA IF NOT EXISTS "median";

-- One row per toolCallId: call_key is the hex SHA-256 of the id (64
-- characters however long the id is), fingerprint the hex SHA-256 of the
-- request body, answer the kept answer (NULL while the call runs), and
-- expires_at the end of the claim's lease or of the answer's TTL.
CREATE TABLE IF NOT EXISTS "median"."calls" (
    call_key    text        PRIMARY KEY,
    fingerprint text        NOT NULL,
    answer      bytea,
    expires_at  timestamptz NOT NULL
);

-- The store removes expired rows itself, a few with each saved answer,
-- oldest first: this index finds them.
CREATE INDEX IF NOT EXISTS "calls_expires_at_idx" ON "median"."calls" (expires_at);
