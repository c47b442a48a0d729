// Package conformance checks that an HTTP endpoint answers the Median tool
// endpoint contract (docs/PROTOCOL.md): signatures, timestamps, bodies, errors,
// the manifest, replay protection and your own tools.
//
// It is shaped like the standard library's testing/slogtest: you describe a
// [Target] (how to send a request, where the endpoint is mounted, the key it
// runs with and sample calls for your tools) and the package owns the cases.
// It looks only at HTTP behaviour, so it checks any implementation: a
// [protocol.Handler] on net/http, one mounted through ginmedian, echomedian,
// chimedian or fibermedian, or a deployed URL.
//
// Two doors open onto one list of named cases ([Cases]):
//
//   - [Run] runs every case as a subtest named Group/ID in your go test,
//     selectable with -run (for example -run 'TestMedian/signature/').
//   - [Check] runs them without the testing package and returns a [Report]
//     with, for each case, what was expected, what came back and a curl line
//     that reproduces it. The mediancheck command (conformance/cmd/mediancheck)
//     uses it against a deployed URL.
//
// Cases that would run one of your tools need a [ToolSamples] entry for it
// and are skipped, with a message saying what to supply, when there is none.
// Tools marked SideEffects are never run unless Target.AllowSideEffects is
// set, so the default run is safe against production.
package conformance
