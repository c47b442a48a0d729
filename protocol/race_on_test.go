//go:build race

package protocol

// raceEnabled is true under -race, which slows this package's code
// several times over (TestReportUnderLoad's bound allows for it).
const raceEnabled = true
