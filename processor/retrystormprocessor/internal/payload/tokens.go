package payload

// The token readers of the canonicalizer's grammar, for packages that read JSON held in a
// string without copying it (the redaction's scan). They only read s.

// StringEnd checks the string token at s[i] (no control characters, known escapes, four
// hex digits after \u) and returns its end.
func StringEnd(s string, i int) (int, bool) { return validString(stringBytes(s), i) }

// QuoteEnd returns the end of the string token at s[i], checking only its quotes.
func QuoteEnd(s string, i int) (int, bool) { return skipString(stringBytes(s), i) }

// NumberEnd returns the end of the number at s[i], or -1.
func NumberEnd(s string, i int) int { return numberEnd(stringBytes(s), i) }

// Unquote decodes the JSON string token tok as the canonicalizer reads strings (invalid
// UTF-8 kept, an unpaired surrogate escape as U+FFFD, as encoding/json does); false when
// tok is not one whole token. A token without escapes is sliced, not copied.
func Unquote(tok string) (string, bool) {
	if len(tok) < 2 || tok[0] != '"' {
		return "", false
	}
	c := canonicalizer{src: stringBytes(tok)}
	s, _, err := c.str()
	if err != nil || c.pos != len(tok) {
		return "", false
	}
	// s is a slice of tok, or of the arena this call alone holds: a view of it is safe.
	return unsafeString(s), true
}

// UnquoteScratch is Unquote decoding a token with escapes into scratch, for a reader that
// drops the string before it decodes the next: the string is valid until scratch's bytes
// are written again. It returns scratch, grown as it had to be, for that next call.
func UnquoteScratch(tok string, scratch []byte) (string, []byte, bool) {
	if len(tok) < 2 || tok[0] != '"' {
		return "", scratch, false
	}
	c := canonicalizer{src: stringBytes(tok), arena: scratch[:0]}
	s, _, err := c.str()
	if err != nil || c.pos != len(tok) {
		return "", c.arena, false
	}
	return unsafeString(s), c.arena, true
}
