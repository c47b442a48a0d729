// Command echo is the demo shop on echo, in middleware mode: Mount with a
// handler puts the Median middleware in front of the shop's own echo
// handler, which dispatches each verified call to its tools and answers
// with echomedian.CallFrom and echomedian.Respond.
//
//	MEDIAN_KEY='<your key>' go run ./examples/echo
//
// It answers Median at /api/median and listens on $HOST:$PORT (PORT 8080 by
// default). Without MEDIAN_KEY it listens on 127.0.0.1 and generates a
// development key, printed with a warning; on any other address a missing
// key is answered 500 missing_secret (never fail open).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/median-go/median/echomedian"
	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/protocol"
)

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(logger); err != nil {
		logger.Error("the demo stopped", "error", err)
		os.Exit(1)
	}
}

// run builds the demo, serves it until SIGINT or SIGTERM, and closes it.
func run(logger *slog.Logger) error {
	demo, err := catalog.New(catalog.FromEnv(logger))
	if err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	defer demo.Close()

	logger.Info("serving", "addr", demo.Addr, "median", "/api/median", "key", demo.Fingerprint)
	if err := catalog.Serve(context.Background(), demo.Addr, newApp(demo)); err != nil {
		return fmt.Errorf("server stopped: %w", err)
	}
	return nil
}

// newApp builds the shop: its ordinary routes, and /api/median behind the
// Median middleware with the shop's own handler.
func newApp(demo *catalog.Demo) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true

	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	e.GET("/api/orders/:id", func(c echo.Context) error {
		id := c.Param("id")
		status, err := demo.Orders.Status(c.Request().Context(), id)
		if err != nil {
			return c.JSON(http.StatusNotFound, map[string]string{"error": err.Error()})
		}
		return c.JSON(http.StatusOK, map[string]string{"orderId": id, "status": status})
	})

	// Every method, on /api/median and /api/median/, goes through the
	// middleware: it answers GET (the manifest), diagnostics, refusals and
	// the contract's 405 itself, and lets only verified tool calls reach
	// answerCall. A panic in answerCall is answered execution_failed by the
	// core before echo's Recover sees it.
	e.Use(middleware.Recover())
	echomedian.Mount(e.Group("/api"), "/median", demo.Handler, answerCall(demo.Orders))
	return e
}

// answerCall answers a verified tool call: it runs the catalog tool the call
// names and answers with its result, refusal or error.
func answerCall(orders *catalog.Orders) echo.HandlerFunc {
	return func(c echo.Context) error {
		call, ok := echomedian.CallFrom(c)
		if !ok { // the middleware did not run: Respond answers saying so
			return echomedian.Respond(c, nil, nil)
		}
		if !catalog.Has(call.Tool) {
			// The middleware answers a tool the Handler does not declare
			// 404 unknown_tool itself; one it declares but the catalog
			// does not dispatch gets the same answer here, stored for
			// replay like any answer.
			return echomedian.Respond(c, nil, protocol.CodeUnknownTool)
		}
		result, err := catalog.Dispatch(c.Request().Context(), orders, call)
		return echomedian.Respond(c, result, err)
	}
}
