package fibermedian

import (
	"fmt"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/median-go/median/internal/adapt/fasthttpio"
)

// Do returns a function that sends one net/http request through app in
// memory (app.Test) and returns its answer, like http.Client.Do: what
// conformance.Target.Do takes, so the conformance suite can check a fiber
// app without a listener. fiber is not net/http, so this adapter alone needs
// such a helper. A body of unknown length is read first and sent with its
// length; the caller's request is left unchanged.
//
// In tests: conformance.Target{Do: fibermedian.Do(app), URL: "http://example.test/api/median", Key: key, Replay: true}
// describes the app; Target.BuildWithKey returns fibermedian.Do of the app
// your constructor builds with a bad key.
//
// fiber's limiter middleware allows 5 requests a minute by default, far
// fewer than a conformance run sends: raise its Max, or skip the Median
// path with its Next function, in the app you test.
func Do(app *fiber.App) func(*http.Request) (*http.Response, error) {
	return func(r *http.Request) (*http.Response, error) {
		r, err := fasthttpio.TestRequest(r)
		if err != nil {
			return nil, fmt.Errorf("fibermedian: %w", err)
		}
		return app.Test(r, -1)
	}
}
