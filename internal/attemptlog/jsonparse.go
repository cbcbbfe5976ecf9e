package attemptlog

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// object is a JSON object as a Python dict holds it: keys in order of first appearance,
// each with the last value given for it.
type object struct {
	keys  []string
	vals  []any
	index map[string]int // built once the object has more than indexFrom keys
}

const indexFrom = 16

func (o *object) get(key string) (any, bool) {
	i, ok := o.find(key)
	if !ok {
		return nil, false
	}
	return o.vals[i], true
}

func (o *object) find(key string) (int, bool) {
	if o.index != nil {
		i, ok := o.index[key]
		return i, ok
	}
	for i, k := range o.keys {
		if k == key {
			return i, true
		}
	}
	return 0, false
}

func (o *object) set(key string, v any) {
	if i, ok := o.find(key); ok {
		o.vals[i] = v
		return
	}
	o.keys = append(o.keys, key)
	o.vals = append(o.vals, v)
	switch {
	case o.index != nil:
		o.index[key] = len(o.keys) - 1
	case len(o.keys) > indexFrom:
		o.index = make(map[string]int, 2*len(o.keys))
		for i, k := range o.keys {
			o.index[k] = i
		}
	}
}

// parser reads the JSON that CPython's json module accepts: RFC 8259 plus NaN, Infinity and
// -Infinity, with strings that may hold lone surrogates. Values are string, json.Number,
// bool, nil, []any and *object.
type parser struct {
	buf   []byte
	pos   int
	depth int
	lone  bool
}

func (p *parser) document() (any, error) {
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.buf) {
		return nil, p.syntax("extra data")
	}
	return v, nil
}

func (p *parser) syntax(what string) error {
	return fmt.Errorf("%w: %s at byte %d", ErrNotJSON, what, p.pos)
}

// skipSpace skips the whitespace json.loads allows between tokens.
func (p *parser) skipSpace() {
	for p.pos < len(p.buf) {
		switch p.buf[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) literal(word string, v any) (any, error) {
	if len(p.buf)-p.pos >= len(word) && string(p.buf[p.pos:p.pos+len(word)]) == word {
		p.pos += len(word)
		return v, nil
	}
	return nil, p.syntax("expecting value")
}

func (p *parser) value() (any, error) {
	if p.pos >= len(p.buf) {
		return nil, p.syntax("expecting value")
	}
	switch c := p.buf[p.pos]; c {
	case '{':
		return p.object()
	case '[':
		return p.array()
	case '"':
		return p.str()
	case 'n':
		return p.literal("null", nil)
	case 't':
		return p.literal("true", true)
	case 'f':
		return p.literal("false", false)
	case 'N':
		return p.literal("NaN", json.Number("NaN"))
	case 'I':
		return p.literal("Infinity", json.Number("Infinity"))
	default:
		if c == '-' && p.pos+1 < len(p.buf) && p.buf[p.pos+1] == 'I' {
			return p.literal("-Infinity", json.Number("-Infinity"))
		}
		return p.number()
	}
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return fmt.Errorf("%w: more than %d levels at byte %d", ErrTooDeep, maxDepth, p.pos)
	}
	return nil
}

func (p *parser) object() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '{'
	obj := &object{}
	p.skipSpace()
	if p.pos < len(p.buf) && p.buf[p.pos] == '}' {
		p.pos++
		p.depth--
		return obj, nil
	}
	for {
		if p.pos >= len(p.buf) || p.buf[p.pos] != '"' {
			return nil, p.syntax("expecting property name enclosed in double quotes")
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.buf) || p.buf[p.pos] != ':' {
			return nil, p.syntax("expecting ':' delimiter")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		obj.set(key.(string), v)
		p.skipSpace()
		if p.pos < len(p.buf) && p.buf[p.pos] == '}' {
			p.pos++
			p.depth--
			return obj, nil
		}
		if p.pos >= len(p.buf) || p.buf[p.pos] != ',' {
			return nil, p.syntax("expecting ',' delimiter")
		}
		p.pos++
		p.skipSpace()
	}
}

func (p *parser) array() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '['
	list := []any{}
	p.skipSpace()
	if p.pos < len(p.buf) && p.buf[p.pos] == ']' {
		p.pos++
		p.depth--
		return list, nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		list = append(list, v)
		p.skipSpace()
		if p.pos < len(p.buf) && p.buf[p.pos] == ']' {
			p.pos++
			p.depth--
			return list, nil
		}
		if p.pos >= len(p.buf) || p.buf[p.pos] != ',' {
			return nil, p.syntax("expecting ',' delimiter")
		}
		p.pos++
		p.skipSpace()
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?, the grammar of json.loads;
// an integer literal keeps Python's digit limit.
func (p *parser) number() (any, error) {
	start := p.pos
	i := p.pos
	if i < len(p.buf) && p.buf[i] == '-' {
		i++
	}
	switch {
	case i < len(p.buf) && p.buf[i] == '0':
		i++
	case i < len(p.buf) && p.buf[i] >= '1' && p.buf[i] <= '9':
		for i < len(p.buf) && isDigit(p.buf[i]) {
			i++
		}
	default:
		return nil, p.syntax("expecting value")
	}
	isFloat := false
	if i+1 < len(p.buf) && p.buf[i] == '.' && isDigit(p.buf[i+1]) {
		isFloat = true
		i += 2
		for i < len(p.buf) && isDigit(p.buf[i]) {
			i++
		}
	}
	if i < len(p.buf) && (p.buf[i] == 'e' || p.buf[i] == 'E') {
		j := i + 1
		if j < len(p.buf) && (p.buf[j] == '-' || p.buf[j] == '+') {
			j++
		}
		if j < len(p.buf) && isDigit(p.buf[j]) {
			for j < len(p.buf) && isDigit(p.buf[j]) {
				j++
			}
			isFloat = true
			i = j
		}
	}
	lit := string(p.buf[start:i])
	if !isFloat {
		digits := len(lit)
		if lit[0] == '-' {
			digits--
		}
		if digits > maxIntDigits {
			return nil, fmt.Errorf("%w: an integer of %d digits at byte %d (Python's limit is %d)", ErrScriptCrash, digits, start, maxIntDigits)
		}
	}
	p.pos = i
	return json.Number(lit), nil
}

// str reads a string. Escaped surrogate pairs become one character; a lone escaped
// surrogate is kept in its 3-byte WTF-8 form, as Python keeps it in a str.
func (p *parser) str() (any, error) {
	p.pos++ // '"'
	start := p.pos
	for p.pos < len(p.buf) {
		c := p.buf[p.pos]
		if c == '"' {
			s := string(p.buf[start:p.pos])
			p.pos++
			return s, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return nil, p.syntax("invalid control character")
		}
		p.pos++
	}
	out := append([]byte(nil), p.buf[start:p.pos]...)
	for p.pos < len(p.buf) {
		c := p.buf[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(out), nil
		case c < 0x20:
			return nil, p.syntax("invalid control character")
		case c != '\\':
			out = append(out, c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.buf) {
			return nil, p.syntax("unterminated string")
		}
		esc := p.buf[p.pos+1]
		p.pos += 2
		switch esc {
		case '"', '\\', '/':
			out = append(out, esc)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(p.buf, p.pos)
			if !ok {
				return nil, p.syntax("invalid \\uXXXX escape")
			}
			p.pos += 4
			if r >= 0xd800 && r <= 0xdbff && p.pos+1 < len(p.buf) && p.buf[p.pos] == '\\' && p.buf[p.pos+1] == 'u' {
				if low, ok := hex4(p.buf, p.pos+2); ok && low >= 0xdc00 && low <= 0xdfff {
					r = 0x10000 + (r-0xd800)<<10 + (low - 0xdc00)
					p.pos += 6
				}
			}
			out = appendWTF8(out, r)
			if r >= 0xd800 && r <= 0xdfff {
				p.lone = true
			}
		default:
			return nil, p.syntax("invalid \\escape")
		}
	}
	return nil, p.syntax("unterminated string")
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

// appendWTF8 is utf8.AppendRune that also encodes surrogates (as UTF-8 would if it allowed
// them), so a Go string can hold any Python str.
func appendWTF8(b []byte, r rune) []byte {
	if r >= 0xd800 && r <= 0xdfff {
		return append(b, 0xe0|byte(r>>12), 0x80|byte(r>>6)&0x3f, 0x80|byte(r)&0x3f)
	}
	return utf8.AppendRune(b, r)
}

// decodeWTF8 is utf8.DecodeRuneInString that also decodes the surrogates appendWTF8 writes.
func decodeWTF8(s string) (rune, int) {
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size == 1 && len(s) >= 3 && s[0] == 0xed && s[1] >= 0xa0 && s[1] <= 0xbf && s[2] >= 0x80 && s[2] <= 0xbf {
		return 0xd000 | rune(s[1]&0x3f)<<6 | rune(s[2]&0x3f), 3
	}
	return r, size
}
