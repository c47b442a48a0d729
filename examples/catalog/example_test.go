package catalog_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"

	"github.com/median-go/median/examples/catalog"
)

// New builds the demo endpoint from the environment; mount its Handler in
// any router and serve it with timeouts and graceful shutdown.
func ExampleNew() {
	demo, err := catalog.New(catalog.FromEnv(slog.Default()))
	if err != nil {
		log.Fatal(err)
	}
	defer demo.Close()

	mux := http.NewServeMux()
	demo.Handler.Mount(mux, "/api/median")
	if false { // in a real main
		_ = catalog.Serve(context.Background(), demo.Addr, mux)
	}
	fmt.Println(len(catalog.Tools(demo.Orders)), "tools")
	// Output: 2 tools
}

// Orders is the state behind the tools; cancelling twice fails.
func ExampleOrders() {
	orders := catalog.NewOrders()
	fmt.Println(orders.Cancel(context.Background(), "A-1001"))
	fmt.Println(orders.Cancel(context.Background(), "A-1001"))
	status, _ := orders.Status(context.Background(), "A-1001")
	fmt.Println(status)
	// Output:
	// <nil>
	// order A-1001 is already cancelled
	// cancelled
}
