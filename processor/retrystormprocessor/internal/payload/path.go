package payload

import (
	"bytes"
	"encoding/json"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// CanonicalValuePath returns the canonical JSON of the element at path inside v, where v
// is a map or a string holding a JSON object. It reports false when the element is absent,
// so callers can fall through to their next source.
func CanonicalValuePath(v pcommon.Value, path []string) ([]byte, bool) {
	var c canonicalizer
	return c.valuePath(nil, v, path)
}

// valuePath appends the canonical JSON of the element at path inside v to dst. A JSON
// string document is canonicalised whole in one pass and the element cut out of the
// canonical bytes: canonical JSON has no whitespace and unique keys, so the cut is a plain
// scan, and a part of a canonical document is itself canonical. (The whole document must
// then be valid and at most maxDepth deep, not only the element's part of it.)
func (c *canonicalizer) valuePath(dst []byte, v pcommon.Value, path []string) ([]byte, bool) {
	if len(path) == 0 {
		return append(dst, CanonicalValue(v)...), true
	}
	switch v.Type() {
	case pcommon.ValueTypeMap:
		cur := v
		for _, p := range path {
			if cur.Type() != pcommon.ValueTypeMap {
				return dst, false
			}
			next, ok := cur.Map().Get(p)
			if !ok {
				return dst, false
			}
			cur = next
		}
		return append(dst, CanonicalValue(cur)...), true
	case pcommon.ValueTypeStr:
		s := v.Str()
		if !looksLikeJSONContainer(s) {
			return dst, false
		}
		doc, err := c.appendCanonical(c.tmpDoc[:0], stringBytes(s))
		c.tmpDoc = doc
		if err != nil {
			return dst, false
		}
		elem, ok := elementAt(doc, path, &c.key)
		if !ok {
			return dst, false
		}
		// An element holding JSON in a string hashes like the same element as a map,
		// matching CanonicalValue.
		if elem[0] == '"' {
			if inner, ok := unquote(elem); ok && looksLikeJSONContainer(inner) {
				if out, err := canonicalAppend(dst, []byte(inner)); err == nil {
					return out, true
				}
			}
		}
		return append(dst, elem...), true
	}
	return dst, false
}

// elementAt returns the element at path inside the canonical document doc. keyBuf is
// scratch space for the canonical form of each path key.
func elementAt(doc []byte, path []string, keyBuf *[]byte) ([]byte, bool) {
	cur := doc
	for _, p := range path {
		if len(cur) < 2 || cur[0] != '{' {
			return nil, false
		}
		*keyBuf = appendString((*keyBuf)[:0], p)
		want := *keyBuf
		i := 1
		found := false
		for i < len(cur) && cur[i] != '}' {
			keyEnd := skipValue(cur, i)
			valEnd := skipValue(cur, keyEnd+1) // past the colon
			if bytes.Equal(cur[i:keyEnd], want) {
				cur, found = cur[keyEnd+1:valEnd], true
				break
			}
			i = valEnd
			if i < len(cur) && cur[i] == ',' {
				i++
			}
		}
		if !found {
			return nil, false
		}
	}
	return cur, true
}

// skipValue returns the end of the canonical JSON value starting at doc[i].
func skipValue(doc []byte, i int) int {
	depth := 0
	for j := i; j < len(doc); j++ {
		switch doc[j] {
		case '"':
			j++
			for j < len(doc) && doc[j] != '"' {
				if doc[j] == '\\' {
					j++
				}
				j++
			}
			if depth == 0 {
				return j + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j
			}
			if depth--; depth == 0 {
				return j + 1
			}
		case ',', ':':
			if depth == 0 {
				return j
			}
		}
	}
	return len(doc)
}

// unquote decodes a JSON string token. Tokens without escapes, the usual case, are sliced
// without decoding.
func unquote(tok []byte) (string, bool) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return "", false
	}
	body := tok[1 : len(tok)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return string(body), true
	}
	var s string
	if json.Unmarshal(tok, &s) != nil {
		return "", false
	}
	return s, true
}

// StringAt returns the string element at path inside v (see CanonicalValuePath), decoded.
// It reports false when the element is absent or not a string.
func StringAt(v pcommon.Value, path []string) (string, bool) {
	var c canonicalizer
	b, ok := c.valuePath(nil, v, path)
	if !ok || len(b) == 0 || b[0] != '"' {
		return "", false
	}
	return unquote(b)
}
