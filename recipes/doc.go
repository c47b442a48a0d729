// Package recipes holds no code: its directories are one program per HTTP
// stack without a median-go adapter (gorilla/mux, huma v2, Iris, ...), each
// mounting the endpoint the way docs/MOUNTING.md shows, and each tested by
// running the whole conformance suite against it over a real listener.
//
// It is a module of its own (a replace points it at the library beside it),
// so the library's go.mod gains none of these frameworks. Run its tests
// from this directory: go test ./...
package recipes
