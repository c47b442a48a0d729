package footprint

import (
	"slices"
	"strings"
	"testing"
)

// module is the import path of this module; its packages are ours.
const module = "github.com/median-go/median"

// testKits are packages only tests may link: a production binary that
// imports an adapter must not contain them.
var testKits = []string{
	"testing",
	module + "/conformance",
	module + "/internal/testonly/adaptertest",
	module + "/internal/testonly/adapters",
	module + "/internal/testonly/lambdatest",
	"github.com/stretchr/testify",
	"go.uber.org/goleak",
}

// frameworkImportsTesting names, by adapter, the framework packages that
// import "testing" themselves: a binary with that framework links it
// whatever the adapter does. fiber v2's utils package holds its own test
// helpers (utils.AssertEqual) beside production code.
var frameworkImportsTesting = map[string][]string{
	"fibermedian": {"github.com/gofiber/fiber/v2/utils"},
}

// TestAdapterBinaryLinksNoTestKit: building an app with one adapter (no
// tests) links neither conformance, the kits of our tests, testify nor
// goleak, and links "testing" only where the framework itself imports it.
func TestAdapterBinaryLinksNoTestKit(t *testing.T) {
	eachAdapter(t, func(t *testing.T, adapter string) {
		imports := listImports(t, module+"/"+adapter)
		if len(imports) < 20 {
			t.Fatalf("go list found only %d packages; the check itself is broken", len(imports))
		}
		if msg := linksTestKit(adapter, imports); msg != "" {
			t.Fatal(msg)
		}
	})
}

// listImports returns, for every package that building pkg (without its
// tests) loads, the packages it imports.
func listImports(t *testing.T, pkg string) map[string][]string {
	t.Helper()
	imports := map[string][]string{}
	for line := range strings.Lines(goList(t, "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", pkg)) {
		fields := strings.Fields(line)
		if len(fields) > 0 {
			imports[fields[0]] = fields[1:]
		}
	}
	return imports
}

// linksTestKit names the test kits a binary with adapter would link, and
// who imports them, or returns "".
func linksTestKit(adapter string, imports map[string][]string) string {
	var bad []string
	for pkg, deps := range imports {
		for _, dep := range deps {
			if !isTestKit(dep) {
				continue
			}
			if dep == "testing" && slices.Contains(frameworkImportsTesting[adapter], pkg) {
				continue
			}
			bad = append(bad, dep+" (imported by "+pkg+")")
		}
	}
	if len(bad) == 0 {
		return ""
	}
	slices.Sort(bad)
	return "a binary built with " + adapter + " would link test code:\n  " + strings.Join(bad, "\n  ")
}

func isTestKit(pkg string) bool {
	for _, kit := range testKits {
		if pkg == kit || strings.HasPrefix(pkg, kit+"/") {
			return true
		}
	}
	return false
}

// TestLinksTestKitFindsTestCode: the check can fail.
func TestLinksTestKitFindsTestCode(t *testing.T) {
	imports := map[string][]string{
		module + "/ginmedian":                {"net/http", module + "/conformance"},
		module + "/conformance":              {"testing"},
		"github.com/gin-gonic/gin":           {"net/http"},
		"github.com/gofiber/fiber/v2/utils":  {"testing"},
		"github.com/stretchr/testify/assert": {"testing"},
	}
	msg := linksTestKit("ginmedian", imports)
	for _, want := range []string{
		module + "/conformance (imported by " + module + "/ginmedian)",
		"testing (imported by " + module + "/conformance)",
		"testing (imported by github.com/gofiber/fiber/v2/utils)",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("linksTestKit(ginmedian) does not report %q:\n%s", want, msg)
		}
	}
	if msg := linksTestKit("fibermedian", map[string][]string{"github.com/gofiber/fiber/v2/utils": {"testing"}}); msg != "" {
		t.Errorf("fiber v2's own import of testing is allowed for fibermedian: %q", msg)
	}
	if msg := linksTestKit("fibermedian", map[string][]string{module + "/fibermedian": {"testing"}}); msg == "" {
		t.Error("fibermedian itself importing testing is reported")
	}
}
