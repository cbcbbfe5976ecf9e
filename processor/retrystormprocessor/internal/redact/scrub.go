package redact

import (
	"encoding/binary"
	"hash/maphash"
	"strings"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
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

// matchAt is the length of the longest hunted value at s[i:], 0 when none starts there:
// the window of each length its prefix leads to is hashed once, longest first.
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
	st := x.starter(w)
	if st == nil {
		return 0
	}
	for _, n := range x.lengths[st.from:st.to] {
		if end := i + int(n); end <= len(s) && x.holds(v.fingerprints, maphash.String(hashSeed, s[i:end]), w, n) {
			return int(n)
		}
	}
	return 0
}

// scrubJSON scrubs a JSON document of vals so that it still parses: an occurrence inside a
// string token becomes Scrubbed (the whole token becomes "[redacted]" if the cut split an
// escape), and a number token holding one becomes the string "[redacted]". Past a token
// that does not parse, the rest is scrubbed as text.
func scrubJSON(doc string, vals *Values) (string, int) {
	if !vals.Holds(doc) {
		return doc, 0
	}
	var b strings.Builder
	done, n := 0, 0
	replace := func(from, to int, text string) {
		if b.Len() == 0 {
			b.Grow(len(doc))
		}
		b.WriteString(doc[done:from])
		b.WriteString(text)
		done = to
	}
	const scrubbedToken = `"` + Scrubbed + `"`
	for i := 0; i < len(doc); {
		var end int
		var ok bool
		switch c := doc[i]; {
		case c == '"':
			if end, ok = stringEnd(doc, i); !ok {
				break
			}
			if s, k := vals.Scrub(doc[i+1 : end-1]); k > 0 {
				tok := `"` + s + `"`
				if e, valid := stringEnd(tok, 0); !valid || e != len(tok) {
					tok = scrubbedToken
				}
				replace(i, end, tok)
				n += k
			}
		case c == '-' || c >= '0' && c <= '9':
			if end, ok = scalarEnd(doc, i); ok && vals.Holds(doc[i:end]) {
				replace(i, end, scrubbedToken)
				n++
			}
		default:
			end, ok = i+1, true
		}
		if !ok {
			rest, k := vals.Scrub(doc[i:])
			replace(i, len(doc), rest)
			return b.String(), n + k
		}
		i = end
	}
	if n == 0 {
		return doc, 0
	}
	b.WriteString(doc[done:])
	return b.String(), n
}

// Map scrubs an attribute map (a resource's or a scope's) of vals and returns the
// replacements made.
func (r *Redactor) Map(m pcommon.Map, vals *Values) int { return scrubMap(m, vals) }

// Scope scrubs an instrumentation scope (its name, version and attributes) of vals and
// returns the replacements made.
func (r *Redactor) Scope(scope pcommon.InstrumentationScope, vals *Values) int {
	n := scrubMap(scope.Attributes(), vals)
	if s, k := vals.Scrub(scope.Name()); k > 0 {
		scope.SetName(s)
		n += k
	}
	if s, k := vals.Scrub(scope.Version()); k > 0 {
		scope.SetVersion(s)
		n += k
	}
	return n
}

// ScopeHolds reports whether the name, version or an attribute of scope holds one of vals.
func ScopeHolds(scope pcommon.InstrumentationScope, vals *Values) bool {
	return vals.Holds(scope.Name()) || vals.Holds(scope.Version()) || Holds(scope.Attributes(), vals)
}

// Holds reports whether a string of m holds one of vals.
func Holds(m pcommon.Map, vals *Values) bool {
	if vals.Len() == 0 {
		return false
	}
	for _, v := range m.All() {
		if valueHolds(v, vals, 0) {
			return true
		}
	}
	return false
}

func valueHolds(v pcommon.Value, vals *Values, depth int) bool {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return vals.Holds(v.Str())
	case pcommon.ValueTypeMap:
		if depth < maxDepth {
			for _, e := range v.Map().All() {
				if valueHolds(e, vals, depth+1) {
					return true
				}
			}
		}
	case pcommon.ValueTypeSlice:
		if depth < maxDepth {
			for _, e := range v.Slice().All() {
				if valueHolds(e, vals, depth+1) {
					return true
				}
			}
		}
	}
	return false
}

// scrubMap scrubs the strings of m but for retry_storm's own annotations, which hold
// only what the analysis derived (hashes, call keys, tool names, the summary record). An
// attribute a client set under retry_storm's namespace never gets here (package inbound
// removes it on arrival) but for the configuration's inputs, which are scrubbed like any.
func scrubMap(m pcommon.Map, vals *Values) int {
	n := 0
	for k, v := range m.All() {
		if stormrecord.Written(k) {
			continue
		}
		n += scrubValue(v, vals, 0)
	}
	return n
}

func scrubValue(v pcommon.Value, vals *Values, depth int) int {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		if s, n := vals.Scrub(v.Str()); n > 0 {
			v.SetStr(s)
			return n
		}
	case pcommon.ValueTypeMap:
		if depth < maxDepth {
			return scrubMapDepth(v.Map(), vals, depth+1)
		}
	case pcommon.ValueTypeSlice:
		n := 0
		if depth < maxDepth {
			for _, e := range v.Slice().All() {
				n += scrubValue(e, vals, depth+1)
			}
		}
		return n
	}
	return 0
}

func scrubMapDepth(m pcommon.Map, vals *Values, depth int) int {
	n := 0
	for _, v := range m.All() {
		n += scrubValue(v, vals, depth)
	}
	return n
}
