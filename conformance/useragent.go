package conformance

import "github.com/median-go/median/internal/base/version"

// defaultUserAgent is the User-Agent of the suite's requests when
// Target.UserAgent is empty: "median-go-conformance/<version>".
func defaultUserAgent() string { return "median-go-conformance/" + version.Module() }
