// Package footprint holds the tests that keep two promises of the module.
//
// A team that uses one adapter downloads that framework and nothing else:
// for each adapter, what `go mod tidy` has to load for an app that imports
// the adapter with protocol and conformance (the packages and their tests)
// holds no other framework, no fasthttp (but for fiber), no netpoll (but
// for Hertz), no Redis client, no OpenTelemetry and no AWS module (the AWS
// SDK is imported only by protocol/dynamostore and the examples;
// aws-lambda-go, Lambda's runtime client, is lambdamedian's, whose users
// load no web framework).
//
// A production binary built with one adapter links no test code:
// conformance, the harnesses under internal/testonly, testify, goleak, and
// "testing" only where the framework itself imports it (fiber v2's utils).
//
// It is a harness of the module's own tests (internal/testonly): no user
// imports it, so its tests may name every adapter, and no shipped code
// imports it (internal/testonly/surface checks).
package footprint
