package catalog_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/examples/catalog/catalogtest"
	"github.com/median-go/median/internal/testonly/pgtest"
)

func TestNewRefusesBothStores(t *testing.T) {
	_, err := catalog.New(catalog.Options{Key: catalogtest.Key, Logger: quiet,
		RedisURL: "redis://127.0.0.1:6379/0", DatabaseURL: "postgres://127.0.0.1/shop"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "DATABASE_URL")
	assert.Contains(t, err.Error(), "MEDIAN_REDIS_URL")
}

func TestNewRejectsABadDatabaseURL(t *testing.T) {
	_, err := catalog.New(catalog.Options{Key: catalogtest.Key, Logger: quiet, DatabaseURL: "mysql://127.0.0.1/shop"})
	require.ErrorContains(t, err, "postgres://")
}

func TestFromEnvReadsTheDatabaseURL(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://app@127.0.0.1:5432/shop")
	assert.Equal(t, "postgres://app@127.0.0.1:5432/shop", catalog.FromEnv(quiet).DatabaseURL)
}

// TestPostgresMode: two instances on one database start at once (both run
// the migrations), serve the whole catalog, share the orders, and a
// cancellation commits in the same transaction as its kept answer.
func TestPostgresMode(t *testing.T) {
	srv := pgtest.Start(t)
	demos := make([]*catalog.Demo, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range demos {
		wg.Go(func() {
			demos[i], errs[i] = catalog.New(catalog.Options{Key: catalogtest.Key, Logger: quiet, DatabaseURL: srv.URL})
		})
	}
	wg.Wait()
	for i := range demos {
		require.NoError(t, errs[i], "instance %d", i+1)
		defer demos[i].Close()
	}
	a := conformance.HandlerTarget(demos[0].Handler, catalogtest.MountPath, catalogtest.Key)
	catalogtest.Run(t, a) // cancels A-1001 and R-2002 on instance 1

	status, err := demos[1].Orders.Status(t.Context(), "A-1001")
	require.NoError(t, err)
	assert.Equal(t, catalog.StatusCancelled, status, "instance 2 sees instance 1's cancellation")
	status, err = demos[1].Orders.Status(t.Context(), "Z-9999")
	require.NoError(t, err)
	assert.Equal(t, catalog.StatusProcessing, status, "every other order is processing")
	report, raw := requestDiagnostics(t, demos[1].Handler)
	assert.Equal(t, catalog.Diagnostics{CancelledOrders: 2}, report.Result.App, "instance 2 counts the table, which has no limit: %s", raw)

	// Make the store unable to keep answers: the cancellation, written in
	// the same transaction, must roll back with it.
	pool, err := pgxpool.New(context.Background(), srv.URL)
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(context.Background(), `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
		CREATE TRIGGER refuse_answers BEFORE UPDATE ON "median"."calls" FOR EACH ROW WHEN (NEW.answer IS NOT NULL) EXECUTE FUNCTION refuse()`)
	require.NoError(t, err)
	b := conformance.HandlerTarget(demos[1].Handler, catalogtest.MountPath, catalogtest.Key)
	cancel := func() conformance.Reply[map[string]any] {
		return conformance.CallTool[map[string]any](t, b, conformance.ToolSample{
			Tool: catalog.CancelOrderTool, Input: map[string]string{"orderId": "T-7"}, Risk: "high", ApprovedBy: "A teammate",
		})
	}
	r := cancel()
	require.NotNil(t, r.Error, "%s", r.Raw)
	assert.Contains(t, r.Error.Message, "rolled back and nothing was changed")
	status, err = demos[0].Orders.Status(t.Context(), "T-7")
	require.NoError(t, err)
	assert.Equal(t, catalog.StatusProcessing, status, "the cancellation rolled back with its answer")

	_, err = pool.Exec(context.Background(), `DROP TRIGGER refuse_answers ON "median"."calls"`)
	require.NoError(t, err)
	r = cancel()
	require.Nil(t, r.Error, "%s", r.Raw)
	status, err = demos[0].Orders.Status(t.Context(), "T-7")
	require.NoError(t, err)
	assert.Equal(t, catalog.StatusCancelled, status, "with the store back, the cancellation commits")
}
