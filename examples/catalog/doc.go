// Package catalog is the demo that every example app serves: two order tools
// (lookup_order and cancel_order) over an in-memory order state, a small
// diagnostics answer, and the startup glue the examples share (the keys from
// the files MEDIAN_KEY_FILE and MEDIAN_KEY_PREVIOUS_FILE name, read again
// while the server runs, or from MEDIAN_KEY, or a generated development key;
// lookup_order capped at 20 calls per conversation per minute; an optional
// Redis replay store from MEDIAN_REDIS_URL or a Postgres mode from
// DATABASE_URL (replay store and orders in PostgreSQL, cancel_order inside
// its call's transaction), the listen address from PORT, and an http.Server
// with timeouts and graceful shutdown).
//
// The examples under examples/ differ only in how they mount the endpoint in
// their framework; what the endpoint answers comes from here, so all four
// behave the same. Copy what you need: nothing in this package is meant to be
// imported by production code.
package catalog
