package conformance

import (
	"runtime/debug"
	"sync"
)

// modulePath is this library's module.
const modulePath = "github.com/median-go/median"

// defaultUserAgent is the User-Agent of the suite's requests when
// Target.UserAgent is empty: "median-go-conformance/<version>", read from
// the build once.
var defaultUserAgent = sync.OnceValue(func() string {
	return "median-go-conformance/" + moduleVersion(debug.ReadBuildInfo())
})

// moduleVersion returns the version of this module in the build info: the
// main module's when the build is of this module, the dependency's when an
// app imports it, "(devel)" when the build has none (a build from a work
// tree, a test).
func moduleVersion(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return "(devel)"
	}
	version := ""
	if bi.Main.Path == modulePath {
		version = bi.Main.Version
	}
	for _, dep := range bi.Deps {
		if dep.Path == modulePath {
			version = dep.Version
			if dep.Replace != nil {
				version = dep.Replace.Version
			}
		}
	}
	if version == "" {
		return "(devel)"
	}
	return version
}
