package payload

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// CanonicalValuePath returns the canonical JSON of the element at path inside v, where v
// is a map or a string holding a JSON object. It reports false when the element is absent,
// so callers can fall through to their next source.
func CanonicalValuePath(v pcommon.Value, path []string) ([]byte, bool) {
	var c canonicalizer
	return c.valuePath(nil, v, path)
}

// valuePath appends the canonical JSON of the element at path inside v to dst. In a JSON
// string document the element is found by skipping over the members around it, without
// parsing them, and only the element is canonicalised: for the JSON-RPC request the MCP
// tool name is read from, that is the name and not the arguments beside it. A repeated key
// takes its last value, as encoding/json does. (So a document broken outside the element
// still yields it; a fuzz target holds the result to encoding/json's for every document
// encoding/json accepts.)
func (c *canonicalizer) valuePath(dst []byte, v pcommon.Value, path []string) ([]byte, bool) {
	if len(path) == 0 {
		return append(dst, CanonicalValue(v)...), true
	}
	switch v.Type() {
	case pcommon.ValueTypeMap:
		cur, ok := mapElement(v, path)
		if !ok {
			return dst, false
		}
		return append(dst, CanonicalValue(cur)...), true
	case pcommon.ValueTypeStr:
		s := v.Str()
		if !LooksLikeJSONContainer(s) {
			return dst, false
		}
		elem, ok := rawElement(stringBytes(s), path)
		if !ok {
			return dst, false
		}
		return c.element(dst, elem)
	}
	return dst, false
}

// element appends the canonical JSON of elem, an element read out of a JSON string
// document, to dst.
func (c *canonicalizer) element(dst, elem []byte) ([]byte, bool) {
	out, err := c.appendCanonical(dst, elem)
	if err != nil {
		return dst, false
	}
	// An element holding JSON in a string hashes like the same element as a map,
	// matching CanonicalValue.
	if tok := out[len(dst):]; len(tok) > 0 && tok[0] == '"' {
		// tok is canonical (valid UTF-8, standard escapes): the canonicalizer's string
		// reader decodes it as encoding/json would, into scratch space of its own.
		if c.sub == nil {
			c.sub = &canonicalizer{}
		}
		sub := c.sub
		d := canonicalizer{src: tok, arena: sub.inner[:0]}
		inner, _, err := d.str()
		sub.inner = d.arena
		if err == nil && d.pos == len(tok) && LooksLikeJSONContainer(unsafeString(inner)) {
			// Written after the string, not over it: a document that turns out invalid
			// halfway must leave the string intact.
			if canon, err := sub.appendCanonical(out, inner); err == nil {
				n := copy(canon[len(dst):], canon[len(out):])
				return canon[:len(dst)+n], true
			}
		}
	}
	return out, true
}

// stringElement decodes tok, a string element of a JSON document, as element and unquote
// would read it: invalid JSON or a string holding a valid JSON container (which element
// reads as that container) is not a string; invalid UTF-8 decodes to U+FFFD per byte.
func (c *canonicalizer) stringElement(tok []byte) (string, bool) {
	c.src, c.pos, c.arena = tok, 0, c.arena[:0]
	b, _, err := c.str()
	if err != nil || c.pos != len(tok) {
		return "", false
	}
	if len(b) > 0 && LooksLikeJSONContainer(unsafeString(b)) && validJSON(b) {
		return "", false
	}
	if utf8.Valid(b) {
		return string(b), true
	}
	return string([]rune(string(b))), true
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the end of the string token starting at doc[i]: the first quote after
// it that an even number of backslashes precedes.
func skipString(doc []byte, i int) (int, bool) {
	for j := i + 1; ; j++ {
		k := bytes.IndexByte(doc[j:], '"')
		if k < 0 {
			return 0, false
		}
		j += k
		escapes := 0
		for p := j - 1; p > i && doc[p] == '\\'; p-- {
			escapes++
		}
		if escapes%2 == 0 {
			return j + 1, true
		}
	}
}

// skipRaw returns the end of the JSON value starting at doc[i], checking only that strings
// and brackets close: the element found is canonicalised, which checks it whole.
func skipRaw(doc []byte, i int) (int, bool) {
	if i >= len(doc) {
		return 0, false
	}
	switch doc[i] {
	case '"':
		return skipString(doc, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(doc); j++ {
			switch doc[j] {
			case '"':
				end, ok := skipString(doc, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++ // counted, not recursed: a deep neighbour costs no stack
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	}
	j := i
	for j < len(doc) {
		switch doc[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j, j > i
		}
		j++
	}
	return j, j > i
}

// unquote decodes a JSON string token. Tokens without escapes, the usual case, are sliced
// without decoding.
func unquote(tok []byte) (string, bool) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return "", false
	}
	body := tok[1 : len(tok)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body), true
	}
	var s string
	if json.Unmarshal(tok, &s) != nil {
		return "", false
	}
	return s, true
}

// EmptyField reports that the element at path inside v, read as PayloadDigest reads it, is
// there and holds nothing: an empty object, array or string. An argument source whose
// element is empty is tried after those that hold something (toolspan).
func (x *Hasher) EmptyField(v pcommon.Value, path []string) bool {
	if len(path) == 0 {
		return emptyValue(v)
	}
	switch v.Type() {
	case pcommon.ValueTypeStr:
		if !LooksLikeJSONContainer(v.Str()) {
			return false
		}
		elem, ok := rawElement(stringBytes(v.Str()), path)
		return ok && emptyJSON(elem)
	case pcommon.ValueTypeMap:
		cur, ok := mapElement(v, path)
		return ok && emptyValue(cur)
	}
	return false
}

// emptyValue reports an attribute value that holds nothing: an empty map, slice or byte
// array, or a string that is empty or an empty JSON object, array or string.
func emptyValue(v pcommon.Value) bool {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		s := strings.TrimSpace(v.Str())
		return s == "" || emptyJSON(stringBytes(s))
	case pcommon.ValueTypeMap:
		return v.Map().Len() == 0
	case pcommon.ValueTypeSlice:
		return v.Slice().Len() == 0
	case pcommon.ValueTypeBytes:
		return v.Bytes().Len() == 0
	}
	return false
}

// emptyJSON reports that elem, a JSON element, is {}, [] or "" (white space aside).
func emptyJSON(elem []byte) bool {
	i := skipSpace(elem, 0)
	if i >= len(elem) {
		return false
	}
	var closer byte
	switch elem[i] {
	case '{':
		closer = '}'
	case '[':
		closer = ']'
	case '"':
		closer = '"'
	default:
		return false
	}
	j := i + 1
	if closer != '"' {
		j = skipSpace(elem, j)
	}
	return j < len(elem) && elem[j] == closer && skipSpace(elem, j+1) == len(elem)
}
