package conformance

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/median-go/median/internal/testonly/testsupport"
)

// TestHintsLinkAnchorsOfMountingDoc checks that every anchor a hint links
// is a heading (or an explicit anchor) of docs/MOUNTING.md, as GitHub
// renders its anchors, so that no failure points at a recipe that moved.
func TestHintsLinkAnchorsOfMountingDoc(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", mountingDoc))
	if os.IsNotExist(err) {
		testsupport.Missing(t, mountingDoc+" is not written yet: the hints link its recipes")
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	anchors := mountingAnchors(string(doc))
	x := &roundTrip{method: http.MethodPost, header: http.Header{}, status: http.StatusTeapot}
	linked := map[string]bool{}
	for _, h := range hints {
		for _, m := range regexp.MustCompile(regexp.QuoteMeta(mountingDoc)+`#([a-z0-9-]+)`).FindAllStringSubmatch(h.text(x), -1) {
			linked[m[1]] = true
		}
	}
	if len(linked) < 9 {
		t.Fatalf("the hints link %d anchors, fewer than the nine recipes: the check is broken", len(linked))
	}
	for a := range linked {
		if !anchors[a] {
			t.Errorf("a hint links %s#%s, which is no heading or anchor there", mountingDoc, a)
		}
	}
}

// mountingAnchors returns the anchors of a Markdown document: GitHub's
// anchor of each heading (lower case, punctuation but - and _ dropped,
// spaces as -) and the ids of explicit <a id="…"> or <a name="…">.
func mountingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	for line := range strings.Lines(doc) {
		line = strings.TrimSpace(line)
		if title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") {
			var b strings.Builder
			for _, r := range strings.ToLower(strings.TrimSpace(title)) {
				switch {
				case r == ' ':
					b.WriteRune('-')
				case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
					b.WriteRune(r)
				}
			}
			anchors[b.String()] = true
		}
		for _, m := range regexp.MustCompile(`<a (?:id|name)="([^"]+)"`).FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
	}
	return anchors
}

// TestMountingAnchors checks the anchor rule on headings like the recipes'.
func TestMountingAnchors(t *testing.T) {
	got := mountingAnchors("# Mounting\n## What any mount must do\n## gorilla/mux\n### go-zero\n## Any other stack\ntext # not a heading\n<a id=\"lambda\"></a>\n")
	for _, want := range []string{"mounting", "what-any-mount-must-do", "gorillamux", "go-zero", "any-other-stack", "lambda"} {
		if !got[want] {
			t.Errorf("anchor %q missing from %v", want, got)
		}
	}
	if got["not-a-heading"] || len(got) != 6 {
		t.Errorf("anchors %v", got)
	}
}
