package recipes_test

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// notRecipes are the sections of docs/MOUNTING.md whose Go code is not a
// recipe of this module, each with the reason.
var notRecipes = map[string]string{
	"lambda":          "Lambda has an adapter of its own (lambdamedian), tested in the library",
	"any-other-stack": "a sketch of an adapter against an imaginary framework's API",
}

// TestMountingDocMatchesRecipes holds docs/MOUNTING.md to the programs:
// every Go code block in a stack's section appears, up to white space, in
// a Go file of that stack's directory here (the section's anchor without
// dashes: #go-zero is gozero/), and every recipe has a section with code.
func TestMountingDocMatchesRecipes(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "MOUNTING.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := goBlocks(string(doc))
	if len(sections) == 0 {
		t.Fatal("docs/MOUNTING.md: no section with an anchor and Go code found; has its layout changed?")
	}
	for _, problem := range checkDoc(sections, readRecipes(t)) {
		t.Error(problem)
	}
}

// TestCheckDocFindsDrift proves the check can fail: a block changed in the
// doc, a section without a recipe and a recipe without a section are each
// reported.
func TestCheckDocFindsDrift(t *testing.T) {
	programs := map[string][]string{"gorillamux": {"r := mux.NewRouter()\n\tr.Handle(\"/api/median\", h)\n"}}
	ok := goBlocks("<a id=\"gorillamux\"></a>\n## gorilla/mux\n\n```go\nr := mux.NewRouter()\nr.Handle(\"/api/median\",  h)\n```\n")
	if problems := checkDoc(ok, programs); len(problems) != 0 {
		t.Fatalf("the same code with other white space: %v", problems)
	}
	drifted := goBlocks("<a id=\"gorillamux\"></a>\n## gorilla/mux\n\n```go\nr := mux.NewRouter()\nr.Handle(\"/api/median\", h).Methods(\"POST\")\n```\n")
	if problems := checkDoc(drifted, programs); len(problems) != 1 {
		t.Errorf("a drifted block: want 1 problem, got %v", problems)
	}
	unknown := goBlocks("<a id=\"newstack\"></a>\n## New stack\n\n```go\nx := 1\n```\n")
	if problems := checkDoc(unknown, programs); len(problems) != 2 {
		t.Errorf("a section without a recipe, and a recipe without a section: want 2 problems, got %v", problems)
	}
}

// fence matches a Go code block; anchor an anchor line.
var (
	fence  = regexp.MustCompile("(?ms)^```go\n(.*?)^```")
	anchor = regexp.MustCompile(`(?m)^<a id="([^"]+)"></a>$`)
)

// goBlocks returns the Go code blocks of each anchored section of doc.
func goBlocks(doc string) map[string][]string {
	sections := map[string][]string{}
	locs := anchor.FindAllStringSubmatchIndex(doc, -1)
	for i, loc := range locs {
		end := len(doc)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		id := doc[loc[2]:loc[3]]
		for _, m := range fence.FindAllStringSubmatch(doc[loc[1]:end], -1) {
			sections[id] = append(sections[id], m[1])
		}
	}
	return sections
}

// readRecipes returns the Go files (tests left out) of each directory here
// that holds a program, by directory name.
func readRecipes(t *testing.T) map[string][]string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	programs := map[string][]string{}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "internal" {
			continue
		}
		files, err := filepath.Glob(filepath.Join(e.Name(), "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			programs[e.Name()] = append(programs[e.Name()], string(b))
		}
	}
	return programs
}

// checkDoc returns what differs between the doc's sections and the recipes'
// programs.
func checkDoc(sections map[string][]string, programs map[string][]string) []string {
	var problems []string
	for _, id := range slices.Sorted(maps.Keys(sections)) {
		if _, ok := notRecipes[id]; ok {
			continue
		}
		dir := strings.ReplaceAll(id, "-", "")
		files, ok := programs[dir]
		if !ok {
			problems = append(problems, "docs/MOUNTING.md#"+id+" has Go code but recipes/"+dir+"/ holds no program: add the recipe, or list the section in notRecipes with the reason")
			continue
		}
		for _, block := range sections[id] {
			if !slices.ContainsFunc(files, func(f string) bool { return strings.Contains(squash(f), squash(block)) }) {
				problems = append(problems, "docs/MOUNTING.md#"+id+": this block is not in recipes/"+dir+"/ (white space aside); make the doc and the program say the same:\n"+block)
			}
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(programs)) {
		documented := false
		for id := range sections {
			documented = documented || strings.ReplaceAll(id, "-", "") == dir
		}
		if !documented {
			problems = append(problems, "recipes/"+dir+"/ has no section with Go code in docs/MOUNTING.md (anchor <a id=\""+dir+"\">)")
		}
	}
	return problems
}

// squash collapses every run of white space to one space.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }
