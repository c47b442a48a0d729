// Package conformance checks that an HTTP endpoint answers the Median tool
// endpoint contract (docs/PROTOCOL.md): signatures, timestamps, the key,
// bodies, errors, the risk floor, the manifest, replay protection and your
// own tools; and it sends single signed calls for the tests of your tools.
//
// It is shaped like the standard library's testing/slogtest: you describe a
// [Target] (how to send a request, where the endpoint is mounted, the key it
// runs with and sample calls of your tools) and the package owns the cases.
// It looks only at HTTP behaviour, so it checks any implementation: a
// [protocol.Handler] on net/http, one mounted through ginmedian, echomedian,
// chimedian or fibermedian, or a deployed URL. [HandlerTarget] serves an
// http.Handler in process, [URLTarget] reaches a deployed endpoint, and
// [HandlerBuilder] lets the key cases rebuild your app with a bad key.
//
// # Testing one of your tools
//
// [CallTool] sends one signed call of a tool, described by a [ToolSample]
// (a typed input and the visitor, risk, approvedBy or toolCallId you
// choose), and returns a [Reply] with the result decoded into your own
// type, or the refusal, or the error answer, for require and assert or
// plain testing:
//
//	r := conformance.CallTool[Order](t, target, conformance.ToolSample{
//		Tool:    "lookup_order",
//		Input:   LookupInput{OrderID: "A-1001"},
//		Visitor: conformance.Visitor{Verified: true, ExternalID: "user_7"},
//	})
//	require.Nil(t, r.Error)
//	require.Nil(t, r.Refusal)
//	assert.Equal(t, "A-1001", r.Result.OrderID)
//
// [Call] does the same without the testing package.
//
// # Checking the whole endpoint
//
// Two doors open onto one list of named cases ([Cases]):
//
//   - [Run] runs every case as a subtest named Group/ID in your go test,
//     selectable with -run (for example -run 'TestMedian/signature/').
//     A failure is reported at the line of your test that called Run.
//   - [Check] runs them without the testing package and returns a [Report]
//     with a [Verdict] per case: what was expected, what came back and a
//     curl line that reproduces it. The mediancheck command
//     (conformance/cmd/mediancheck) uses it against a deployed URL.
//
// Each case passes, fails, is skipped or is not applicable:
//
//   - Skipped asks you for something: a [ToolSample] in Target.Tools for a
//     case that runs a tool, Target.BuildWithKey for the key cases,
//     Target.AllowSideEffects for samples marked SideEffects (never run
//     otherwise, so the default run is safe against production). The
//     message says what to supply. Target.Skip excludes cases you know fail.
//   - Not applicable is a case that cannot apply to the target whatever you
//     give: the key cases against a Deployed endpoint, the panic case
//     without a tool that panics, the risk-floor cases when no tool is
//     declared above low, the diagnostics report's cases (docs/PROTOCOL.md
//     §10) when its operator turned the report off or replaced it. Run
//     makes no subtest for them (one log line per group); Check reports
//     them apart. So a correct endpoint can reach "N passed, 0 failed"
//     with nothing skipped.
//
// The key cases need the endpoint built with a bad key: give
// Target.BuildWithKey, where [HandlerBuilder] fits an app constructor
// written the usual way (NewRouter(key) (*gin.Engine, error), nil and an
// error naming the key problem when the key is not usable). Their requests
// go to Target.URL, through the request function BuildWithKey returns, so
// that URL must be the mount path in the app it builds too. BuildWithKey
// runs with the key variables (MEDIAN_KEY, MEDIAN_KEY_FILE and their
// _PREVIOUS pairs) unset, so a constructor that falls back to the
// environment when given no key builds with the case's key whatever the
// shell exports. For an app that is not an http.Handler (a serverless
// function, Hertz, go-zero), give a Target whose Do serves the request
// with the app itself: see the Target example.
//
// Each key case builds your endpoint with a missing or unusable key, and a
// protocol.Handler logs such a key once at ERROR when it is built
// (docs/PROTOCOL.md §1.2). So the run prints a line such as
//
//	2026/12/01 13:40:00 ERROR median: the endpoint will answer 500 until a usable key is configured code=missing_secret error="…"
//
// for each of them (go test shows it with -v, when the package fails, or
// when run in the package's own directory). It is your endpoint's correct
// log for a bad key, provoked by the suite on purpose, not a failure; the
// suite cannot quiet it, since the logger is your constructor's. To
// attach it to the test that provoked it, have the constructor that
// BuildWithKey calls log to the test, for example with
// slog.New(slog.NewTextHandler(t.Output(), nil)): go test then shows it
// like the test's own log lines.
//
// Every request the suite and CallTool send carries the header
// User-Agent: median-go-conformance/<version> (Target.UserAgent), so the
// suite's calls are recognisable in your server's log: the warnings a run
// provokes (a risk-floor refusal, a bad signature) are the suite's, not an
// incident. Every one also proves it is a check's (docs/PROTOCOL.md §10,
// "Checks are not traffic"): a request signed with Target.Key carries its
// mark ([protocol.Key.CheckMark]) in the median-check header, and every
// other one, the deliberately unsigned, stale and badly signed probes
// included, the check token an earlier answer gave. The endpoint's
// diagnostics report then counts the run in its checks section, and its
// own readings show nothing of it.
//
// Beyond what each case checks, every answer of every case is searched for
// the MAC the server computed for its request (the suite knows the key):
// an answer that shows it fails the case.
package conformance
