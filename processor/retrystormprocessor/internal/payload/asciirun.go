package payload

// Strings inside JSON payloads are mostly printable ASCII: names, identifiers and prose.
// plainEnd finds the end of such a run eight bytes at a time, for every pass that reads a
// string byte by byte (validating, decoding, re-encoding).

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain reports that b goes into a canonical JSON string as it is: printable ASCII other
// than the quote and the backslash.
func plain(b byte) bool { return b >= 0x20 && b < 0x7f && b != '"' && b != '\\' }

// plainEnd returns the index of the first byte of s at or after i that is not plain,
// len(s) when there is none.
func plainEnd[T string | []byte](s T, i int) int {
	for i < len(s) {
		if i+8 <= len(s) {
			w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if notPlain(w) == 0 {
				i += 8
				continue
			}
			// A flagged word holds a byte that is not plain, or it is a false alarm past
			// one (the borrow of a zero byte carries): look byte by byte.
			for end := i + 8; i < end; i++ {
				if !plain(s[i]) {
					return i
				}
			}
			continue
		}
		if !plain(s[i]) {
			return i
		}
		i++
	}
	return i
}

// notPlain is non-zero when a byte of w is not plain (and may be non-zero past a zero byte
// of the comparisons, which plainEnd then reads byte by byte).
func notPlain(w uint64) uint64 {
	control := (w - 0x20*ones) &^ w & highs // a byte below 0x20, when no byte has its high bit
	quote := zeroByte(w ^ '"'*ones)
	backslash := zeroByte(w ^ '\\'*ones)
	del := zeroByte(w ^ 0x7f*ones)
	return control | quote | backslash | del | w&highs
}

// zeroByte is non-zero when a byte of v is zero.
func zeroByte(v uint64) uint64 { return (v - ones) &^ v & highs }
