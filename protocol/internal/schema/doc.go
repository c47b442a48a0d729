// Package schema infers JSON Schema (draft 2020-12) documents from Go types,
// compiles schema documents and validates tool inputs against them, turning
// validation failures into short, plain-English problems that an AI agent can
// read and act on.
//
// # Two validators
//
// [Schema.Validate] has two validators behind it, for speed:
//
//   - the quick check (the fast* names) walks the input's jsontext tokens
//     against a compiled form of the schema, without a generic decode or
//     big numbers on the usual path. It covers the keywords inferred
//     schemas use, and it only ever answers "valid for sure": on an invalid
//     value, a keyword it does not cover or a number beyond its limits it
//     answers "not sure", never "invalid";
//   - the full validator (santhosh-tekuri/jsonschema, after the key rules of
//     readJSON) decides every input the quick check is not sure of, and
//     explains why an input is invalid, naming every problem.
//
// So the quick check never decides that an input is invalid, and it must
// never accept one the full validator refuses. The fuzz targets hold the
// two equal: FuzzFastCheck over inputs and FuzzFastCheckSchemas over
// schemas (quick_test.go) fail on any input the quick check accepts and the
// full validator refuses; TestFastCheckCoversInferredSchemas checks that
// the quick check is sure of the valid inputs of inferred schemas, so that
// it stays the usual path.
//
// # Files
//
//   - infer.go: a Go type to its schema document (Infer).
//   - compile.go: a schema document to a [Schema], both validators built.
//   - validate.go: Validate (the quick check, then the full validator) and
//     the problems the full validator writes.
//   - quick_compile.go, quick_check.go: the quick check, compiled and run.
//   - read.go: the one-pass reader of an input for the full validator, with
//     the key rules of a tool input (wild numbers, a key given twice, a key
//     differing from a property only in case).
//   - keys.go: which object schemas apply at each place of an input, for
//     the case rule of read.go.
package schema
