package conversation

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A message structure is read in place: values are extents of the document, and a string
// is decoded only when the reading needs its text (a type, a role, an id, a name, or JSON
// held in it). Most of a conversation is text and payload nobody reads here, and decoding
// every escaped string of it, as a general JSON library does while iterating, was most of
// the cost of following the model.

// Kinds of a value.
const (
	kindNone byte = iota
	kindObject
	kindArray
	kindString
	kindNumber
	kindTrue
	kindFalse
	kindNull
)

// value is one JSON value: its extent in the document s, its kind, and, for a string,
// whether it holds escapes.
type value struct {
	s          string
	start, end int
	kind       byte
	esc        bool
}

// parseJSON reads the value s holds, or kindNone where s is no JSON value (what follows a
// value is not read).
func parseJSON(s string) value {
	i := skipWS(s, 0)
	end, kind, esc, ok := scanValue(s, i)
	if !ok {
		return value{}
	}
	return value{s: s, start: i, end: end, kind: kind, esc: esc}
}

func (v value) isObject() bool { return v.kind == kindObject }
func (v value) isArray() bool  { return v.kind == kindArray }
func (v value) exists() bool   { return v.kind != kindNone }

// raw is the value as written.
func (v value) raw() string { return v.s[v.start:v.end] }

// text is a string's text, decoded; "" for any other value.
func (v value) text() string {
	if v.kind != kindString {
		return ""
	}
	inner := v.s[v.start+1 : v.end-1]
	if !v.esc {
		return inner
	}
	return unescape(inner)
}

// each calls fn with each member of an object (its key decoded) or element of an array
// (key ""), in order, until fn returns false. It stops at the first malformed member.
func (v value) each(fn func(key string, el value) bool) {
	if v.kind != kindObject && v.kind != kindArray {
		return
	}
	s := v.s
	i := skipWS(s, v.start+1)
	if i < v.end && (s[i] == '}' || s[i] == ']') {
		return
	}
	for i < v.end {
		key := ""
		if v.kind == kindObject {
			if s[i] != '"' {
				return
			}
			kend, esc, ok := scanString(s, i)
			if !ok {
				return
			}
			key = s[i+1 : kend-1]
			if esc {
				key = unescape(key)
			}
			i = skipWS(s, kend)
			if i >= v.end || s[i] != ':' {
				return
			}
			i = skipWS(s, i+1)
		}
		end, kind, esc, ok := scanValue(s, i)
		if !ok {
			return
		}
		if !fn(key, value{s: s, start: i, end: end, kind: kind, esc: esc}) {
			return
		}
		i = skipWS(s, end)
		if i >= v.end || s[i] != ',' {
			return
		}
		i = skipWS(s, i+1)
	}
}

// get returns the member key of an object (the last of repeated ones, as a JSON parser
// hands it), or a value of kindNone.
func (v value) get(key string) value {
	var out value
	v.each(func(k string, el value) bool {
		if k == key {
			out = el
		}
		return true
	})
	return out
}

func skipWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r') {
		i++
	}
	return i
}

// scanString finds the end (past the closing quote) of the string at s[i], and whether it
// holds escapes: the next quote not escaped by an odd run of backslashes (a vectorised
// byte search; most of a conversation is inside strings).
func scanString(s string, i int) (end int, esc bool, ok bool) {
	for j := i + 1; j < len(s); {
		k := strings.IndexByte(s[j:], '"')
		if k < 0 {
			return 0, false, false
		}
		q := j + k
		n := 0
		for b := q - 1; b > i && s[b] == '\\'; b-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, esc || strings.IndexByte(s[j:q], '\\') >= 0, true
		}
		esc = true
		j = q + 1
	}
	return 0, false, false
}

// scanValue finds the end of the value at s[i], its kind, and whether a string holds
// escapes. A container is scanned by its brackets, strings skipped whole.
func scanValue(s string, i int) (end int, kind byte, esc bool, ok bool) {
	if i >= len(s) {
		return 0, kindNone, false, false
	}
	switch c := s[i]; {
	case c == '"':
		end, esc, ok = scanString(s, i)
		return end, kindString, esc, ok
	case c == '{' || c == '[':
		kind = kindObject
		if c == '[' {
			kind = kindArray
		}
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				e, _, ok := scanString(s, j)
				if !ok {
					return 0, kindNone, false, false
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, kind, false, true
				}
			}
		}
		return 0, kindNone, false, false
	case c == 't':
		return literal(s, i, "true", kindTrue)
	case c == 'f':
		return literal(s, i, "false", kindFalse)
	case c == 'n':
		return literal(s, i, "null", kindNull)
	case c == '-' || c >= '0' && c <= '9':
		j := i + 1
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' || s[j] == '+' || s[j] == '-') {
			j++
		}
		return j, kindNumber, false, true
	}
	return 0, kindNone, false, false
}

func literal(s string, i int, word string, kind byte) (int, byte, bool, bool) {
	if strings.HasPrefix(s[i:], word) {
		return i + len(word), kind, false, true
	}
	return 0, kindNone, false, false
}

// unescape decodes the escapes of a JSON string's content; an escape that is none is kept
// as written.
func unescape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case '"', '\\', '/':
			b.WriteByte(s[i])
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, n := hexRune(s[i+1:])
			if n == 0 {
				b.WriteString(`\u`)
				continue
			}
			i += n
			if utf16.IsSurrogate(r) {
				if i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					if r2, n2 := hexRune(s[i+3:]); n2 > 0 {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r = d
							i += 2 + n2
						}
					}
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// hexRune reads the four hex digits of a \u escape; n is 0 where they are not.
func hexRune(s string) (rune, int) {
	if len(s) < 4 {
		return 0, 0
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, 0
		}
	}
	return r, 4
}
