package inspector

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/median-go/median/internal/testonly/testsupport"
)

// chromium returns a browser context driving a fresh headless Chromium.
// Without Chromium the test is skipped, and fails when CI=true.
func chromium(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		path, err = exec.LookPath("/usr/bin/chromium")
	}
	if err != nil {
		testsupport.Missing(t, "Chromium is not installed: apt-get install chromium (Debian's package) to run the browser tests")
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(t.Context(),
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 1000),
	)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	// Start the browser, and keep the export's download out of the disk.
	deny := chromedp.Action[chromedp.Void](func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorDeny})
		return chromedp.Void{}, err
	})
	if err := chromedp.Do(ctx, deny); err != nil {
		t.Fatalf("starting Chromium (%s): %v", path, err)
	}
	return ctx
}

// waitText waits until the element's text contains want and returns it.
func waitText(t *testing.T, ctx context.Context, sel, want string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		if strings.Contains(text, want) {
			return text
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s says %q, want it to contain %q", sel, text, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBrowser drives the page in Chromium against the catalog example:
// the tools, the lookup form, the agent's view and its button, an invalid
// input told to be fixed, a replay, and an export that mediancheck
// -samples runs.
func TestBrowser(t *testing.T) {
	up := startCatalog(t)
	s, err := New(Config{URL: up.URL, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Listen("")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	ctx := chromium(t)

	form := chromedp.CSS(`#form input[name="orderId"]`)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(s.PageURL(l.Addr())),
		chromedp.WaitVisible(chromedp.CSS(`#tools button[data-tool="cancel_order"]`)),
		chromedp.Click(chromedp.CSS(`#tools button[data-tool="lookup_order"]`)),
		chromedp.WaitVisible(form),
		chromedp.SendKeys(form, "A-1001"),
		chromedp.Click(chromedp.CSS(`#p-verified`)),
	); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#tools", "high") // cancel_order's declared risk
	input, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#raw-input")))
	if err != nil || !strings.Contains(input, `"orderId": "A-1001"`) {
		t.Fatalf("the raw editor holds %q (%v)", input, err)
	}
	click(t, ctx, "#send")
	waitText(t, ctx, "#view-told", "The agent reads the result")
	text := waitText(t, ctx, "#view-text", `"orderId":"A-1001"`)
	if strings.Contains(text, "medianNavigateTo") {
		t.Errorf("the agent's text keeps the hint: %s", text)
	}
	waitText(t, ctx, "#view-button", "Open /orders/A-1001")
	href, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#view-button"), "href"))
	if err != nil || !strings.HasSuffix(href.Value, "/orders/A-1001") {
		t.Errorf("the button links to %q (%v)", href.Value, err)
	}
	first := waitText(t, ctx, "#answer-body", `"result"`)
	waitText(t, ctx, "#answer-status", "HTTP 200")
	waitText(t, ctx, "#curl", "median-signature: t=")

	// An empty order id: the schema error shows before sending, and the
	// agent is told to fix its input.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const i = document.querySelector('#form input[name="orderId"]'); i.value = ""; i.dispatchEvent(new Event("input")); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#problems", "/orderId")
	click(t, ctx, "#send")
	waitText(t, ctx, "#view-told", "fix its input")
	waitText(t, ctx, "#view-text", "orderId")

	// Back to the first call, and replay it: the same answer.
	click(t, ctx, `#history li[data-n="1"] button`)
	waitText(t, ctx, "#answer-title", "#1 lookup_order")
	if back, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#raw-input"))); err != nil || !strings.Contains(back, "A-1001") {
		t.Errorf("the editor holds %q after going back to call #1 (%v)", back, err)
	}
	click(t, ctx, "#replay")
	waitText(t, ctx, "#answer-title", "replay of #1")
	if again := waitText(t, ctx, "#answer-body", `"result"`); again != first {
		t.Errorf("the replay answered\n%s\nthe call\n%s", again, first)
	}
	waitText(t, ctx, "#history", "(replay)")

	if path := os.Getenv("MEDIAN_INSPECTOR_SCREENSHOT"); path != "" {
		click(t, ctx, `#history li[data-n="1"] button`)
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.scrollTo(0, 0); true`)); err != nil {
			t.Fatal(err)
		}
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The export round-trips through mediancheck -samples.
	click(t, ctx, "#export")
	exported := waitText(t, ctx, "#export-text", `"lookup_order"`)
	samples := filepath.Join(t.TempDir(), "samples.json")
	if err := os.WriteFile(samples, []byte(exported), 0o600); err != nil {
		t.Fatal(err)
	}
	out := mediancheck(t, "-url", up.URL, "-samples", samples)
	if !strings.Contains(out, "passed, 0 failed") || !strings.Contains(out, "PASS execution/result") || !strings.Contains(out, "PASS input/invalid") {
		t.Errorf("mediancheck -samples with the export:\n%s", out)
	}
}

// click clicks the element sel selects.
func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
}

// mediancheck builds and runs the command with args and testKey, and
// returns what it printed; it fails the test when the command fails.
func mediancheck(t *testing.T, args ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mediancheck")
	build := exec.Command("go", "build", "-o", bin, "github.com/median-go/median/conformance/cmd/mediancheck")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "MEDIAN_KEY="+testKey)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mediancheck %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestBrowserBadAnswers: a schema the form cannot show leaves the raw
// editor and says why; a 4 MiB answer is shown cut and the page stays
// usable.
func TestBrowserBadAnswers(t *testing.T) {
	huge := `{"result":{"t":"` + strings.Repeat("x", 4<<20) + `"}}`
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, `{"tools":[{"name":"odd","risk":"low","description":"A schema with a reference.","inputSchema":{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"string"}}}}]}`)
			return
		}
		_, _ = io.WriteString(w, huge)
	}))
	p := startInspector(t, up.URL, 0)
	ctx := chromium(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(p.URL+"/?token="+p.s.Token())); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#form-problem", `the form cannot show "$ref"`)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const r = document.getElementById("raw-input"); r.value = '{"a":"b"}'; r.dispatchEvent(new Event("input")); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	click(t, ctx, "#send")
	waitText(t, ctx, "#answer-status", "4194323 bytes (showing the first 65536 bytes)")
	waitText(t, ctx, "#view-notes", "the agent reads the first 4,000 of 4,194,312 characters")
	body := waitText(t, ctx, "#answer-body", "… cut")
	if len(body) > 70<<10 {
		t.Errorf("the page holds %d bytes of the answer", len(body))
	}
	click(t, ctx, "#send") // still usable
	waitText(t, ctx, "#answer-title", "#2 odd")
}

// TestBrowserForm: the form built from a richer schema (enum, integer
// with bounds, boolean, an array of strings, a nested object) writes the
// input the raw editor shows, and the raw editor fills the form.
func TestBrowserForm(t *testing.T) {
	var got struct {
		sync.Mutex
		body string
	}
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, `{"tools":[{"name":"plan","risk":"medium","description":"Changes a plan.","inputSchema":{"type":"object","required":["plan"],"properties":{
				"plan":{"type":"string","enum":["free","pro"],"description":"The plan to move to."},
				"seats":{"type":"integer","minimum":1,"maximum":50},
				"annual":{"type":"boolean"},
				"tags":{"type":"array","items":{"type":"string","maxLength":8}},
				"address":{"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]{5}$"}}}}}}]}`)
			return
		}
		b, _ := io.ReadAll(r.Body)
		got.Lock()
		got.body = string(b)
		got.Unlock()
		_, _ = io.WriteString(w, `{"result":{"ok":true}}`)
	}))
	p := startInspector(t, up.URL, 0)
	ctx := chromium(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(p.URL+"/?token="+p.s.Token()),
		chromedp.WaitVisible(chromedp.CSS(`#form select[name="plan"]`)),
	); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#form", "The plan to move to.")
	waitText(t, ctx, "#form", "from 1 to 50")
	waitText(t, ctx, "#form", "pattern ^[0-9]{5}$")
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const set = (sel, v, ev) => { const e = document.querySelector(sel); e.value = v; e.dispatchEvent(new Event(ev)); };
		set('#form select[name="plan"]', "pro", "change");
		set('#form input[name="seats"]', "60", "input");
		const annual = document.querySelector('#form input[name="annual"]'); annual.checked = true; annual.dispatchEvent(new Event("change"));
		[...document.querySelectorAll("#form button")].find((b) => b.textContent === "Add an item").click();
		set('#form input[name="item"]', "vip", "input");
		set('#form input[name="zip"]', "123", "input");
		return true;
	})()`)); err != nil {
		t.Fatal(err)
	}
	want := `{"plan":"pro","seats":60,"annual":true,"tags":["vip"],"address":{"zip":"123"}}`
	deadline := time.Now().Add(10 * time.Second)
	for {
		raw, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#raw-input")))
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		_ = json.Compact(&compact, []byte(raw))
		if compact.String() == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the raw editor holds %s, want %s", raw, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Both problems are shown before sending; the call can still be sent.
	waitText(t, ctx, "#problems", "/seats")
	waitText(t, ctx, "#problems", "/address/zip")
	click(t, ctx, "#send")
	waitText(t, ctx, "#view-told", "The agent reads the result")
	got.Lock()
	if !strings.Contains(got.body, `"input":{"plan":"pro","seats":60,"annual":true,"tags":["vip"],"address":{"zip":"123"}}`) || !strings.Contains(got.body, `"risk":"medium"`) {
		t.Errorf("the endpoint received %s", got.body)
	}
	got.Unlock()

	// The raw editor fills the form.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const r = document.getElementById("raw-input"); r.value = '{"plan":"free","seats":3}'; r.dispatchEvent(new Event("input")); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	seats, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#form input[name="seats"]`)))
	if err != nil || seats != "3" {
		t.Errorf("seats %q (%v) after editing the raw JSON", seats, err)
	}
}

// TestBrowserReadsWhatHappened: the page's first load, with no history
// yet, shows no error; a result without hints shows no widget button
// (not even an empty one); and the history names a refusal by its reason,
// not as a plain result.
func TestBrowserReadsWhatHappened(t *testing.T) {
	up := startCatalog(t)
	p := startInspector(t, up.URL, 0)
	ctx := chromium(t)
	form := chromedp.CSS(`#form input[name="orderId"]`)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(p.URL+"/?token="+p.s.Token()),
		chromedp.WaitVisible(chromedp.CSS(`#tools button[data-tool="lookup_order"]`)),
		chromedp.WaitEnabled(chromedp.CSS("#reload")), // the first load, tools and history, is over
	); err != nil {
		t.Fatal(err)
	}
	banner, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("banner").hidden ? "" : document.getElementById("banner").textContent`))
	if err != nil || banner != "" {
		t.Errorf("the first load shows the banner %q (%v)", banner, err)
	}

	// An unverified visitor: lookup_order refuses, with no hint.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#tools button[data-tool="lookup_order"]`)),
		chromedp.WaitVisible(form),
		chromedp.SendKeys(form, "A-1001"),
	); err != nil {
		t.Fatal(err)
	}
	click(t, ctx, "#send")
	waitText(t, ctx, "#view-told", "(a refusal: not_signed_in)")
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const b = document.getElementById("view-button"); return getComputedStyle(b).display + " " + b.getBoundingClientRect().width; })()`))
	if err != nil || shown != "none 0" {
		t.Errorf("the widget button of a result without hints: display and width %q (%v), want none 0", shown, err)
	}
	line := waitText(t, ctx, `#history li[data-n="1"]`, "lookup_order 200 refused not_signed_in")
	if strings.Contains(line, "result") {
		t.Errorf("the history reads the refusal as %q", line)
	}
}
