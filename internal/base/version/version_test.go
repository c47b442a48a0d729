package version

import (
	"runtime/debug"
	"testing"
)

// TestOf: the version for each kind of build.
func TestOf(t *testing.T) {
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "(devel)"},
		{"an app that imports the module", &debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "v0.3.0"},
			Deps: []*debug.Module{{Path: "golang.org/x/text", Version: "v0.40.0"}, {Path: ModulePath, Version: "v1.4.2"}}}, true, "v1.4.2"},
		{"a replaced dependency", &debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: ModulePath, Version: "v1.4.2", Replace: &debug.Module{Path: "../median", Version: ""}}}}, true, "(devel)"},
		{"the module's own command", &debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "v1.5.0"}}, true, "v1.5.0"},
		{"a build from a work tree", &debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "(devel)"}}, true, "(devel)"},
		{"an app that does not list it", &debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "v0.3.0"}}, true, "(devel)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Of(tt.bi, tt.ok); got != tt.want {
				t.Errorf("Of = %q, want %q", got, tt.want)
			}
		})
	}
	if got, want := Module(), Of(debug.ReadBuildInfo()); got != want {
		t.Errorf("Module = %q, want %q", got, want)
	}
}
