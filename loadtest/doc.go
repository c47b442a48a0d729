// Package loadtest drives a bounded load run against a Median tool endpoint:
// many concurrent clients sending a fixed mix of validly signed calls,
// refusals and junk, each answer checked against the status the contract
// gives it. It measures throughput and latency and counts transport errors,
// unexpected answers and 5xx.
//
// It only ever talks to a loopback address and always stops by itself, at
// Options.Requests or Options.Duration, whichever comes first. The command
// loadtest/cmd/medianload runs it; loadtest/run.sh runs it against every
// example app and prints a table.
package loadtest
