// Package version reads this library's version from the running binary's
// build info, once for every place that shows it: the diagnostics report's
// service.library, the conformance suite's User-Agent and mediancheck's.
//
// It is a leaf the core and the client share (internal/base), imported by
// protocol, conformance and conformance/internal/wire; it imports no package
// of the module, so the core and every package above it can import it
// (internal/testonly/surface holds it to protocol at most).
package version

import (
	"runtime/debug"
	"sync"
)

// ModulePath is this library's module.
const ModulePath = "github.com/median-go/median"

// Module is this library's version in the running binary: the main
// module's when the binary is built from this module (mediancheck), the
// dependency's when an app imports it, "(devel)" when the build has none
// (a build from a work tree, a test, a dependency replaced by a directory).
// It is read once.
var Module = sync.OnceValue(func() string { return Of(debug.ReadBuildInfo()) })

// Of is [Module] for the build info bi (ok false: none).
func Of(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return "(devel)"
	}
	version := ""
	if bi.Main.Path == ModulePath {
		version = bi.Main.Version
	}
	for _, dep := range bi.Deps {
		if dep.Path == ModulePath {
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
