package redact

import (
	"encoding/json"
	"net/url"
	"strings"
)

// The forms a payload value takes in the strings that copy it, each hunted beside the value.

// variants are the forms a value takes when an SDK copies it into another string: as it
// is, escaped inside a JSON string (once, or twice for JSON inside JSON), escaped the way
// Go's encoding/json escapes HTML characters, and escaped in a URL.
var variants = [...]func(string) string{
	func(s string) string { return s },
	jsonEscape,
	func(s string) string { return jsonEscape(jsonEscape(s)) },
	goJSONEscape,
	url.QueryEscape,
	url.PathEscape,
}

// maxURLValue is the longest value hunted URL-escaped too: what goes into a URL is an id,
// an address, a short query, not a paragraph.
const maxURLValue = 128

// escapesOf has bit i set when variants[i] may write s differently: one pass over its
// bytes, so a plain value (digits, letters, - _ .) costs no escaping.
func escapesOf(s string) uint8 {
	var bits uint8
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			continue
		case c == '"' || c == '\\' || c < 0x20:
			bits |= 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5
		case c == '<' || c == '>' || c == '&' || c >= 0x80:
			bits |= 1<<3 | 1<<4 | 1<<5
		default:
			bits |= 1<<4 | 1<<5
		}
	}
	return bits
}

// jsonEscape escapes s as JSON.stringify does inside a string: quote, backslash and
// control characters only.
func jsonEscape(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r == '"' || r == '\\' || r < 0x20 }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&0xf])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// goJSONEscape is s inside a string written by Go's encoding/json (HTML characters as
// \u003c and the like, which JavaScript SDKs do not do).
func goJSONEscape(s string) string {
	if !strings.ContainsAny(s, "<>&\u2028\u2029\"\\") && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 }) {
		return s
	}
	b, err := json.Marshal(s)
	if err != nil {
		return s
	}
	return string(b[1 : len(b)-1])
}
