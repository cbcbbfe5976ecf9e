package attemptlog

import (
	"encoding/json"
	"unicode/utf8"
)

// indentUnit is json.dump's indent=2.
const indentUnit = "  "

func appendIndent(b []byte, level int) []byte {
	b = append(b, '\n')
	for range level {
		b = append(b, indentUnit...)
	}
	return b
}

// appendPyJSON writes v as json.dump(v, indent=2) does when v starts on a line indented
// level times: "," and ": " separators, "[]" and "{}" for empty containers, ASCII only.
func appendPyJSON(b []byte, v any, level int) []byte {
	switch v := v.(type) {
	case string:
		return appendJSONString(b, v)
	case json.Number:
		if !isFloatLiteral(v) {
			return append(b, pyIntLiteral(v).String()...)
		}
		return append(b, floatRepr(pyFloat(v), "Infinity", "NaN")...)
	case bool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case nil:
		return append(b, "null"...)
	case []any:
		if len(v) == 0 {
			return append(b, "[]"...)
		}
		b = append(b, '[')
		for i, item := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendIndent(b, level+1)
			b = appendPyJSON(b, item, level+1)
		}
		b = appendIndent(b, level)
		return append(b, ']')
	case *object:
		if len(v.keys) == 0 {
			return append(b, "{}"...)
		}
		b = append(b, '{')
		for i, k := range v.keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendIndent(b, level+1)
			b = appendJSONString(b, k)
			b = append(b, ": "...)
			b = appendPyJSON(b, v.vals[i], level+1)
		}
		b = appendIndent(b, level)
		return append(b, '}')
	}
	return b
}

// appendJSONString writes s as json.dump with ensure_ascii=True does: short escapes for
// \" \\ \n \r \t \b \f, \u00XX for other control characters and DEL, \uXXXX in lowercase
// hex for everything outside ASCII (a surrogate pair above U+FFFF), and nothing else
// escaped (no HTML escaping of <, > and &).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch c {
			case '"':
				b = append(b, `\"`...)
			case '\\':
				b = append(b, `\\`...)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			case '\t':
				b = append(b, `\t`...)
			case '\b':
				b = append(b, `\b`...)
			case '\f':
				b = append(b, `\f`...)
			default:
				if c < 0x20 || c == 0x7f {
					b = appendU4(b, rune(c))
				} else {
					b = append(b, c)
				}
			}
			continue
		}
		r, size := decodeWTF8(s[i:])
		i += size
		if r > 0xffff {
			r -= 0x10000
			b = appendU4(b, 0xd800+r>>10)
			b = appendU4(b, 0xdc00+r&0x3ff)
			continue
		}
		b = appendU4(b, r)
	}
	return append(b, '"')
}

func appendU4(b []byte, r rune) []byte {
	return append(b, '\\', 'u', lowerHex[r>>12&0xf], lowerHex[r>>8&0xf], lowerHex[r>>4&0xf], lowerHex[r&0xf])
}
