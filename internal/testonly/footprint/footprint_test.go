package footprint

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// heavy are the module paths a user of one adapter must not load, by the
// adapter that may.
var heavy = map[string][]string{
	"ginmedian":      {"github.com/gin-gonic/gin"},
	"echomedian":     {"github.com/labstack/echo/v4"},
	"echomedian/v5":  {"github.com/labstack/echo/v5"},
	"chimedian":      {"github.com/go-chi/chi"},
	"fibermedian":    {"github.com/gofiber/fiber/v2", "github.com/valyala/fasthttp"},
	"fibermedian/v3": {"github.com/gofiber/fiber/v3", "github.com/valyala/fasthttp"},
	"hertzmedian":    {"github.com/cloudwego/hertz", "github.com/cloudwego/netpoll"},
	"lambdamedian":   {"github.com/aws/aws-lambda-go"}, // Lambda's runtime client, not the AWS SDK
	"redis":          {"github.com/redis/go-redis"},
	"pgx":            {"github.com/jackc/pgx", "github.com/jackc/puddle"},
	"otel":           {"go.opentelemetry.io/otel"},
	"browser":        {"github.com/chromedp"},
	"aws":            {"github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go", "github.com/aws/aws-lambda-go"},
}

// neverAllowed are the entries of heavy that name no adapter: no adapter's
// user may load them.
var neverAllowed = map[string]bool{"redis": true, "pgx": true, "otel": true, "browser": true, "aws": true}

// eachAdapter runs check as a subtest for every adapter of heavy, skipping
// the whole test when the go command cannot be run.
func eachAdapter(t *testing.T, check func(t *testing.T, adapter string)) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the go command")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	for adapter := range heavy {
		if neverAllowed[adapter] {
			continue
		}
		if _, err := os.Stat(filepath.Join(repoRoot(t), adapter)); err != nil {
			t.Fatalf("adapter %s is missing: %v", adapter, err)
		}
		t.Run(adapter, func(t *testing.T) { check(t, adapter) })
	}
}

// goList runs the go command's list with args in the module's root and
// returns what it prints.
func goList(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// repoRoot is the module's root directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// TestOneAdapterLoadsOneFramework: for each adapter, the packages a user
// imports (the adapter, protocol and conformance) and their tests, which go
// mod tidy loads too, reach no other framework.
func TestOneAdapterLoadsOneFramework(t *testing.T) {
	eachAdapter(t, func(t *testing.T, adapter string) {
		loaded := strings.Fields(goList(t, "-deps", "-test", "-f", "{{.ImportPath}}",
			module+"/"+adapter, module+"/protocol", module+"/conformance"))
		if len(loaded) < 20 {
			t.Fatalf("go list found only %d packages; the check itself is broken", len(loaded))
		}
		if err := forbidden(adapter, loaded); err != "" {
			t.Fatal(err)
		}
	})
}

// forbidden names the packages of loaded that a user of adapter must not
// load, or returns "".
func forbidden(adapter string, loaded []string) string {
	allowed := map[string]bool{}
	for _, p := range heavy[adapter] {
		allowed[p] = true
	}
	var bad []string
	for name, prefixes := range heavy {
		for _, prefix := range prefixes {
			if allowed[prefix] {
				continue
			}
			for _, pkg := range loaded {
				if pkg == prefix || strings.HasPrefix(pkg, prefix+"/") || strings.HasPrefix(pkg, prefix+".") {
					bad = append(bad, pkg+" (from "+name+")")
				}
			}
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return "a user of " + adapter + " would load:\n  " + strings.Join(dedupe(bad), "\n  ")
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// TestForbiddenFindsOtherFrameworks: the check can fail.
func TestForbiddenFindsOtherFrameworks(t *testing.T) {
	loaded := []string{"github.com/gin-gonic/gin", "github.com/gofiber/fiber/v2/middleware", "net/http"}
	if msg := forbidden("ginmedian", loaded); !strings.Contains(msg, "github.com/gofiber/fiber/v2/middleware") || strings.Contains(msg, "gin-gonic") {
		t.Fatalf("forbidden(ginmedian) = %q", msg)
	}
	if msg := forbidden("ginmedian", []string{"github.com/gin-gonic/gin/render"}); msg != "" {
		t.Fatalf("gin is allowed for ginmedian: %q", msg)
	}
	if msg := forbidden("chimedian", []string{"github.com/go-chi/chi/v5", "github.com/redis/go-redis/v9"}); !strings.Contains(msg, "go-redis") {
		t.Fatalf("the Redis client is never allowed: %q", msg)
	}
	if msg := forbidden("ginmedian", []string{"github.com/cloudwego/netpoll", "github.com/cloudwego/hertz/pkg/app"}); !strings.Contains(msg, "netpoll") || !strings.Contains(msg, "hertz/pkg/app") {
		t.Fatalf("a gin user must not load Hertz: %q", msg)
	}
	if msg := forbidden("hertzmedian", []string{"github.com/cloudwego/hertz/pkg/route", "github.com/valyala/fasthttp"}); !strings.Contains(msg, "fasthttp") || strings.Contains(msg, "hertz/pkg/route") {
		t.Fatalf("forbidden(hertzmedian) = %q", msg)
	}
	if msg := forbidden("ginmedian", []string{"github.com/chromedp/cdproto/cdp"}); !strings.Contains(msg, "chromedp") {
		t.Fatalf("the browser driver is never allowed: %q", msg)
	}
	if msg := forbidden("lambdamedian", []string{"github.com/aws/aws-lambda-go/lambda", "github.com/aws/aws-sdk-go-v2/aws", "github.com/gin-gonic/gin"}); !strings.Contains(msg, "aws-sdk-go-v2/aws (from aws)") || !strings.Contains(msg, "gin-gonic") || strings.Contains(msg, "aws-lambda-go") {
		t.Fatalf("a Lambda user may load aws-lambda-go and nothing else of AWS's, and no framework: %q", msg)
	}
	for _, pkg := range []string{"github.com/aws/aws-sdk-go-v2/service/dynamodb", "github.com/aws/smithy-go/middleware", "github.com/aws/aws-lambda-go/lambda"} {
		if msg := forbidden("ginmedian", []string{pkg}); !strings.Contains(msg, pkg+" (from aws)") {
			t.Fatalf("AWS modules are not allowed to a gin user: %q", msg)
		}
	}
}

// TestMediancheckNeedsNoBrowserDriver: mediancheck, which users go
// install, builds without chromedp; only the inspector's tests use it.
func TestMediancheckNeedsNoBrowserDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	loaded := strings.Fields(goList(t, "-deps", "-f", "{{.ImportPath}}", module+"/conformance/cmd/mediancheck"))
	if !slices.Contains(loaded, module+"/conformance/cmd/mediancheck/internal/inspector") {
		t.Fatalf("mediancheck does not build the inspector; the check is broken: %v", loaded)
	}
	for _, pkg := range loaded {
		if strings.HasPrefix(pkg, "github.com/chromedp/") {
			t.Fatalf("mediancheck loads %s", pkg)
		}
	}
	tests := strings.Fields(goList(t, "-deps", "-test", "-f", "{{.ImportPath}}", module+"/conformance/cmd/mediancheck/internal/inspector"))
	if !slices.Contains(tests, "github.com/chromedp/chromedp") {
		t.Fatalf("the inspector's browser tests do not load chromedp; the check is broken")
	}
}

// TestTestKitsAddNothingToProtocol: the packages users import in their own
// tests (protocol/storetest for a Store, conformance for an endpoint) load
// no module beyond what protocol itself loads, so a user's tests inherit no
// test library (testify) from them.
func TestTestKitsAddNothingToProtocol(t *testing.T) {
	nonStandard := func(pkg string) []string {
		return strings.Fields(goList(t, "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", module+"/"+pkg))
	}
	base := map[string]bool{}
	for _, p := range nonStandard("protocol") {
		base[p] = true
	}
	if len(base) < 5 {
		t.Fatalf("go list found only %d packages under protocol; the check itself is broken", len(base))
	}
	for _, kit := range []string{"protocol/storetest", "conformance"} {
		t.Run(kit, func(t *testing.T) {
			var extra []string
			for _, p := range nonStandard(kit) {
				if !base[p] && !strings.HasPrefix(p, module+"/") {
					extra = append(extra, p)
				}
			}
			if len(extra) > 0 {
				t.Errorf("%s loads packages protocol does not; use the standard library there:\n\t%s", kit, strings.Join(extra, "\n\t"))
			}
		})
	}
}

// TestRedisStoreUserLoadsNoPgx: an app on gin with the Redis store (and so
// with the memory store, which is in protocol) loads no PostgreSQL driver.
func TestRedisStoreUserLoadsNoPgx(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	loaded := strings.Fields(goList(t, "-deps", "-test", "-f", "{{.ImportPath}}",
		module+"/ginmedian", module+"/protocol", module+"/protocol/redisstore"))
	if !slices.Contains(loaded, "github.com/redis/go-redis/v9") {
		t.Fatalf("go list did not load the Redis client; the check itself is broken")
	}
	for _, pkg := range loaded {
		if strings.HasPrefix(pkg, "github.com/jackc/") {
			t.Errorf("a user of ginmedian with redisstore would load %s", pkg)
		}
	}
}

// TestOnlyPgstoreImportsPgx: pgx is imported by protocol/pgstore and the
// examples, and by no other package of the module, tests included.
func TestOnlyPgstoreImportsPgx(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	out := goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...")
	users := 0
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 0 || !slices.ContainsFunc(f[1:], func(p string) bool { return strings.HasPrefix(p, "github.com/jackc/") }) {
			continue
		}
		users++
		if pkg := f[0]; pkg != module+"/protocol/pgstore" && !strings.HasPrefix(pkg, module+"/examples/") {
			t.Errorf("%s imports pgx: only protocol/pgstore and the examples may", pkg)
		}
	}
	if users == 0 {
		t.Fatal("no package imports pgx; the check itself is broken")
	}
}

// TestOnlyDynamostoreImportsTheAWSSDK: the AWS SDK (aws-sdk-go-v2 and
// smithy-go) is imported by protocol/dynamostore and the examples (not by
// lambdamedian, which needs only Lambda's runtime client), and by no other
// package of the module, tests included; and a gin user with the Redis or
// Postgres store loads none of it.
func TestOnlyDynamostoreImportsTheAWSSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	isSDK := func(p string) bool {
		return strings.HasPrefix(p, "github.com/aws/aws-sdk-go-v2") || strings.HasPrefix(p, "github.com/aws/smithy-go")
	}
	mayImport := func(pkg string) bool {
		for _, dir := range []string{"/protocol/dynamostore", "/examples"} {
			if pkg == module+dir || strings.HasPrefix(pkg, module+dir+"/") {
				return true
			}
		}
		return false
	}
	out := goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...")
	users := 0
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 0 || !slices.ContainsFunc(f[1:], isSDK) {
			continue
		}
		users++
		if !mayImport(f[0]) {
			t.Errorf("%s imports the AWS SDK: only protocol/dynamostore and the examples may", f[0])
		}
	}
	if users == 0 {
		t.Fatal("no package imports the AWS SDK; the check itself is broken")
	}
	if !mayImport(module+"/protocol/dynamostore") || mayImport(module+"/protocol/dynamostorex") || mayImport(module+"/ginmedian") || mayImport(module+"/lambdamedian") {
		t.Fatal("mayImport is broken")
	}

	loaded := strings.Fields(goList(t, "-deps", "-test", "-f", "{{.ImportPath}}",
		module+"/ginmedian", module+"/protocol", module+"/protocol/redisstore", module+"/protocol/pgstore", module+"/protocol/storetest"))
	if !slices.Contains(loaded, "github.com/jackc/pgx/v5") {
		t.Fatal("go list did not load pgx; the check itself is broken")
	}
	for _, pkg := range loaded {
		if strings.HasPrefix(pkg, "github.com/aws/") {
			t.Errorf("a user of ginmedian with redisstore or pgstore would load %s", pkg)
		}
	}
}
