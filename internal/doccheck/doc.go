// Package doccheck holds no code, only a test: every "§" reference in the
// repository's Go and Markdown files (code comments, test names,
// conformance case sections that mediancheck prints, the docs) must name a
// section that has a heading in docs/PROTOCOL.md, and no file may point at
// the contract's old home outside the repository.
//
// Run it with:
//
//	go test ./internal/doccheck
//
// When it fails, it names each file:line whose reference does not resolve.
// Fix the reference, or add the missing section to docs/PROTOCOL.md; never
// renumber an existing section, since code and conformance reports cite them.
package doccheck
