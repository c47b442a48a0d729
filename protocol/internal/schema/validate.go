package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Problem is one thing wrong with a tool input.
type Problem struct {
	// Path locates the offending value in dotted/bracket form, e.g. "orderId",
	// "items[2].sku" or "customer.address.zip"; "" is the input itself.
	// Keys that are not plain identifiers are written as ["some key"].
	Path string
	// Message is one plain English sentence fragment, e.g. "required" or
	// "expected number, got string".
	Message string
}

// text renders the problem as "path: message" (just the message at the root).
func (p Problem) text() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// ValidationError reports the problems found in a tool input, without
// duplicates: keys in another case, then keys given twice, then what the
// schema refuses, each kind sorted by path then message. A kind with very
// many problems lists the first ones and ends with "and N more …".
type ValidationError struct {
	Problems []Problem
}

// Error joins the problems with "; ", e.g.
// "amount: expected number, got string; orderId: required".
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.text()
	}
	return strings.Join(parts, "; ")
}

// Validate checks input, the raw JSON bytes of a tool's input object. It
// returns nil when the input is valid and a *ValidationError listing every
// problem otherwise. Numbers are compared exactly, never rounded through
// float64. An input the quick check finds valid for sure is accepted
// without a generic decode; every other input goes to the full validator,
// which writes the problems.
//
// A number written with more than 128 characters or with an exponent
// beyond ±400 is refused wherever it is, before any arithmetic. A key that
// differs from a declared property only in case is refused, and so is a key
// given twice in one object: a decoder could bind either past the schema.
// Strings must be valid UTF-8. A panic anywhere in validation is answered
// as a problem, never passed on.
func (s *Schema) Validate(input []byte) (err error) {
	if s == nil || s.compiled == nil {
		return errors.New("schema: Validate called on a nil or uncompiled *Schema; use Compile")
	}
	defer func() {
		if p := recover(); p != nil {
			err = &ValidationError{Problems: []Problem{{Path: "", Message: "the input could not be checked against the schema"}}}
		}
	}()
	if s.fast.fastCheck(input) {
		return nil
	}
	return s.validateFully(input)
}

// validateFully validates input with the full validator, after the key
// rules readJSON applies.
func (s *Schema) validateFully(input []byte) error {
	doc, keys, err := readJSON(input, s.doc)
	if err != nil {
		return &ValidationError{Problems: []Problem{{Path: "", Message: "input is not valid JSON: " + jsonErrorText(err)}}}
	}
	if len(keys.wild) > 0 {
		return &ValidationError{Problems: keys.wild} // the validator would spend seconds on them
	}
	probs := append(keys.folded, keys.twice...)
	err = s.compiled.Validate(doc)
	var ve *jsonschema.ValidationError
	switch {
	case err == nil:
	case errors.As(err, &ve):
		probs = append(probs, problemsFrom(ve, doc)...)
	default:
		probs = append(probs, Problem{Path: "", Message: stripURLs(err.Error())})
	}
	if len(probs) == 0 {
		return nil
	}
	// Each kind comes sorted, its count of problems left out last: keep
	// the kinds in that order rather than sort them together.
	return &ValidationError{Problems: probs}
}

// Limits on how a number may be written in an input. Beyond them a number
// is refused before any arithmetic: exact comparison of such numbers costs
// time and memory that grow with their size, and no tool needs them.
const (
	maxNumberLength   = 128 // characters of the literal
	maxNumberExponent = 400 // |exponent| after e or E (float64 ends near 1e308)
)

// numberProblem says what is wrong with the number literal n, or "".
func numberProblem(n []byte) string {
	if len(n) > maxNumberLength {
		return fmt.Sprintf("number out of range: it is written with more than %d characters", maxNumberLength)
	}
	for i, c := range n {
		if c != 'e' && c != 'E' {
			continue
		}
		exp, err := strconv.Atoi(string(bytes.TrimPrefix(n[i+1:], []byte("+"))))
		if err != nil || exp > maxNumberExponent || exp < -maxNumberExponent {
			return fmt.Sprintf("number out of range: its exponent is beyond ±%d", maxNumberExponent)
		}
		break
	}
	return ""
}

// maxReported bounds the problems of one kind listed in an answer: an input
// can hold a great many of them, and the answer must stay short.
const maxReported = 10

// problemList collects problems of one kind, keeping the first maxReported
// and counting the rest.
type problemList struct {
	out  []Problem
	more int
}

// add records a problem at the path that path returns (built only when kept).
func (l *problemList) add(path func() string, msg string) {
	if len(l.out) == maxReported {
		l.more++
		return
	}
	l.out = append(l.out, Problem{Path: path(), Message: msg})
}

// problems returns the kept problems sorted and, when some were left out,
// a last one that counts them; nil when there were none.
func (l *problemList) problems() []Problem {
	if len(l.out) == 0 {
		return nil
	}
	out := sortProblems(l.out)
	if l.more > 0 {
		out = append(out, Problem{Message: fmt.Sprintf("and %d more like these", l.more)})
	}
	return out
}

// jsonErrorText shortens a jsontext error to a phrase.
func jsonErrorText(err error) string {
	var se *jsontext.SyntacticError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	case errors.As(err, &se):
		return fmt.Sprintf("%v (at byte %d)", se.Err, se.ByteOffset)
	}
	return err.Error()
}

var englishPrinter = message.NewPrinter(language.English)

var urlPattern = regexp.MustCompile(`\s*'?"?[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'"]*'?"?`)

// problemsFrom flattens a validation error tree into sorted, de-duplicated
// problems. doc is the validated instance (used to tell array indices from
// object keys); it may be nil.
func problemsFrom(ve *jsonschema.ValidationError, doc any) []Problem {
	var out []Problem
	collect(ve, doc, &out)
	out = sortProblems(out)
	if len(out) > maxListed {
		more := len(out) - maxListed
		out = append(out[:maxListed:maxListed], Problem{Message: fmt.Sprintf("and %d more problems", more)})
	}
	return out
}

// maxListed bounds the problems the validator finds that an answer lists;
// an input can have a great many, and the answer must stay short.
const maxListed = 2 * maxReported

// sortProblems sorts problems by path then message and drops duplicates.
func sortProblems(out []Problem) []Problem {
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Message < out[j].Message
	})
	dedup := out[:0]
	for i, p := range out {
		if i > 0 && p == out[i-1] {
			continue
		}
		dedup = append(dedup, p)
	}
	return dedup
}

// collect appends one problem per leaf of the error tree.
func collect(ve *jsonschema.ValidationError, doc any, out *[]Problem) {
	path := formatPath(ve.InstanceLocation, doc)
	switch k := ve.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference, *kind.PropertyNames:
		if len(ve.Causes) > 0 {
			for _, c := range ve.Causes {
				collect(c, doc, out)
			}
			return
		}
	case *kind.Required:
		for _, m := range k.Missing {
			*out = append(*out, Problem{Path: joinKey(path, m), Message: "required"})
		}
		return
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			*out = append(*out, Problem{Path: joinKey(path, p), Message: fmt.Sprintf("unknown field %q", p)})
		}
		return
	case *kind.AnyOf, *kind.OneOf:
		if len(ve.Causes) > 0 {
			*out = append(*out, Problem{Path: path, Message: alternatives(ve, doc)})
			return
		}
	}
	*out = append(*out, Problem{Path: path, Message: leafMessage(ve.ErrorKind)})
}

// alternatives describes a failed anyOf/oneOf. When every alternative failed
// only on "type", the wanted types are merged ("expected string or null, got
// number"); otherwise each alternative's problems are listed.
func alternatives(ve *jsonschema.ValidationError, doc any) string {
	var wants []string
	got := ""
	allTypes := true
	var branches []string
	for _, c := range ve.Causes {
		var probs []Problem
		collect(c, doc, &probs)
		if t, ok := c.ErrorKind.(*kind.Type); ok && len(c.Causes) == 0 {
			wants = append(wants, t.Want...)
			got = t.Got
		} else {
			allTypes = false
		}
		base := formatPath(ve.InstanceLocation, doc)
		parts := make([]string, len(probs))
		for i, p := range probs {
			rel := strings.TrimPrefix(strings.TrimPrefix(p.Path, base), ".")
			if rel == "" || p.Path == base {
				parts[i] = p.Message
			} else {
				parts[i] = rel + ": " + p.Message
			}
		}
		branches = append(branches, strings.Join(parts, ", "))
	}
	if allTypes && len(wants) > 0 {
		return fmt.Sprintf("expected %s, got %s", strings.Join(uniq(wants), " or "), got)
	}
	if k, ok := ve.ErrorKind.(*kind.OneOf); ok && len(k.Subschemas) > 1 {
		return "must match exactly one allowed alternative, but matches several"
	}
	return "must match one of the allowed alternatives (" + strings.Join(branches, " | ") + ")"
}

// leafMessage renders one error kind as a short sentence fragment.
func leafMessage(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return fmt.Sprintf("expected %s, got %s", strings.Join(k.Want, " or "), k.Got)
	case *kind.Enum:
		vals := make([]string, len(k.Want))
		for i, v := range k.Want {
			vals[i] = jsonText(v)
		}
		if len(vals) == 1 {
			return "must be " + vals[0]
		}
		return "must be one of " + strings.Join(vals, ", ")
	case *kind.Const:
		return "must be " + jsonText(k.Want)
	case *kind.Format:
		return "must be a valid " + k.Want
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %s long", plural(k.Want, "character"))
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %s long", plural(k.Want, "character"))
	case *kind.Pattern:
		return "must match pattern " + k.Want
	case *kind.Minimum:
		return "must be >= " + ratText(k.Want)
	case *kind.Maximum:
		return "must be <= " + ratText(k.Want)
	case *kind.ExclusiveMinimum:
		return "must be > " + ratText(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be < " + ratText(k.Want)
	case *kind.MultipleOf:
		return "must be a multiple of " + ratText(k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("must contain at least %s", plural(k.Want, "item"))
	case *kind.MaxItems:
		return fmt.Sprintf("must contain at most %s", plural(k.Want, "item"))
	case *kind.MinProperties:
		return fmt.Sprintf("must contain at least %s", plural(k.Want, "field"))
	case *kind.MaxProperties:
		return fmt.Sprintf("must contain at most %s", plural(k.Want, "field"))
	case *kind.UniqueItems:
		return fmt.Sprintf("must not contain duplicates (items [%d] and [%d] are equal)", k.Duplicates[0], k.Duplicates[1])
	case *kind.FalseSchema:
		return "is not allowed"
	case *kind.Not:
		return "is not allowed (matches a forbidden shape)"
	case *kind.DependentRequired:
		return fmt.Sprintf("%s required when %q is present", quoteList(k.Missing), k.Prop)
	case *kind.Dependency:
		return fmt.Sprintf("%s required when %q is present", quoteList(k.Missing), k.Prop)
	}
	return stripURLs(k.LocalizedString(englishPrinter))
}

// formatPath renders a JSON instance location as "a.b[2].c". Tokens that
// index an array (per doc) are written as [n]; keys that are not plain
// identifiers are written as ["key"].
func formatPath(tokens []string, doc any) string {
	steps := make([]pathStep, len(tokens))
	cur := doc
	for i, tok := range tokens {
		cur, steps[i].index = step(cur, tok)
		steps[i].key = tok
	}
	return pathText(steps)
}

// PointerPath renders a JSON pointer into an input the way problems write
// paths ("lines[2].sku"). A pointer does not say whether a token of digits
// indexes an array: it is written as an index.
func PointerPath(p jsontext.Pointer) string {
	var steps []pathStep
	for tok := range p.Tokens() {
		_, err := strconv.ParseUint(tok, 10, 64)
		steps = append(steps, pathStep{key: tok, index: err == nil})
	}
	return pathText(steps)
}

// pathStep is one step of a path: an object key, or an array index
// written in decimal.
type pathStep struct {
	key   string
	index bool
}

// pathText renders a path as "a.b[2].c"; deep paths keep their first and
// last steps around an ellipsis.
func pathText(steps []pathStep) string {
	var sb strings.Builder
	for i, st := range steps {
		if len(steps) > maxPathTokens && i >= maxPathTokens/2 && i < len(steps)-maxPathTokens/2 {
			if i == maxPathTokens/2 {
				sb.WriteString("…") // deep inside: only the two ends are written
			}
			continue
		}
		if st.index {
			sb.WriteString("[" + st.key + "]")
		} else {
			sb.WriteString(keyText(st.key, sb.Len() == 0))
		}
	}
	return sb.String()
}

// step follows tok from cur, a value of doc, and reports whether tok
// indexed an array.
func step(cur any, tok string) (next any, index bool) {
	switch v := cur.(type) {
	case []any:
		if i, err := strconv.Atoi(tok); err == nil {
			if i >= 0 && i < len(v) {
				return v[i], true
			}
			return nil, true
		}
	case map[string]any:
		return v[tok], false
	}
	return nil, false
}

// maxKeyText bounds the bytes of one key written in a path.
const maxKeyText = 64

// maxPathTokens bounds the steps written in a path; deeper paths keep
// their first and last steps around an ellipsis.
const maxPathTokens = 16

// joinKey appends object key key to path.
func joinKey(path, key string) string {
	return path + keyText(key, path == "")
}

var identRe = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

func keyText(key string, first bool) string {
	if len(key) > maxKeyText {
		// A long key is cut (on a rune boundary), so that each problem's
		// path stays short however long the input's keys are.
		cut := maxKeyText
		for cut > 0 && !utf8.RuneStart(key[cut]) {
			cut--
		}
		return "[" + strconv.Quote(key[:cut]+"…") + "]"
	}
	if !identRe.MatchString(key) {
		return "[" + strconv.Quote(key) + "]"
	}
	if first {
		return key
	}
	return "." + key
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func ratText(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	if len(q) == 1 {
		return q[0] + " is"
	}
	return strings.Join(q, ", ") + " are"
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func uniq(list []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
