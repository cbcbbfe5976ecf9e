package redact

import (
	"encoding/binary"
	"hash/maphash"
	"strings"
	"unsafe"
)

// Scrubbed replaces a hunted value found inside another string.
const Scrubbed = "[redacted]"

// Scrub returns s with every occurrence of a hunted value replaced by Scrubbed, and how
// many it replaced. At each position the longest value that matches wins.
func (v *Values) Scrub(s string) (string, int) {
	if v.Len() == 0 || len(s) < v.k {
		return s, 0
	}
	x := v.index()
	var b strings.Builder
	done, n := 0, 0
	for i := 0; i+v.k <= len(s); {
		if sh := x.skip[blockHash(s[i+v.k-2], s[i+v.k-1])]; sh > 0 {
			i += int(sh)
			continue
		}
		if m := v.matchAt(x, s, i); m > 0 {
			if n == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[done:i])
			b.WriteString(Scrubbed)
			i += m
			done = i
			n++
			continue
		}
		i++
	}
	if n == 0 {
		return s, 0
	}
	b.WriteString(s[done:])
	return b.String(), n
}

// Holds reports whether s contains a hunted value.
func (v *Values) Holds(s string) bool {
	if v.Len() == 0 {
		return false
	}
	x := v.index()
	for i := 0; i+v.k <= len(s); {
		if sh := x.skip[blockHash(s[i+v.k-2], s[i+v.k-1])]; sh > 0 {
			i += int(sh)
			continue
		}
		if v.matchAt(x, s, i) > 0 {
			return true
		}
		i++
	}
	return false
}

// matchAt is the length of the longest hunted value at s[i:], 0 when none starts there.
func (v *Values) matchAt(x *valueIndex, s string, i int) int {
	var w uint64
	if i+8 <= len(s) {
		w = binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
		if v.k < 8 {
			w &= 1<<(8*v.k) - 1
		}
	} else {
		w = prefixOf(s[i:], v.k)
	}
	mask := uint64(len(x.table) - 1)
	best := 0
	for slot := mix(w) >> x.shift; ; slot = (slot + 1) & mask {
		e := x.table[slot]
		if e == 0 {
			return best
		}
		p := &v.prints[e-1]
		if p.prefix != w || int(p.n) <= best || i+int(p.n) > len(s) {
			continue
		}
		if maphash.String(hashSeed, s[i:i+int(p.n)]) == p.sum {
			best = int(p.n)
		}
	}
}
