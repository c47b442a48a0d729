// Command gozero serves the demo catalog's Median endpoint on go-zero: the
// recipe of docs/MOUNTING.md#go-zero, built and run against the whole
// conformance suite by its test.
//
//	MEDIAN_KEY='<your key>' go run ./gozero
//
// It answers Median at /api/median and listens on $HOST:$PORT (PORT 8080 by
// default), with the key handling of examples/gin.
package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/rest"

	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/protocol"
)

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(logger); err != nil {
		logger.Error("the recipe stopped", "error", err)
		os.Exit(1)
	}
}

// run builds the demo's Handler and serves it on go-zero until SIGINT or
// SIGTERM.
func run(logger *slog.Logger) error {
	demo, err := catalog.New(catalog.FromEnv(logger))
	if err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	defer demo.Close()

	var c rest.RestConf // usually conf.MustLoad("etc/api.yaml", &c)
	if err := conf.FillDefault(&c); err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(demo.Addr)
	if err != nil {
		return err
	}
	if c.Port, err = strconv.Atoi(port); err != nil {
		return fmt.Errorf("PORT: %w", err)
	}
	if host != "" {
		c.Host = host
	}
	c.DevServer.Enabled = false // go-zero's default serves pprof on :6060
	server, err := newServer(c, demo.Handler)
	if err != nil {
		return err
	}
	defer server.Stop()
	logger.Info("serving", "addr", demo.Addr, "median", "/api/median", "key", demo.Fingerprint)
	server.Start()
	return nil
}

// newServer builds the go-zero server with h answering /api/median.
func newServer(c rest.RestConf, h *protocol.Handler) (*rest.Server, error) {
	server, err := rest.NewServer(c)
	if err != nil {
		return nil, err
	}
	// One path: go-zero serves /api/median/ on it too (a second one panics,
	// "duplicated item"). Every method it can route, each to h.
	var routes []rest.Route
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodHead, http.MethodOptions} {
		routes = append(routes, rest.Route{Method: m, Path: "/api/median", Handler: h.ServeHTTP})
	}
	server.AddRoutes(routes,
		rest.WithMaxBytes(2<<20),         // above h's MaxBodyBytes (1 MiB by default)
		rest.WithTimeout(30*time.Second), // above every tool's timeout
	)
	return server, nil
}
