package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strconv"
	"strings"
)

// mutant is one change to one file: the bytes [start,end) of the source
// are replaced by repl.
type mutant struct {
	ID      int    `json:"id"`
	File    string `json:"file"` // slash path from the module root
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Kind    string `json:"kind"`
	Desc    string `json:"desc"` // what changed, e.g. "`<` → `<=`"
	start   int
	end     int
	repl    string
	node    ast.Node    // the node the mutation changes
	to      token.Token // the operator it becomes (operators)
	inConst bool        // inside a constant declaration (no run-time switch there)
	schema  bool        // switched at run time in the one build (else built on its own)
}

// apply returns src with m applied.
func (m mutant) apply(src []byte) []byte {
	out := make([]byte, 0, len(src)+len(m.repl))
	out = append(out, src[:m.start]...)
	out = append(out, m.repl...)
	return append(out, src[m.end:]...)
}

// operator mutations: each operator becomes each of these, with the kind
// named in the report.
var binaryMutations = map[token.Token][]struct {
	to   token.Token
	kind string
}{
	token.LSS:  {{token.LEQ, "boundary"}, {token.GEQ, "negation"}},
	token.LEQ:  {{token.LSS, "boundary"}, {token.GTR, "negation"}},
	token.GTR:  {{token.GEQ, "boundary"}, {token.LEQ, "negation"}},
	token.GEQ:  {{token.GTR, "boundary"}, {token.LSS, "negation"}},
	token.EQL:  {{token.NEQ, "negation"}},
	token.NEQ:  {{token.EQL, "negation"}},
	token.ADD:  {{token.SUB, "arithmetic"}},
	token.SUB:  {{token.ADD, "arithmetic"}},
	token.MUL:  {{token.QUO, "arithmetic"}},
	token.QUO:  {{token.MUL, "arithmetic"}},
	token.REM:  {{token.MUL, "arithmetic"}},
	token.LAND: {{token.LOR, "boolean"}},
	token.LOR:  {{token.LAND, "boolean"}},
}

var assignMutations = map[token.Token]token.Token{
	token.ADD_ASSIGN: token.SUB_ASSIGN,
	token.SUB_ASSIGN: token.ADD_ASSIGN,
	token.MUL_ASSIGN: token.QUO_ASSIGN,
	token.QUO_ASSIGN: token.MUL_ASSIGN,
}

// unsafeToDrop are calls whose removal only deadlocks or leaks (a timeout
// says nothing about the tests), and log calls, whose lines the log tests
// elsewhere check by text.
var unsafeToDrop = map[string]bool{
	"Lock": true, "Unlock": true, "RLock": true, "RUnlock": true,
	"Wait": true, "Done": true, "Add": true, "Signal": true, "Broadcast": true,
	"Debug": true, "Info": true, "Warn": true, "Error": true,
	"DebugContext": true, "InfoContext": true, "WarnContext": true, "ErrorContext": true,
	"Log": true, "LogAttrs": true,
}

// generate parses src (the file rel) and returns its mutants in source
// order.
func generate(rel string, src []byte) ([]mutant, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution|parser.ParseComments)
	if err != nil {
		return nil, err
	}
	return mutantsOf(fset, f, rel, src), nil
}

// mutantsOf returns the mutants of the parsed file f (src, the file rel),
// in source order.
func mutantsOf(fset *token.FileSet, f *ast.File, rel string, src []byte) []mutant {
	var out []mutant
	var node ast.Node
	var to token.Token
	inConst := map[ast.Node]bool{}
	add := func(pos token.Pos, end token.Pos, repl, kind, desc string) {
		p := fset.Position(pos)
		out = append(out, mutant{
			File: rel, Line: p.Line, Col: p.Column, Kind: kind, Desc: desc,
			start: fset.Position(pos).Offset, end: fset.Position(end).Offset, repl: repl,
			node: node, to: to, inConst: inConst[node],
		})
	}
	text := func(n ast.Node) string {
		return string(src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])
	}
	oneLine := func(s string) string {
		s = strings.Join(strings.Fields(s), " ")
		if len(s) > 60 {
			s = s[:57] + "..."
		}
		return s
	}
	// Array lengths are types: changing one only stops the build.
	skip := map[ast.Node]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		node, to = n, token.ILLEGAL
		switch n := n.(type) {
		case *ast.GenDecl:
			if n.Tok == token.IMPORT {
				return false
			}
			if n.Tok == token.CONST {
				ast.Inspect(n, func(c ast.Node) bool { inConst[c] = true; return true })
			}
		case *ast.ArrayType:
			if n.Len != nil {
				skip[n.Len] = true
			}
		case *ast.BinaryExpr:
			if isStringLit(n.X) || isStringLit(n.Y) {
				break // string concatenation
			}
			for _, m := range binaryMutations[n.Op] {
				to = m.to
				add(n.OpPos, n.OpPos+token.Pos(len(n.Op.String())), m.to.String(), m.kind,
					fmt.Sprintf("`%s` → `%s`", n.Op, m.to))
			}
		case *ast.AssignStmt:
			if t, ok := assignMutations[n.Tok]; ok {
				to = t
				add(n.TokPos, n.TokPos+token.Pos(len(n.Tok.String())), to.String(), "arithmetic",
					fmt.Sprintf("`%s` → `%s`", n.Tok, to))
			}
		case *ast.IncDecStmt:
			to = token.DEC
			if n.Tok == token.DEC {
				to = token.INC
			}
			add(n.TokPos, n.TokPos+2, to.String(), "incdec", fmt.Sprintf("`%s` → `%s`", n.Tok, to))
		case *ast.UnaryExpr:
			switch n.Op {
			case token.NOT:
				add(n.OpPos, n.OpPos+1, "", "negation", fmt.Sprintf("`!` removed from `%s`", oneLine(text(n))))
			}
		case *ast.BasicLit:
			if n.Kind != token.INT || skip[n] {
				break
			}
			v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
			if err != nil {
				break
			}
			for _, d := range []int64{+1, -1} {
				to = token.INC
				if d < 0 {
					to = token.DEC
				}
				w := v + d
				if w < 0 {
					continue // a negative literal is another expression
				}
				repl := strconv.FormatInt(w, 10)
				if strings.HasPrefix(strings.ToLower(n.Value), "0x") {
					repl = "0x" + strconv.FormatInt(w, 16)
				}
				add(n.Pos(), n.End(), repl, "constant", fmt.Sprintf("`%s` → `%s`", n.Value, repl))
			}
		case *ast.ExprStmt:
			call, ok := n.X.(*ast.CallExpr)
			if !ok || unsafeToDrop[calleeName(call)] || isPanic(call) {
				break
			}
			add(n.Pos(), n.End(), "", "statement", fmt.Sprintf("call dropped: `%s`", oneLine(text(n))))
		case *ast.ReturnStmt:
			for _, r := range n.Results {
				if id, ok := r.(*ast.Ident); ok && id.Name == "err" {
					node = r
					add(r.Pos(), r.End(), "nil", "error", "returned `err` → `nil`")
				}
			}
		case *ast.IfStmt:
			// An early return dropped: the body that ends in a return is
			// emptied (the condition stays, so its variables stay used).
			if len(n.Body.List) > 0 {
				if _, ok := n.Body.List[len(n.Body.List)-1].(*ast.ReturnStmt); ok {
					add(n.Body.Lbrace+1, n.Body.Rbrace, "", "statement",
						fmt.Sprintf("early return dropped: body of `if %s` emptied", oneLine(text(n.Cond))))
				}
			}
		}
		return true
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

func isStringLit(e ast.Expr) bool {
	l, ok := e.(*ast.BasicLit)
	return ok && l.Kind == token.STRING
}

func calleeName(c *ast.CallExpr) string {
	switch f := c.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

func isPanic(c *ast.CallExpr) bool {
	id, ok := c.Fun.(*ast.Ident)
	return ok && id.Name == "panic"
}
