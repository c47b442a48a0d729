package doccheck

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// protocolDoc is the contract, relative to the repository root.
const protocolDoc = "docs/PROTOCOL.md"

// sectionSign is "§", written as an escape so that this file's own test
// strings are not read as references when the repository is walked.
const sectionSign = "\u00a7"

// oldHome is the contract's path outside the repository, which no file may
// mention any more. Built in two parts for the same reason as sectionSign.
const oldHome = "shared" + "/PROTOCOL.md"

// refPattern matches a reference such as "§8", "§1.2" or "§ 3.3"; a
// trailing dot ending a sentence is not part of the number.
var refPattern = regexp.MustCompile(sectionSign + `\s?(\d+(?:\.\d+)*)`)

// headingPattern matches a Markdown heading that starts with a section
// number: "## 1. Requests", "### 1.2 The key".
var headingPattern = regexp.MustCompile(`^#{1,6}\s+(\d+(?:\.\d+)*)\.?(?:\s|$)`)

// reference is one "§" reference found in a file.
type reference struct {
	line    int    // 1-based
	section string // "1.2"
}

// references returns every "§" reference in text with its line.
func references(text string) []reference {
	var out []reference
	for i, line := range strings.Split(text, "\n") {
		for _, m := range refPattern.FindAllStringSubmatch(line, -1) {
			out = append(out, reference{line: i + 1, section: m[1]})
		}
	}
	return out
}

// headings returns the section numbers that have a heading in text.
func headings(text string) map[string]bool {
	out := make(map[string]bool)
	for _, line := range strings.Split(text, "\n") {
		if m := headingPattern.FindStringSubmatch(line); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

// problems checks the files (path -> content) against the sections of the
// contract and returns one line per problem, "path:line: what to fix", in
// path order.
func problems(files map[string]string, sections map[string]bool) []string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var out []string
	for _, p := range paths {
		text := files[p]
		for _, r := range references(text) {
			if !sections[r.section] {
				out = append(out, fmt.Sprintf("%s:%d: %s%s has no heading in %s; fix the reference or add the section", p, r.line, sectionSign, r.section, protocolDoc))
			}
		}
		for i, line := range strings.Split(text, "\n") {
			if strings.Contains(line, oldHome) {
				out = append(out, fmt.Sprintf("%s:%d: mentions %s, which is outside the repository; point at %s instead", p, i+1, oldHome, protocolDoc))
			}
		}
	}
	return out
}

// repoRoot returns the directory holding go.mod, above the test's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// repoFiles reads every .go and .md file under root, skipping hidden
// directories (.git, .ci). Keys are slash-separated paths relative to root.
func repoFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	files := make(map[string]string)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestEveryReferenceResolves walks the repository: every "§" reference
// must name a section of docs/PROTOCOL.md, and no file may mention the
// contract's old path.
func TestEveryReferenceResolves(t *testing.T) {
	root := repoRoot(t)
	files := repoFiles(t, root)
	doc, ok := files[protocolDoc]
	if !ok {
		t.Fatalf("%s is missing: it is the contract every %s reference points at", protocolDoc, sectionSign)
	}
	sections := headings(doc)
	// The sections code and conformance cases cite; losing one is a bug
	// even when nothing cites it today.
	for _, s := range []string{"1", "1.1", "1.2", "2", "3", "3.1", "3.2", "3.3", "4", "5", "6", "7", "8", "9"} {
		if !sections[s] {
			t.Errorf("%s has no heading for %s%s; keep the stable section numbers", protocolDoc, sectionSign, s)
		}
	}
	refs := 0
	for _, text := range files {
		refs += len(references(text))
	}
	if refs < 50 {
		// The repository cites the contract about a hundred times; far fewer
		// means the walk or the pattern broke, not that the code changed.
		t.Errorf("found only %d %s references in %d files; is the walk reading the repository?", refs, sectionSign, len(files))
	}
	for _, p := range problems(files, sections) {
		t.Error(p)
	}
}

// TestProblemsFindsBadReferences: the checker itself must catch a
// reference to a missing section and a mention of the old path.
func TestProblemsFindsBadReferences(t *testing.T) {
	doc := "# Contract\n## 1. Requests\n### 1.2 The key\n## 3. Answers\n### 3.3 Sizes and time\n#### 8 Replay\nnot a heading 4.\n## 10Bad\n"
	sections := headings(doc)
	for _, want := range []string{"1", "1.2", "3", "3.3", "8"} {
		if !sections[want] {
			t.Errorf("headings missed %q: got %v", want, sections)
		}
	}
	for _, unwanted := range []string{"4", "10"} {
		if sections[unwanted] {
			t.Errorf("headings took %q from a line that is not a numbered heading", unwanted)
		}
	}

	file := "// Risk (PROTOCOL.md " + sectionSign + "8).\n" +
		"// see " + sectionSign + "1.2 and (" + sectionSign + "3.3).\n" +
		"// the status " + sectionSign + "4.7 gives, and " + sectionSign + "3.\n" +
		"// the law: ../" + oldHome + "\n"
	got := references(file)
	want := []reference{{1, "8"}, {2, "1.2"}, {2, "3.3"}, {3, "4.7"}, {3, "3"}}
	if !slices.Equal(got, want) {
		t.Errorf("references = %v, want %v", got, want)
	}

	got2 := problems(map[string]string{"a/b.go": file}, sections)
	if len(got2) != 2 ||
		!strings.HasPrefix(got2[0], "a/b.go:3: "+sectionSign+"4.7 has no heading") ||
		!strings.HasPrefix(got2[1], "a/b.go:4: mentions "+oldHome) {
		t.Errorf("problems = %q, want the bad reference on line 3 and the old path on line 4", got2)
	}
	if p := problems(map[string]string{"ok.md": "See " + sectionSign + "1.2."}, sections); len(p) != 0 {
		t.Errorf("a good reference was reported: %q", p)
	}
}

// maxReadme is the README's budget: a front door that fits on a screen or
// three; evidence and reference go to docs/.
const maxReadme = 12_000

// TestReadmeStaysShort keeps README.md within its budget and pointing at
// the docs that hold the rest.
func TestReadmeStaysShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > maxReadme {
		t.Errorf("README.md is %d bytes, over the %d-byte budget: move detail to docs/", len(b), maxReadme)
	}
	for _, doc := range []string{"docs/PROTOCOL.md", "docs/TOOLS.md", "docs/SECURITY.md", "docs/PERFORMANCE.md"} {
		if !strings.Contains(string(b), "("+doc+")") {
			t.Errorf("README.md does not link %s", doc)
		}
		if _, err := os.Stat(filepath.Join(repoRoot(t), doc)); err != nil {
			t.Errorf("README.md links %s, which is missing", doc)
		}
	}
}
