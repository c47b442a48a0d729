package pgstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// schemaSQL creates the table for the default names; see [MigrationSQL].
//
//go:embed schema.sql
var schemaSQL string

// The names schema.sql is written for, as they appear in it.
const (
	defaultQualified = `"median"."calls"`
	defaultSchemaSQL = `SCHEMA IF NOT EXISTS "median"`
	defaultIndex     = `"calls_expires_at_idx"`
)

// migrateLock is the advisory lock Migrate holds while it runs, so that
// instances starting at once do not create the table twice ("median-go
// pgstore migrate" in ASCII, truncated to 8 bytes: an arbitrary constant).
const migrateLock int64 = 0x6d656469616e6d67

// MigrationSQL returns the SQL that creates the store's table for the names
// in opts: schema.sql (shipped beside this package) with the names
// replaced, each quoted as an identifier. Every statement is
// IF NOT EXISTS, so it can run again. Use it when your team applies
// migrations with its own tool; otherwise call [Migrate].
func MigrationSQL(opts Options) string {
	opts = opts.withDefaults()
	r := strings.NewReplacer(
		defaultQualified, opts.qualified(),
		defaultSchemaSQL, "SCHEMA IF NOT EXISTS "+pgx.Identifier{opts.Schema}.Sanitize(),
		defaultIndex, pgx.Identifier{opts.Table + "_expires_at_idx"}.Sanitize(),
	)
	return r.Replace(schemaSQL)
}

// Migrate creates the store's schema, table and index when they do not
// exist yet ([MigrationSQL]), in one transaction under an advisory lock, so
// that several instances starting at once can all call it: one creates,
// the others wait for it and find everything there. Call it at start, or
// apply [MigrationSQL] with your own migrations instead. The pool's user
// needs the right to create the schema (or the schema must exist) and the
// table.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts Options) error {
	if pool == nil {
		return errors.New("median: pgstore: Migrate: the pool is nil")
	}
	if err := opts.check(); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrateLock); err != nil {
			return err
		}
		// No arguments: pgx sends it as one simple query, every statement
		// in this transaction.
		_, err := tx.Exec(ctx, MigrationSQL(opts))
		return err
	})
	if err != nil {
		return fmt.Errorf("median: pgstore: could not create the table %s: %w", opts.withDefaults().qualified(), err)
	}
	return nil
}
