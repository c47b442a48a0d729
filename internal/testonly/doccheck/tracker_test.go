package doccheck

import (
	"fmt"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// trackerPattern matches a comment that cites the project's tracker by
// number: the word issue, ticket or bug (any case, singular or plural)
// followed by a number, with or without "#".
// A comment says what the code does and why; the tracker's history goes to
// CHANGELOG.md and commit messages.
var trackerPattern = regexp.MustCompile(`(?i)\b(issues?|tickets?|bugs?)\s*#?\d+`)

// trackerCitations returns "path:line: text" for each comment in the Go
// source src that cites the tracker by number. String literals are not
// comments and do not count.
func trackerCitations(path, src string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, group := range f.Comments {
		for _, c := range group.List {
			for i, line := range strings.Split(c.Text, "\n") {
				if m := trackerPattern.FindString(line); m != "" {
					out = append(out, fmt.Sprintf("%s:%d: the comment cites the tracker (%q): say what the code does instead", path, fset.Position(c.Pos()).Line+i, m))
				}
			}
		}
	}
	return out, nil
}

// TestNoCommentCitesTheTracker walks the repository's Go files.
func TestNoCommentCitesTheTracker(t *testing.T) {
	files := repoFiles(t, repoRoot(t))
	var paths []string
	for p := range files {
		if strings.HasSuffix(p, ".go") {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	if len(paths) < 100 {
		t.Fatalf("found only %d Go files; is the walk reading the repository?", len(paths))
	}
	for _, p := range paths {
		found, err := trackerCitations(p, files[p])
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		for _, f := range found {
			t.Error(f)
		}
	}
}

func TestTrackerCitations(t *testing.T) {
	const src = `package p

// Close ends the run (issue 3).
func Close() {}

/* Open starts it;
   see Issue #12 for why. */
func Open() {}

// The store keeps 1,024 issues of the log; a bug here loses answers.
var s = "issue 17 in a string is not a comment"

func f() {
	_ = 1 // ticket 4, item 5
}
`
	got, err := trackerCitations("p.go", src)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p.go:3:", "p.go:7:", "p.go:14:"}
	if len(got) != len(want) {
		t.Fatalf("trackerCitations = %q, want lines %v", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("citation %d = %q, want it on %s", i, got[i], want[i])
		}
	}
}
