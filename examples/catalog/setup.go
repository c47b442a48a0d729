package catalog

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/median-go/median/otelmedian"
	"github.com/median-go/median/protocol"
)

// KeyEnv is the environment variable that holds the Median key (the core
// reads it too when Config.Keys is empty).
const KeyEnv = "MEDIAN_KEY"

// PreviousKeyEnv holds the key being retired during a rotation: calls
// signed with either key are accepted (docs/PROTOCOL.md §1.2).
const PreviousKeyEnv = "MEDIAN_KEY_PREVIOUS"

// RedisURLEnv is the environment variable that switches the replay store
// to Redis, e.g. redis://localhost:6379/0.
const RedisURLEnv = "MEDIAN_REDIS_URL"

// Options configures New. FromEnv fills it from the environment.
type Options struct {
	// Key is the Median key. When empty (or only white space) and Addr is
	// a loopback address, a development key is generated and announced on
	// Warnings; on any other address the endpoint answers every call 500
	// missing_secret (never fail open: docs/PROTOCOL.md §1.2).
	Key string
	// PreviousKey is the key being retired, accepted beside Key while
	// Median switches over; empty when no rotation is under way.
	PreviousKey string
	// Addr is where the server listens ("127.0.0.1:8080", ":8080"). Empty
	// means 127.0.0.1:8080.
	Addr string
	// RedisURL, when set, keeps replay answers in Redis (redis.ParseURL
	// syntax) so several instances share them; otherwise they are kept in
	// this process's memory.
	RedisURL string
	// DatabaseURL, when set (a postgres:// URL), keeps replay answers and
	// the orders in PostgreSQL, and cancel_order cancels inside its call's
	// transaction. New refuses to start when RedisURL is set too.
	DatabaseURL string
	// Logger receives the core's warnings; default slog.Default().
	Logger *slog.Logger
	// Warnings receives the development-key warning; default os.Stderr.
	Warnings io.Writer
	// Now is the server clock; default time.Now. Set it in tests.
	Now func() time.Time
	// KeyFiles leaves the keys to the core, which reads the files that
	// MEDIAN_KEY_FILE and MEDIAN_KEY_PREVIOUS_FILE name, again every 2 s,
	// so a rotated secret takes effect without a restart; Key and
	// PreviousKey are then ignored and no development key is generated (a
	// missing file is 500 missing_secret until it appears). FromEnv sets it
	// when either variable is set.
	KeyFiles bool
	// NoDevKey passes an empty Key to the core as it is, instead of
	// generating a development key: the endpoint then answers every request
	// 500 missing_secret. Tests of the key checks use it.
	NoDevKey bool
}

// FromEnv returns Options read from MEDIAN_KEY_FILE and
// MEDIAN_KEY_PREVIOUS_FILE (KeyFiles), MEDIAN_KEY, MEDIAN_KEY_PREVIOUS,
// MEDIAN_REDIS_URL, DATABASE_URL, HOST and PORT (see [Addr]), with logger for the core's
// log lines.
func FromEnv(logger *slog.Logger) Options {
	return Options{
		KeyFiles:    keyFilesSet(),
		Key:         os.Getenv(KeyEnv),
		PreviousKey: os.Getenv(PreviousKeyEnv),
		Addr:        Addr(),
		RedisURL:    os.Getenv(RedisURLEnv),
		DatabaseURL: os.Getenv(DatabaseURLEnv),
		Logger:      logger,
	}
}

// Demo is the demo endpoint and the state behind it: mount Handler in your
// framework, and read Orders from your app's ordinary routes.
type Demo struct {
	// Handler answers the Median endpoint with the catalog's tools and
	// diagnostics.
	Handler *protocol.Handler
	// Orders is the order state the tools read and change.
	Orders *Orders
	// Key is the key in use: the configured one, or the generated
	// development key; empty when the keys come from key files.
	Key string
	// DevKey reports whether Key was generated.
	DevKey bool
	// Addr is the address to listen on (Options.Addr).
	Addr string
	// Fingerprint is the key as protocol.Key prints it ("median key mk_…"),
	// safe to log and to show; empty when the key is not usable, or comes
	// from a key file (it may change while the server runs).
	Fingerprint string

	pgStore protocol.Store // the Postgres mode's store
	closers []func() error
}

// New builds the demo endpoint. A key that is set but not usable is not an
// error here: the handler answers every request 500 invalid_median_key, as
// the contract says, and the core logs why once. New fails when the Redis
// URL cannot be parsed or Redis does not answer a PING within 5 seconds,
// when PostgreSQL does not answer or its tables cannot be created, and
// when both are set.
func New(opts Options) (*Demo, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Warnings == nil {
		opts.Warnings = os.Stderr
	}
	if opts.Addr == "" {
		opts.Addr = net.JoinHostPort(loopbackHost, DefaultPort)
	}
	if opts.RedisURL != "" && opts.DatabaseURL != "" {
		return nil, fmt.Errorf("both %s and %s are set: the demo keeps its replay store in one of them; unset one", DatabaseURLEnv, RedisURLEnv)
	}
	if opts.KeyFiles && !keyFilesSet() {
		return nil, errors.New("catalog: Options.KeyFiles is set but neither " + KeyFileEnv + " nor " + PreviousKeyFileEnv + " is: the core reads those variables")
	}
	d := &Demo{Orders: NewOrders(), Key: opts.Key, Addr: opts.Addr}
	if opts.DatabaseURL != "" {
		store, pool, err := newPostgres(opts.DatabaseURL)
		if err != nil {
			return nil, err
		}
		d.Orders = newTableOrders(pool)
		d.pgStore = store
		d.closers = append(d.closers, func() error { pool.Close(); return nil })
	}
	keys := []string{d.Key}
	if strings.TrimSpace(opts.PreviousKey) != "" {
		keys = append(keys, opts.PreviousKey)
	}
	if opts.KeyFiles {
		d.Key, keys = "", nil // the core reads the files
	} else if strings.TrimSpace(d.Key) == "" && !opts.NoDevKey {
		if LoopbackOnly(opts.Addr) {
			d.Key, d.DevKey = NewDevKey(), true
			keys[0] = d.Key
			warnDevKey(opts.Warnings, d.Key)
		} else {
			warnNoKey(opts.Warnings, opts.Addr)
		}
	}
	if k, err := protocol.ParseKey(d.Key); err == nil {
		d.Fingerprint = k.String()
	}
	tools, lookup := catalogTools(d.Orders)
	// Every tool call becomes an execute_tool span and two metrics on the
	// global OpenTelemetry providers: no-ops until the app installs an SDK
	// (otel.SetTracerProvider / otel.SetMeterProvider, e.g. with an OTLP
	// exporter). Tool input and results are not recorded.
	traces, err := otelmedian.New()
	if err != nil {
		_ = d.Close()
		return nil, err
	}
	limits, err := newLimits(lookup, opts.Now, opts.Logger)
	if err != nil {
		_ = d.Close()
		return nil, err
	}
	cfg := protocol.Config{
		Interceptors: []protocol.Interceptor{limits},
		Observer:     traces.Observe,
		Keys:         keys,
		Tools:        tools,
		Diagnostics:  d.diagnostics,
		Logger:       opts.Logger,
		Now:          opts.Now,
	}
	if d.pgStore != nil {
		cfg.Store = d.pgStore
	}
	if opts.RedisURL != "" {
		store, closeFn, err := newRedisStore(opts.RedisURL)
		if err != nil {
			return nil, err
		}
		cfg.Store = store
		d.closers = append(d.closers, closeFn)
	}
	h, err := protocol.New(cfg)
	if h == nil {
		_ = d.Close()
		return nil, err
	}
	d.Handler = h
	d.closers = append(d.closers, h.Close) // stops the reads of the key files
	return d, nil
}

// Close releases what New opened (the Redis client, the PostgreSQL pool,
// the reads of the key files).
func (d *Demo) Close() error {
	var errs []error
	for _, c := range d.closers {
		errs = append(errs, c())
	}
	d.closers = nil
	return errors.Join(errs...)
}
