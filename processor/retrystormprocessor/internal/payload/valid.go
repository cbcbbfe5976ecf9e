package payload

// validJSON reports whether the canonicalizer accepts doc (the same grammar and the same
// nesting limit), without writing anything: a fingerprint of a payload as sent needs to
// know only that its canonical form exists.
func validJSON(doc []byte) bool {
	var v validator
	return v.valid(doc)
}

// isCanonical reports that doc is its own canonical form, so hashing it needs no rewrite:
// valid, no whitespace between tokens, every object's keys in strictly increasing order,
// and every string printable ASCII without escapes. It may say false of a canonical
// document (one with escapes), never true of another.
func isCanonical(doc []byte) bool {
	v := validator{strict: true}
	return v.valid(doc)
}

// validator checks a document without writing it; strict also requires canonical form.
type validator struct {
	strict bool
	// prev holds, per open object, the last key read (nil before the first).
	prev [maxDepth][]byte
}

func (v *validator) space(doc []byte, i int) int {
	if v.strict {
		return i // whitespace then fails as an unexpected byte
	}
	return skipSpace(doc, i)
}

func (v *validator) valid(doc []byte) bool {
	// objects has bit d set when the container at depth d+1 is an object.
	var objects uint64
	depth := 0
	i := v.space(doc, 0)
	for {
		// A value starts at i.
		if i >= len(doc) {
			return false
		}
		switch b := doc[i]; b {
		case '{', '[':
			if depth++; depth > maxDepth {
				return false
			}
			bit := uint64(1) << (depth - 1)
			objects &^= bit
			if b == '{' {
				objects |= bit
			}
			i = v.space(doc, i+1)
			if i < len(doc) && doc[i] == b+2 { // '}' and ']' follow '{' and '[' by two
				depth--
				i++
				break
			}
			if b == '{' {
				v.prev[depth-1] = nil
				var ok bool
				if i, ok = v.memberKey(doc, i, depth); !ok {
					return false
				}
			}
			continue
		case '"':
			var ok bool
			if i, ok = v.str(doc, i); !ok {
				return false
			}
		case 't':
			if i = literalEnd(doc, i, "true"); i < 0 {
				return false
			}
		case 'f':
			if i = literalEnd(doc, i, "false"); i < 0 {
				return false
			}
		case 'n':
			if i = literalEnd(doc, i, "null"); i < 0 {
				return false
			}
		default:
			if i = numberEnd(doc, i); i < 0 {
				return false
			}
		}
		// A value ended at i: close containers until a comma opens the next value.
		for {
			i = v.space(doc, i)
			if depth == 0 {
				return i == len(doc)
			}
			if i >= len(doc) {
				return false
			}
			object := objects>>(depth-1)&1 == 1
			if doc[i] == ',' {
				i = v.space(doc, i+1)
				if object {
					var ok bool
					if i, ok = v.memberKey(doc, i, depth); !ok {
						return false
					}
				}
				break
			}
			if object && doc[i] != '}' || !object && doc[i] != ']' {
				return false
			}
			depth--
			i++
		}
	}
}

// memberKey checks an object member's key and colon at doc[i], the object being at depth,
// and returns where its value starts.
func (v *validator) memberKey(doc []byte, i, depth int) (int, bool) {
	if i >= len(doc) || doc[i] != '"' {
		return 0, false
	}
	end, ok := v.str(doc, i)
	if !ok {
		return 0, false
	}
	if v.strict {
		// Without escapes a key's bytes are its decoded bytes.
		key := doc[i+1 : end-1]
		if prev := v.prev[depth-1]; prev != nil && string(prev) >= string(key) {
			return 0, false
		}
		v.prev[depth-1] = key
	}
	i = v.space(doc, end)
	if i >= len(doc) || doc[i] != ':' {
		return 0, false
	}
	return v.space(doc, i+1), true
}

func (v *validator) str(doc []byte, i int) (int, bool) {
	if !v.strict {
		return validString(doc, i)
	}
	if i = plainEnd(doc, i+1); i < len(doc) && doc[i] == '"' {
		return i + 1, true
	}
	return 0, false
}

// validString checks the string token at doc[i] as the canonicalizer reads it (no control
// characters, known escapes, four hex digits after \u; invalid UTF-8 is allowed) and
// returns its end.
func validString(doc []byte, i int) (int, bool) {
	for i++; i < len(doc); i++ {
		if i = plainEnd(doc, i); i == len(doc) {
			break
		}
		switch b := doc[i]; {
		case b == '"':
			return i + 1, true
		case b < 0x20:
			return 0, false
		case b == '\\':
			if i+1 >= len(doc) {
				return 0, false
			}
			switch doc[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+6 > len(doc) {
					return 0, false
				}
				for _, h := range doc[i+2 : i+6] {
					if !isHex(h) {
						return 0, false
					}
				}
				i += 5
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

func isHex(b byte) bool { return isDigit(b) || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' }

func literalEnd(doc []byte, i int, word string) int {
	if len(doc)-i < len(word) || string(doc[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// numberEnd returns the end of the number at doc[i] by the canonicalizer's grammar, or -1.
func numberEnd(doc []byte, i int) int {
	if i < len(doc) && doc[i] == '-' {
		i++
	}
	switch {
	case i < len(doc) && doc[i] == '0':
		i++
	case i < len(doc) && doc[i] >= '1' && doc[i] <= '9':
		for i < len(doc) && isDigit(doc[i]) {
			i++
		}
	default:
		return -1
	}
	if i < len(doc) && doc[i] == '.' {
		i++
		if i >= len(doc) || !isDigit(doc[i]) {
			return -1
		}
		for i < len(doc) && isDigit(doc[i]) {
			i++
		}
	}
	if i < len(doc) && (doc[i] == 'e' || doc[i] == 'E') {
		i++
		if i < len(doc) && (doc[i] == '+' || doc[i] == '-') {
			i++
		}
		if i >= len(doc) || !isDigit(doc[i]) {
			return -1
		}
		for i < len(doc) && isDigit(doc[i]) {
			i++
		}
	}
	return i
}
