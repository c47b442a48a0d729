// Package footprint holds the tests that keep two promises of the module.
//
// A team that uses one adapter downloads that framework and nothing else:
// for each adapter, what `go mod tidy` has to load for an app that imports
// the adapter with protocol and conformance (the packages and their tests)
// holds no other framework, no fasthttp (but for fiber), no Redis client,
// no OpenTelemetry and no AWS module (the AWS SDK is imported only by
// protocol/dynamostore, lambdamedian and the examples).
//
// A production binary built with one adapter links no test code:
// conformance, the test kits under internal/, testify, goleak, and
// "testing" only where the framework itself imports it (fiber v2's utils).
//
// It lives in its own package under internal/ because no user imports it:
// its tests may name every adapter.
package footprint
