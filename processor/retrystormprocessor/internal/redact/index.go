package redact

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// valueIndex finds the fingerprints a window of text may start. Values often share their
// first k bytes (URLs at one host, ids with one prefix, all the forms of one value), so it
// does not list fingerprints by prefix: a prefix leads to the few lengths its fingerprints
// have, and a window is hashed once per length and looked up by its hash. What a candidate
// position costs then grows with the distinct lengths behind its prefix, not with the
// fingerprints.
type valueIndex struct {
	// starts indexes the distinct prefixes: open addressing, len a power of two, each slot
	// an index into starters plus one (0 is empty).
	starts     []int32
	startShift uint8
	starters   []starter
	// lengths holds each starter's distinct fingerprint lengths, longest first.
	lengths []uint32
	// sums indexes fingerprints by the hash of the whole form, the same way.
	sums     []int32
	sumShift uint8
	// skip[h] is how far a window of k bytes may move on when the hash h of its last two
	// bytes says no value's prefix can start in it before that (Wu and Manber's block
	// shift).
	skip []uint8
}

// starter is one distinct prefix: its fingerprints' lengths are lengths[from:to].
type starter struct {
	prefix   uint64
	from, to uint32
}

// shiftBits sizes the shift table: 4096 entries of a byte.
const shiftBits = 12

func blockHash(a, b byte) uint32 { return (uint32(a)<<8 | uint32(b)) * 0x9E3779B1 >> (32 - shiftBits) }

func mix(x uint64) uint64 { return x * 0x9E3779B97F4A7C15 }

// openTable is an empty open-addressing table for n entries, at most half full, and the
// shift that takes a 64-bit hash to its slot.
func openTable(n int) ([]int32, uint8) {
	size := 8
	for size < 2*n {
		size <<= 1
	}
	return make([]int32, size), uint8(64 - bits.Len(uint(size-1)))
}

// index returns the values' index, built on first use.
func (v *Values) index() *valueIndex {
	if v.idx != nil {
		return v.idx
	}
	x := &valueIndex{}
	x.indexStarters(v.fingerprints)
	x.sums, x.sumShift = openTable(len(v.fingerprints))
	mask := uint64(len(x.sums) - 1)
	for i, p := range v.fingerprints {
		for slot := p.sum >> x.sumShift; ; slot = (slot + 1) & mask {
			if x.sums[slot] == 0 {
				x.sums[slot] = int32(i + 1)
				break
			}
		}
	}
	x.skip = skipTable(v.fingerprints, v.k)
	v.idx = x
	return x
}

// indexStarters fills starts, starters and lengths from the fingerprints. Sorting their
// prefixes first sizes starts by the distinct ones, far fewer than the fingerprints when
// values share their beginnings.
func (x *valueIndex) indexStarters(fingerprints []valueFingerprint) {
	keys := make([]uint64, len(fingerprints))
	for i, p := range fingerprints {
		keys[i] = p.prefix
	}
	slices.Sort(keys)
	prefixes := slices.Compact(keys)
	x.starters = make([]starter, len(prefixes))
	x.starts, x.startShift = openTable(len(prefixes))
	mask := uint64(len(x.starts) - 1)
	for i, prefix := range prefixes {
		x.starters[i].prefix = prefix
		slot := mix(prefix) >> x.startShift
		for ; x.starts[slot] != 0; slot = (slot + 1) & mask {
		}
		x.starts[slot] = int32(i + 1)
	}
	// A fingerprint's key is its starter then its length, longest first: sorted, each
	// starter's distinct lengths are together and in order.
	keys = keys[:len(fingerprints)]
	for i, p := range fingerprints {
		keys[i] = uint64(x.find(p.prefix)-1)<<32 | uint64(^p.n)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	x.lengths = make([]uint32, len(keys))
	for i, key := range keys {
		st := &x.starters[key>>32]
		if st.to == 0 {
			st.from = uint32(i)
		}
		st.to = uint32(i + 1)
		x.lengths[i] = ^uint32(key)
	}
}

// skipTable is the block shift table of fingerprints of k-byte prefixes: a two-byte block
// ending at offset j of a prefix allows a shift of k-1-j at most.
func skipTable(fingerprints []valueFingerprint, k int) []uint8 {
	skip := make([]uint8, 1<<shiftBits)
	for i := range skip {
		skip[i] = uint8(k - 1)
	}
	var buf [8]byte
	for _, p := range fingerprints {
		binary.LittleEndian.PutUint64(buf[:], p.prefix)
		for j := 1; j < k; j++ {
			h := blockHash(buf[j-1], buf[j])
			if sh := uint8(k - 1 - j); sh < skip[h] {
				skip[h] = sh
			}
		}
	}
	return skip
}

// starter is the starter of prefix w, nil when no fingerprint begins so.
func (x *valueIndex) starter(w uint64) *starter {
	if e := x.find(w); e > 0 {
		return &x.starters[e-1]
	}
	return nil
}

// find is the index of the starter of prefix w plus one, 0 when there is none.
func (x *valueIndex) find(w uint64) int32 {
	mask := uint64(len(x.starts) - 1)
	for slot := mix(w) >> x.startShift; ; slot = (slot + 1) & mask {
		if e := x.starts[slot]; e == 0 || x.starters[e-1].prefix == w {
			return e
		}
	}
}

// holds reports whether a fingerprint of prefix w and length n has the hash sum.
func (x *valueIndex) holds(fingerprints []valueFingerprint, sum uint64, w uint64, n uint32) bool {
	mask := uint64(len(x.sums) - 1)
	for slot := sum >> x.sumShift; ; slot = (slot + 1) & mask {
		e := x.sums[slot]
		if e == 0 {
			return false
		}
		if p := &fingerprints[e-1]; p.sum == sum && p.n == n && p.prefix == w {
			return true
		}
	}
}
