// Package doccheck holds no code, only tests of the repository's text:
//   - every "§" reference in the Go and Markdown files (code comments, test
//     names, conformance case sections that mediancheck prints, the docs)
//     must name a section that has a heading in docs/PROTOCOL.md, and no
//     file may point at the contract's old home outside the repository;
//   - no Go comment cites the tracker by number (the history goes to
//     CHANGELOG.md);
//   - every test, fuzz target, benchmark or example a Markdown file names
//     as evidence (`TestX`) is declared in a Go file;
//   - README.md stays under its byte budget, opens with a whole Go program
//     that builds and answers a signed call when run, and gives the test
//     command .ci/run runs.
//
// Run it with:
//
//	go test ./internal/testonly/doccheck
//
// When it fails, it names each file:line whose reference does not resolve.
// Fix the reference, or add the missing section to docs/PROTOCOL.md; never
// renumber an existing section, since code and conformance reports cite them.
//
// It is a harness of the module's own tests (internal/testonly): only test
// files and other harnesses import it, never shipped code
// (internal/testonly/surface checks).
package doccheck
