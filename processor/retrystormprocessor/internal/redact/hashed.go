package redact

// hashedText is a payload text whose copies carry its tool attempt's hash rather than
// their own: OpenLLMetry records a LangChain tool's arguments as {"args":["<JSON>"]}, the
// attempt's hash is the list's and a message copies the one string
// (Extractor.HashedTexts). A kept trace's decision remembers these with its fingerprints:
// a fingerprint of the text, never the text, and the hash, which the trace's spans carry
// anyway.
type hashedText struct {
	sum  uint64
	hash string
}

// mergeHashed returns a with the texts of b it lacks.
func mergeHashed(a, b []hashedText) []hashedText {
	known := make(map[uint64]struct{}, len(a))
	for _, h := range a {
		known[h.sum] = struct{}{}
	}
	for _, h := range b {
		if _, dup := known[h.sum]; !dup {
			known[h.sum] = struct{}{}
			a = append(a, h)
		}
	}
	return a
}

// MarkAsHashed makes the rewriting of the trace being redacted mark copies of the texts
// v remembers with their attempts' hashes: the payloads of a kept trace's earlier part,
// for its late spans or its rest.
func (r *Redactor) MarkAsHashed(v *Values) {
	if v == nil {
		return
	}
	for _, h := range v.hashed {
		r.rw.knownSum(h)
	}
}
