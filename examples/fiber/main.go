// Command fiber is the demo shop on fiber: its own routes, and the Median
// endpoint mounted on its /api group, with the server's timeouts and body
// limit set in fiber.Config.
//
//	MEDIAN_KEY='<your key>' go run ./examples/fiber
//
// It answers Median at /api/median and listens on $HOST:$PORT (PORT 8080 by
// default). Without MEDIAN_KEY it listens on 127.0.0.1 and generates a
// development key, printed with a warning; on any other address a missing
// key is answered 500 missing_secret (never fail open).
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"

	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/fibermedian"
	"github.com/median-go/median/protocol"
)

// medianPath is where the shop answers Median.
const medianPath = "/api/median"

// bodyLimit is fiber's own body limit. fasthttp reads a body up to it
// before any route runs, so before the signature is checked: it is what a
// client with no key can make the server hold per connection, until
// ReadTimeout. It stays just above the core's limit (Config.MaxBodyBytes,
// 1 MiB by default), so that a body one byte over the core's limit, sent
// with or without a length, is refused by the core with the contract's
// JSON (errorHandler answers a larger one).
const bodyLimit = coreBodyLimit + 1

// coreBodyLimit is the core's default body limit (Config.MaxBodyBytes).
const coreBodyLimit = 1 << 20

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

	app := newApp(demo)
	logger.Info("serving", "addr", demo.Addr, "median", medianPath, "key", demo.Fingerprint)
	err = catalog.Run(context.Background(), func() error { return app.Listen(demo.Addr) }, app.ShutdownWithContext)
	if err != nil {
		return fmt.Errorf("server stopped: %w", err)
	}
	return nil
}

// newApp builds the shop: a fiber app with timeouts and a body limit, its
// ordinary routes, and Median mounted on the /api group beside them.
func newApp(demo *catalog.Demo) *fiber.App {
	app := fiber.New(fiber.Config{
		ReadTimeout:           catalog.ReadTimeout,
		WriteTimeout:          catalog.WriteTimeout,
		IdleTimeout:           catalog.IdleTimeout,
		BodyLimit:             bodyLimit,
		ErrorHandler:          errorHandler(demo.Handler),
		DisableStartupMessage: true,
	})
	app.Use(recover.New())

	app.Get("/healthz", func(c *fiber.Ctx) error {
		return c.JSON(fiber.Map{"status": "ok"})
	})

	api := app.Group("/api")
	api.Get("/orders/:id", func(c *fiber.Ctx) error {
		id := c.Params("id")
		status, err := demo.Orders.Status(c.UserContext(), id)
		if err != nil {
			return c.Status(http.StatusNotFound).JSON(fiber.Map{"error": err.Error()})
		}
		return c.JSON(fiber.Map{"orderId": id, "status": status})
	})

	// GET, POST and the contract's 405 for every other method, on
	// /api/median and /api/median/, all answered by the core.
	fibermedian.Mount(api, "/median", demo.Handler)
	return app
}

// errorHandler is fiber's default error handler, except for a body over
// fiber's own limit sent to the Median path: fasthttp refuses it before any
// route runs, so the core is asked with the declared length and no body,
// and answers what the contract says (the signature checks first, then 413
// invalid_body as JSON).
func errorHandler(h *protocol.Handler) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		if !errors.Is(err, fiber.ErrRequestEntityTooLarge) || c.Path() != medianPath {
			return fiber.DefaultErrorHandler(c, err)
		}
		resp := h.Serve(c.UserContext(), protocol.Request{
			Method:        c.Method(),
			Signature:     string(bytes.Join(c.Request().Header.PeekAll("Median-Signature"), []byte(","))), // a repeated header, joined (PROTOCOL.md §1.1)
			Check:         c.Get("Median-Check"),
			Body:          http.NoBody,
			ContentLength: int64(c.Request().Header.ContentLength()),
		})
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		if resp.Allow != "" {
			c.Set(fiber.HeaderAllow, resp.Allow)
		}
		if resp.CheckToken != "" {
			c.Set("Median-Check-Token", resp.CheckToken)
		}
		return c.Status(resp.Status).Send(resp.Body)
	}
}
