package payload

import (
	"bytes"
	"errors"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// canonicalizer re-encodes JSON in canonical form in one pass over the input, without
// building a tree of maps: the hot path of every tool span with arguments or a result.
// Its output equals writeCanonical's for every document encoding/json accepts.
type canonicalizer struct {
	src   []byte
	pos   int
	out   []byte
	tmp   []byte
	depth int
	// members is a stack shared by nested objects: an object's members sit above its
	// base index until the object is closed and written in key order.
	members []member
	// arena holds the decoded strings of the current document that had escapes.
	arena []byte
	// sub canonicalizes the JSON an element's string holds (element), decoded into its
	// inner, without allocating for each.
	sub   *canonicalizer
	inner []byte
}

var errSyntax = errors.New("invalid json")

// canonicalAppend appends the canonical form of src to dst.
func canonicalAppend(dst, src []byte) ([]byte, error) {
	var c canonicalizer
	return c.appendCanonical(dst, src)
}

// appendCanonical reuses the canonicalizer's scratch space across documents.
func (c *canonicalizer) appendCanonical(dst, src []byte) ([]byte, error) {
	c.src, c.pos, c.out, c.depth, c.members, c.arena = src, 0, dst, 0, c.members[:0], c.arena[:0]
	if err := c.value(); err != nil {
		return dst, err
	}
	c.skipSpace()
	if c.pos != len(c.src) {
		return dst, errSyntax
	}
	return c.out, nil
}

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.src) {
		switch c.src[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canonicalizer) value() error {
	c.skipSpace()
	if c.pos >= len(c.src) {
		return errSyntax
	}
	switch ch := c.src[c.pos]; {
	case ch == '{':
		return c.object()
	case ch == '[':
		return c.array()
	case ch == '"':
		s, plain, err := c.str()
		if err != nil {
			return err
		}
		c.writeStr(s, plain)
		return nil
	case ch == 't':
		return c.literal("true")
	case ch == 'f':
		return c.literal("false")
	case ch == 'n':
		return c.literal("null")
	default:
		return c.number()
	}
}

func (c *canonicalizer) literal(word string) error {
	if !bytes.HasPrefix(c.src[c.pos:], []byte(word)) {
		return errSyntax
	}
	c.pos += len(word)
	c.out = append(c.out, word...)
	return nil
}

func (c *canonicalizer) number() error {
	start := c.pos
	i := c.pos
	if i < len(c.src) && c.src[i] == '-' {
		i++
	}
	switch {
	case i < len(c.src) && c.src[i] == '0':
		i++
	case i < len(c.src) && c.src[i] >= '1' && c.src[i] <= '9':
		for i < len(c.src) && isDigit(c.src[i]) {
			i++
		}
	default:
		return errSyntax
	}
	if i < len(c.src) && c.src[i] == '.' {
		i++
		if i >= len(c.src) || !isDigit(c.src[i]) {
			return errSyntax
		}
		for i < len(c.src) && isDigit(c.src[i]) {
			i++
		}
	}
	if i < len(c.src) && (c.src[i] == 'e' || c.src[i] == 'E') {
		i++
		if i < len(c.src) && (c.src[i] == '+' || c.src[i] == '-') {
			i++
		}
		if i >= len(c.src) || !isDigit(c.src[i]) {
			return errSyntax
		}
		for i < len(c.src) && isDigit(c.src[i]) {
			i++
		}
	}
	c.pos = i
	c.out = append(c.out, c.src[start:i]...)
	return nil
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func (c *canonicalizer) array() error {
	if c.depth++; c.depth > maxDepth {
		return errTooDeep
	}
	c.pos++
	c.out = append(c.out, '[')
	c.skipSpace()
	if c.pos < len(c.src) && c.src[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		c.depth--
		return nil
	}
	for {
		if err := c.value(); err != nil {
			return err
		}
		c.skipSpace()
		if c.pos >= len(c.src) {
			return errSyntax
		}
		switch c.src[c.pos] {
		case ',':
			c.pos++
			c.out = append(c.out, ',')
		case ']':
			c.pos++
			c.out = append(c.out, ']')
			c.depth--
			return nil
		default:
			return errSyntax
		}
	}
}

// member is one object member already written to out: its decoded key and where its
// canonical `"key":value` bytes sit.
type member struct {
	key        []byte
	start, end int
}

func (c *canonicalizer) object() error {
	if c.depth++; c.depth > maxDepth {
		return errTooDeep
	}
	c.pos++
	open := len(c.out)
	c.out = append(c.out, '{')
	base := len(c.members)
	c.skipSpace()
	if c.pos < len(c.src) && c.src[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '}')
		c.depth--
		return nil
	}
	for {
		c.skipSpace()
		if c.pos >= len(c.src) || c.src[c.pos] != '"' {
			return errSyntax
		}
		key, plain, err := c.str()
		if err != nil {
			return err
		}
		if len(c.members) > base {
			c.out = append(c.out, ',')
		}
		m := member{key: key, start: len(c.out)}
		if !plain {
			m.key = decodedKey(key)
		}
		c.writeStr(key, plain)
		c.skipSpace()
		if c.pos >= len(c.src) || c.src[c.pos] != ':' {
			return errSyntax
		}
		c.pos++
		c.out = append(c.out, ':')
		if err := c.value(); err != nil {
			return err
		}
		m.end = len(c.out)
		c.members = append(c.members, m)
		c.skipSpace()
		if c.pos >= len(c.src) {
			return errSyntax
		}
		if c.src[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.src[c.pos] != '}' {
			return errSyntax
		}
		c.pos++
		break
	}
	c.sortMembers(open+1, c.members[base:])
	c.members = c.members[:base]
	c.out = append(c.out, '}')
	c.depth--
	return nil
}

// sortMembers reorders the members written after `from` by key, joined by commas. Like
// encoding/json, a repeated key keeps its last value.
func (c *canonicalizer) sortMembers(from int, members []member) {
	sorted := true
	for i := 1; i < len(members); i++ {
		if bytes.Compare(members[i-1].key, members[i].key) >= 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return // already canonical: the bytes are in place
	}
	slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	members = dedupLast(members)
	c.tmp = c.tmp[:0]
	for i, m := range members {
		if i > 0 {
			c.tmp = append(c.tmp, ',')
		}
		c.tmp = append(c.tmp, c.out[m.start:m.end]...)
	}
	c.out = append(c.out[:from], c.tmp...)
}

// decodedKey turns each invalid UTF-8 byte into U+FFFD, as encoding/json does, so keys
// sort the same way.
func decodedKey(key []byte) []byte {
	if utf8.Valid(key) {
		return key
	}
	return []byte(string([]rune(string(key))))
}

func dedupLast(ms []member) []member {
	out := ms[:0]
	for i := range ms {
		if i+1 < len(ms) && bytes.Equal(ms[i+1].key, ms[i].key) {
			continue
		}
		out = append(out, ms[i])
	}
	return out
}

// str reads a JSON string at pos and returns its decoded bytes (a slice of the input
// when it holds no escapes) and whether they are plain (plainEnd): written as they are.
func (c *canonicalizer) str() ([]byte, bool, error) {
	c.pos++
	start := c.pos
	plain := true
	for {
		c.pos = plainEnd(c.src, c.pos)
		if c.pos >= len(c.src) {
			return nil, false, errSyntax
		}
		switch b := c.src[c.pos]; {
		case b == '"':
			s := c.src[start:c.pos]
			c.pos++
			return s, plain, nil
		case b == '\\':
			s, err := c.escapedStr(start)
			return s, false, err
		case b < 0x20:
			return nil, false, errSyntax
		default: // DEL or a byte of a multi-byte (or invalid) UTF-8 sequence: escaped
			plain = false
			c.pos++
		}
	}
}

// writeStr appends s, a decoded string, as canonical JSON: a plain one as it is.
func (c *canonicalizer) writeStr(s []byte, plain bool) {
	if !plain {
		c.out = appendString(c.out, s)
		return
	}
	c.out = append(c.out, '"')
	c.out = append(c.out, s...)
	c.out = append(c.out, '"')
}

// escapedStr decodes a string holding escapes into the document's arena: keys must stay
// valid until their object is written, and the arena's earlier bytes are never rewritten
// while the document is read (growing it leaves them in the old array).
func (c *canonicalizer) escapedStr(start int) ([]byte, error) {
	from := len(c.arena)
	buf := append(c.arena, c.src[start:c.pos]...)
	defer func() { c.arena = buf }()
	for c.pos < len(c.src) {
		if end := plainEnd(c.src, c.pos); end > c.pos {
			buf = append(buf, c.src[c.pos:end]...)
			if c.pos = end; end == len(c.src) {
				break
			}
		}
		b := c.src[c.pos]
		switch {
		case b == '"':
			c.pos++
			return buf[from:len(buf):len(buf)], nil
		case b < 0x20:
			return nil, errSyntax
		case b != '\\':
			buf = append(buf, b)
			c.pos++
			continue
		}
		if c.pos+1 >= len(c.src) {
			return nil, errSyntax
		}
		esc := c.src[c.pos+1]
		c.pos += 2
		switch esc {
		case '"', '\\', '/':
			buf = append(buf, esc)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := c.hex4()
			if !ok {
				return nil, errSyntax
			}
			if utf16.IsSurrogate(r) {
				r = c.lowSurrogate(r)
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return nil, errSyntax
		}
	}
	return nil, errSyntax
}

func (c *canonicalizer) hex4() (rune, bool) {
	if c.pos+4 > len(c.src) {
		return 0, false
	}
	var r rune
	for _, h := range c.src[c.pos : c.pos+4] {
		r <<= 4
		switch {
		case h >= '0' && h <= '9':
			r |= rune(h - '0')
		case h >= 'a' && h <= 'f':
			r |= rune(h - 'a' + 10)
		case h >= 'A' && h <= 'F':
			r |= rune(h - 'A' + 10)
		default:
			return 0, false
		}
	}
	c.pos += 4
	return r, true
}

// lowSurrogate completes a surrogate pair as encoding/json does: an unpaired half
// becomes U+FFFD.
func (c *canonicalizer) lowSurrogate(hi rune) rune {
	if c.pos+6 <= len(c.src) && c.src[c.pos] == '\\' && c.src[c.pos+1] == 'u' {
		save := c.pos
		c.pos += 2
		if lo, ok := c.hex4(); ok {
			if r := utf16.DecodeRune(hi, lo); r != utf8.RuneError {
				return r
			}
		}
		c.pos = save
	}
	return utf8.RuneError
}
