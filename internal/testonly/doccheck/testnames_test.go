package doccheck

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// citedTestPattern matches a test, fuzz target, benchmark or example named
// in backquotes in a Markdown file, such as `TestDecodeBodyNamesExactly`:
// the docs cite them as the evidence for what they say.
var citedTestPattern = regexp.MustCompile("`((?:Test|Fuzz|Benchmark|Example)[A-Z][A-Za-z0-9_]*)`")

// testFuncPattern matches the declaration of such a function in Go.
var testFuncPattern = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark|Example)[A-Z][A-Za-z0-9_]*)\(`)

// missingCitedTests returns "path: Name" for each test a Markdown file
// cites that no Go file declares.
func missingCitedTests(files map[string]string) []string {
	declared := map[string]bool{}
	for p, text := range files {
		if strings.HasSuffix(p, ".go") {
			for _, m := range testFuncPattern.FindAllStringSubmatch(text, -1) {
				declared[m[1]] = true
			}
		}
	}
	var out []string
	for p, text := range files {
		if !strings.HasSuffix(p, ".md") {
			continue
		}
		for _, m := range citedTestPattern.FindAllStringSubmatch(text, -1) {
			if !declared[m[1]] {
				out = append(out, p+": "+m[1])
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestDocsCiteTestsThatExist: a test the docs give as evidence (the threat
// table of docs/SECURITY.md, the benchmarks of docs/PERFORMANCE.md) exists,
// so a renamed or deleted test cannot leave a claim without its proof.
func TestDocsCiteTestsThatExist(t *testing.T) {
	files := repoFiles(t, repoRoot(t))
	cited := 0
	for p, text := range files {
		if strings.HasSuffix(p, ".md") {
			cited += len(citedTestPattern.FindAllString(text, -1))
		}
	}
	if cited < 20 {
		t.Fatalf("found only %d cited tests in the docs; is the walk reading them?", cited)
	}
	for _, m := range missingCitedTests(files) {
		t.Errorf("%s is cited but no Go file declares it: rename the citation or restore the test", m)
	}
}

func TestMissingCitedTests(t *testing.T) {
	files := map[string]string{
		"a_test.go": "package a\n\nfunc TestReal(t *testing.T) {}\nfunc FuzzReal(f *testing.F) {}\n",
		"doc.md":    "Proof: `TestReal`, `FuzzReal`, `TestGone`; `TestGone` again; not a test: `Testing`.",
	}
	got := missingCitedTests(files)
	if !slices.Equal(got, []string{"doc.md: TestGone"}) {
		t.Errorf("missingCitedTests = %q, want [doc.md: TestGone]", got)
	}
}
