// Package jsonscan finds the end of a JSON value in one pass, checking its
// syntax on the way: the piece the core's fast decoders share.
package jsonscan

// Skip returns the index just past the JSON value that starts at b[i] (no
// space before it), and false when b[i:] does not start with a well-formed
// JSON value or when arrays and objects nest deeper than maxDepth. What it
// accepts is what encoding/json's Valid accepts for that value; like Valid,
// it does not check that strings are valid UTF-8.
func Skip(b []byte, i, maxDepth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		return object(b, i+1, maxDepth)
	case c == '[':
		return array(b, i+1, maxDepth)
	case c == '"':
		return str(b, i+1)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return number(b, i)
	}
	return i, false
}

// Space returns the index of the first byte at or after i that is not JSON
// white space.
func Space(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func object(b []byte, i, maxDepth int) (int, bool) {
	if maxDepth <= 0 {
		return i, false
	}
	i = Space(b, i)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		var ok bool
		if i, ok = str(b, i+1); !ok {
			return i, false
		}
		i = Space(b, i)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		if i, ok = Skip(b, Space(b, i+1), maxDepth-1); !ok {
			return i, false
		}
		i = Space(b, i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = Space(b, i+1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

func array(b []byte, i, maxDepth int) (int, bool) {
	if maxDepth <= 0 {
		return i, false
	}
	i = Space(b, i)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = Skip(b, i, maxDepth-1); !ok {
			return i, false
		}
		i = Space(b, i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = Space(b, i+1)
		case ']':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// str skips the rest of a string whose opening quote is just before b[i].
func str(b []byte, i int) (int, bool) {
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !hex4(b[i+2:i+6]) {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		default:
			i++
		}
	}
	return i, false
}

func hex4(h []byte) bool {
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func literal(b []byte, i int, word string) (int, bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

// number skips a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func number(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
