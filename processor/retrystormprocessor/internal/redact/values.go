package redact

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

// Values is the set of raw payload values of a trace's tool attempts that scrubbing hunts
// in every string of the trace. It holds fingerprints only, never the values: it is kept
// with a kept trace's decision for its late spans, and a cache of decisions should hold
// no payload.
type Values struct {
	// fingerprints are the forms of the values, each value's forms together, the first
	// marked.
	fingerprints []valueFingerprint
	// values is how many values the fingerprints are the forms of; limit is the most that
	// are hunted (Config.MaxValues), kept for Merge.
	values, limit int
	// k is how many leading bytes of a value the prefix holds: the minimum length, at most 8.
	k int
	// hashed are the payload texts whose copies are marked with their attempt's hash, not
	// their own (hashed.go): kept with the fingerprints, so a kept trace's late spans mark
	// copies as its spans did.
	hashed []hashedText
	// followed is where following the model found payloads nobody listed, kept for the
	// trace's late spans.
	followed *Followed
	// idx is built on the first scan, and not kept by Clone: a decision cache holds only
	// the fingerprints.
	idx *valueIndex
}

// valueFingerprint is one hunted form of a value: the first prefixLen bytes as an integer,
// the length and a hash of the whole.
type valueFingerprint struct {
	prefix uint64
	n      uint32
	// first marks a value's first form: Merge adds or leaves out a value's forms together.
	first bool
	sum   uint64
}

// hashSeed is fixed for the process: fingerprints are compared within one process only.
var hashSeed = maphash.MakeSeed()

// Len is the number of values hunted.
func (v *Values) Len() int {
	if v == nil {
		return 0
	}
	return len(v.fingerprints)
}

// collector gathers the values of one trace before they are indexed.
type collector struct {
	minLen int
	// limit is the most distinct leaves hunted; later ones are only counted, in over.
	limit int
	// seen holds the forms added, leaves the leaves met (true: hunted, false: past the
	// limit), read the attribute strings read.
	seen         map[uint64]struct{}
	leaves       map[uint64]bool
	read         map[uint64]struct{}
	hunted       int
	over         int
	fingerprints []valueFingerprint
	hashed       []hashedText
	excluded     []uint64
	// unquoted holds the strings decoded at each depth of a document, while they are read.
	unquoted [][]byte
}

// scratch is where a string of a document at depth is decoded.
func (c *collector) scratch(depth int) *[]byte {
	for len(c.unquoted) <= depth {
		c.unquoted = append(c.unquoted, nil)
	}
	return &c.unquoted[depth]
}

func (c *collector) reset(minLen, limit int) {
	c.minLen, c.limit = minLen, limit
	clear(c.seen)
	clear(c.read)
	clear(c.leaves)
	c.hunted, c.over = 0, 0
	c.fingerprints = c.fingerprints[:0]
	c.hashed = c.hashed[:0]
	c.excluded = c.excluded[:0]
}

func (c *collector) exclude(s string) {
	if s = strings.TrimSpace(s); s != "" {
		c.excluded = append(c.excluded, maphash.String(hashSeed, s))
	}
}

// dropExcluded removes the excluded values as they are (a tool name has no escaped form
// in a span name), and from the leaves past the limit: they are not hunted by choice. An
// excluded leaf within the limit keeps its place: the tool names are known only once the
// tool spans are read.
func (c *collector) dropExcluded() {
	if len(c.excluded) == 0 {
		return
	}
	slices.Sort(c.excluded)
	c.excluded = slices.Compact(c.excluded)
	for _, sum := range c.excluded {
		if hunted, ok := c.leaves[sum]; ok && !hunted {
			c.over--
		}
	}
	kept := c.fingerprints[:0]
	carry := false // the value's first form was dropped: the next of its forms is first
	for _, p := range c.fingerprints {
		if _, excluded := slices.BinarySearch(c.excluded, p.sum); excluded {
			carry = carry || p.first
			continue
		}
		p.first = p.first || carry
		carry = false
		kept = append(kept, p)
	}
	c.fingerprints = kept
}

// addValue adds the leaves of an attribute value: the value itself when it is not a JSON
// container, else every string and number leaf inside (JSON strings that hold JSON in turn
// are opened too).
func (c *collector) addValue(v pcommon.Value, depth int) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		if c.firstRead(v.Str()) {
			c.addText(v.Str(), depth)
		}
	case pcommon.ValueTypeInt:
		c.addLeaf(strconv.FormatInt(v.Int(), 10))
	case pcommon.ValueTypeDouble:
		c.addLeaf(v.AsString())
	case pcommon.ValueTypeMap:
		if depth < maxDepth {
			for _, e := range v.Map().All() {
				c.addValue(e, depth+1)
			}
		}
	case pcommon.ValueTypeSlice:
		if depth < maxDepth {
			for _, e := range v.Slice().All() {
				c.addValue(e, depth+1)
			}
		}
	}
}

// firstRead reports whether the attribute string s is read for the first time in the
// trace: attempts of one call repeat their arguments, and a string read before is skipped.
func (c *collector) firstRead(s string) bool {
	sum := maphash.String(hashSeed, s)
	if _, dup := c.read[sum]; dup {
		return false
	}
	if c.read == nil {
		c.read = map[uint64]struct{}{}
	}
	c.read[sum] = struct{}{}
	return true
}

// addText adds a string: its JSON leaves when it holds a JSON container, else itself.
// A document that does not parse is read token by token all the same: at worst a few
// more values are hunted.
func (c *collector) addText(s string, depth int) {
	if payload.LooksLikeJSONContainer(s) && depth < maxDepth {
		c.addJSON(s, depth+1)
		return
	}
	c.addLeaf(s)
}

// addRaw adds the leaves of raw, a JSON value read in a document at depth: a string
// decoded (and opened if it holds JSON), a container's leaves, a number itself.
func (c *collector) addRaw(raw string, depth int) {
	switch {
	case raw[0] == '"':
		scratch := c.scratch(depth)
		str, grown, _ := payload.UnquoteScratch(raw, *scratch)
		*scratch = grown
		c.addText(str, depth)
	case raw[0] == '{' || raw[0] == '[':
		if depth < maxDepth {
			c.addJSON(raw, depth+1)
		}
	default:
		c.addLeaf(raw)
	}
}

// addJSON adds the string and number leaves of a JSON document, member keys aside, in
// one pass over its tokens (their nesting does not matter here).
func (c *collector) addJSON(s string, depth int) {
	for i := 0; i < len(s); {
		switch b := s[i]; {
		case b == '"':
			end, ok := stringEnd(s, i)
			if !ok {
				return
			}
			if j := skipSpace(s, end); j >= len(s) || s[j] != ':' {
				// Decoded into this depth's scratch: a leaf is kept as its hashes only.
				scratch := c.scratch(depth)
				str, grown, _ := payload.UnquoteScratch(s[i:end], *scratch)
				*scratch = grown
				c.addText(str, depth)
			}
			i = end
		case b == '-' || b >= '0' && b <= '9':
			end, ok := scalarEnd(s, i)
			if !ok {
				return
			}
			c.addLeaf(s[i:end])
			i = end
		default:
			i++
		}
	}
}

// addLeaf adds one leaf, with every distinct form it can take in another string, when it
// is long enough to be hunted; past the limit it is only counted.
func (c *collector) addLeaf(s string) {
	s = strings.TrimSpace(s)
	if len(s) < c.minLen {
		return
	}
	if c.seen == nil {
		c.seen = map[uint64]struct{}{}
	}
	leaf := maphash.String(hashSeed, s)
	if _, dup := c.leaves[leaf]; dup {
		return // its forms were added with it, or it was counted
	}
	if c.leaves == nil {
		c.leaves = map[uint64]bool{}
	}
	if c.hunted >= c.limit {
		c.leaves[leaf] = false
		c.over++
		return
	}
	c.leaves[leaf] = true
	c.hunted++
	first := true
	differs := escapesOf(s)
	if len(s) > maxURLValue {
		differs &^= 1<<4 | 1<<5
	}
	for i, form := range variants {
		f := s
		if i > 0 {
			if differs&(1<<i) == 0 {
				continue
			}
			if f = form(s); f == s {
				continue
			}
		}
		sum := leaf // the value as it is: its hash is the leaf's
		if i > 0 {
			sum = maphash.String(hashSeed, f)
		}
		if _, dup := c.seen[sum]; dup {
			continue
		}
		c.seen[sum] = struct{}{}
		c.fingerprints = append(c.fingerprints, valueFingerprint{prefix: prefixOf(f, c.minLen), n: uint32(len(f)), first: first, sum: sum})
		first = false
	}
}

// prefixOf is the first k bytes of s (k at most 8) as a little-endian integer.
func prefixOf(s string, k int) uint64 {
	if k >= 8 {
		return binary.LittleEndian.Uint64([]byte(s[:8]))
	}
	var buf [8]byte
	copy(buf[:], s[:k])
	return binary.LittleEndian.Uint64(buf[:])
}

// build indexes what c gathered into v.
func (c *collector) build(v *Values) {
	v.fingerprints = append(v.fingerprints[:0], c.fingerprints...)
	v.values = 0
	for _, p := range v.fingerprints {
		if p.first {
			v.values++
		}
	}
	v.hashed = append(v.hashed[:0], c.hashed...)
	v.limit = c.limit
	v.k = min(c.minLen, 8)
	v.idx = nil
}

// Unindexed drops the index v's scans built, and returns v: a decision cache keeps the
// fingerprints alone, not several KB of tables a trace; a later scan builds the index again.
func (v *Values) Unindexed() *Values {
	if v != nil {
		v.idx = nil
	}
	return v
}

// Indexed reports whether v holds the index its scans built.
func (v *Values) Indexed() bool { return v != nil && v.idx != nil }

// Clone is a copy of v that shares nothing with it, to keep with a decision.
func (v *Values) Clone() *Values {
	if v.empty() {
		return nil
	}
	return &Values{fingerprints: slices.Clone(v.fingerprints), hashed: slices.Clone(v.hashed), values: v.values, limit: v.limit, k: v.k,
		followed: v.followed.clone()}
}

// empty reports whether v holds neither a value to hunt, a hashed text nor followed keys.
func (v *Values) empty() bool {
	return v == nil || len(v.fingerprints) == 0 && len(v.hashed) == 0 && v.followed.empty()
}

// Followed is where following the model found what no configuration lists: the
// attributes that held message structures, and, on the tool spans it found, the
// attributes that held their payload, with the tools' names. A kept trace's late spans
// are redacted by them as its spans were.
type Followed struct {
	MessageKeys, PayloadKeys, Tools []string
}

func (f *Followed) empty() bool {
	return f == nil || len(f.MessageKeys) == 0 && len(f.PayloadKeys) == 0
}

func (f *Followed) clone() *Followed {
	if f.empty() {
		return nil
	}
	return &Followed{MessageKeys: slices.Clone(f.MessageKeys), PayloadKeys: slices.Clone(f.PayloadKeys), Tools: slices.Clone(f.Tools)}
}

// merge adds other's keys and tools to f's.
func (f *Followed) merge(other *Followed) *Followed {
	if other.empty() {
		return f
	}
	out := f.clone()
	if out == nil {
		out = &Followed{}
	}
	for _, k := range other.MessageKeys {
		if !slices.Contains(out.MessageKeys, k) {
			out.MessageKeys = append(out.MessageKeys, k)
		}
	}
	for _, k := range other.PayloadKeys {
		if !slices.Contains(out.PayloadKeys, k) {
			out.PayloadKeys = append(out.PayloadKeys, k)
		}
	}
	for _, t := range other.Tools {
		if !slices.Contains(out.Tools, t) {
			out.Tools = append(out.Tools, t)
		}
	}
	return out
}

// Followed returns where following the model found payloads in v's trace (nil: nowhere).
func (v *Values) Followed() *Followed {
	if v == nil {
		return nil
	}
	return v.followed
}

// Merge adds the values of other to v, as many as the limit allows; the values of other
// left out for it, and not already in v, are counted in st.NotHunted.
func (v *Values) Merge(other *Values, st *Stats) *Values {
	if other.empty() {
		return v
	}
	if v.empty() {
		return other.Clone()
	}
	out := v.Clone() // one processor: one minimum length, one limit
	out.hashed = mergeHashed(out.hashed, other.hashed)
	out.followed = out.followed.merge(other.followed)
	known := make(map[uint64]struct{}, len(out.fingerprints)+len(other.fingerprints))
	for _, p := range out.fingerprints {
		known[p.sum] = struct{}{}
	}
	for i := 0; i < len(other.fingerprints); {
		end := i + 1
		for end < len(other.fingerprints) && !other.fingerprints[end].first {
			end++
		}
		forms := other.fingerprints[i:end]
		i = end
		added := false
		for _, p := range forms {
			if _, dup := known[p.sum]; dup {
				continue
			}
			if out.values >= out.limit {
				st.NotHunted++ // a form v lacks: a value v does not hunt
				break
			}
			known[p.sum] = struct{}{}
			p.first = !added
			out.fingerprints = append(out.fingerprints, p)
			added = true
		}
		if added {
			out.values++
		}
	}
	return out
}
