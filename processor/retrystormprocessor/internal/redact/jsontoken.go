package redact

import (
	"strings"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

// The tokens of the scan, read from a string at an offset. The grammar is encoding/json's
// (RFC 8259; invalid UTF-8 inside strings is let through, as encoding/json lets it).

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

func stringEnd(s string, i int) (int, bool) { return payload.StringEnd(s, i) }

// scalarEnd checks the number or literal at s[i] and returns its end.
func scalarEnd(s string, i int) (int, bool) {
	if i >= len(s) {
		return 0, false
	}
	for _, word := range [...]string{"true", "false", "null"} {
		if s[i] == word[0] {
			return i + len(word), strings.HasPrefix(s[i:], word)
		}
	}
	end := payload.NumberEnd(s, i)
	return end, end > i
}

// valueEnd checks the value at s[i], to any depth, without recursion (a stack of one bit a
// level), and returns its end.
func valueEnd(s string, i int) (int, bool) {
	var objects []bool // per open container: it is an object
	for {
		i = skipSpace(s, i)
		if i >= len(s) {
			return 0, false
		}
		var ok bool
		switch c := s[i]; c {
		case '{', '[':
			objects = append(objects, c == '{')
			i = skipSpace(s, i+1)
			if i < len(s) && s[i] == c+2 { // '}' and ']' follow '{' and '[' by two
				objects = objects[:len(objects)-1]
				i++
				break
			}
			if c == '{' {
				if i, ok = memberKeyEnd(s, i); !ok {
					return 0, false
				}
			}
			continue
		case '"':
			if i, ok = stringEnd(s, i); !ok {
				return 0, false
			}
		default:
			if i, ok = scalarEnd(s, i); !ok {
				return 0, false
			}
		}
		// A value ended at i: close containers until a comma opens the next value.
		for {
			if len(objects) == 0 {
				return i, true
			}
			if i = skipSpace(s, i); i >= len(s) {
				return 0, false
			}
			object := objects[len(objects)-1]
			if s[i] == ',' {
				i++
				if object {
					if i, ok = memberKeyEnd(s, skipSpace(s, i)); !ok {
						return 0, false
					}
				}
				break
			}
			if object && s[i] != '}' || !object && s[i] != ']' {
				return 0, false
			}
			objects = objects[:len(objects)-1]
			i++
		}
	}
}

// memberKeyEnd checks a member's key and colon at s[i] and returns where its value starts.
func memberKeyEnd(s string, i int) (int, bool) {
	if i >= len(s) || s[i] != '"' {
		return 0, false
	}
	end, ok := stringEnd(s, i)
	if !ok {
		return 0, false
	}
	if i = skipSpace(s, end); i >= len(s) || s[i] != ':' {
		return 0, false
	}
	return i + 1, true
}

// validJSON reports whether doc is one JSON value, whitespace around it allowed.
func validJSON(doc string) bool {
	end, ok := valueEnd(doc, 0)
	return ok && skipSpace(doc, end) == len(doc)
}

// containerEnd returns the end of the object or array at s[i], checking only that strings
// and brackets close: it finds an element's extent fast, the scan checks the rest.
func containerEnd(s string, i int) (int, bool) {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '"':
			end, ok := payload.QuoteEnd(s, j)
			if !ok {
				return 0, false
			}
			j = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return j + 1, true
			}
		}
	}
	return 0, false
}

// holdsContainer reports whether the checked string token tok holds, once decoded, text
// that starts (after whitespace) with '{' or '['.
func holdsContainer(tok string) bool {
	for i := 1; i < len(tok)-1; i++ {
		switch tok[i] {
		case ' ':
		case '{', '[':
			return true
		case '\\':
			switch tok[i+1] {
			case 'n', 'r', 't':
				i++
			case 'u':
				s, _ := unquote(tok)
				return payload.LooksLikeJSONContainer(s)
			default:
				return false
			}
		default:
			return false
		}
	}
	return false
}

// unquote decodes the string token tok.
func unquote(tok string) (string, bool) { return payload.Unquote(tok) }
