package toolspan

import (
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

// Glance is what a cheap first look at a tool span reads: everything Extract reads except
// the payload digests and the remap plan, so nothing is hashed and no JSON is decoded.
type Glance struct {
	// Attempt holds identity, number, costs, side effect, outcome and the present fields;
	// ArgsHash, ResultHash, IdemHash, Remap and RedactKeys are left empty, and the hash
	// bits of Present are not set.
	Attempt
	// Idem identifies the idempotency key without hashing it: the given hash or the raw
	// key, prefixed by which it is ("h:" or "k:"); "" when the span carries neither.
	Idem string
	// Sure is false when the outcome cannot be told without decoding the result: its
	// payload may hold an isError flag. Status is then the outcome without that flag.
	Sure bool
	// HasResult is true when the span carries a result: Attempt.ResultFingerprint is then set,
	// exactly as Extract sets it.
	HasResult bool
}

// Glance reads span the cheap way (see Glance).
func (x *Extractor) Glance(span ptrace.Span) Glance {
	g := Glance{Sure: true}
	a := &g.Attempt
	a.Span = span
	a.SpanID, a.ParentID = span.SpanID(), span.ParentSpanID()
	a.setTimes(span)
	attrs := x.index.load(span)
	x.readIdentity(a, span.Name(), attrs)
	x.readCosts(a, attrs)
	if s, ok := x.firstString(attrs, x.idemHash); ok && s != "" {
		g.Idem = "h:" + s
	} else if s, ok := x.firstString(attrs, x.idemKey); ok && s != "" {
		g.Idem = "k:" + s
	}
	ev, _ := x.evidence(a, span, attrs, false)
	if ev.HasResult {
		v, _ := x.resultValue(attrs)
		g.Sure = outcome.FlagFree(v)
	}
	a.Status = outcome.Normalize(ev)
	if a.Status == outcome.OK {
		// Only an ok result is remembered for the stale-cache check.
		h, p := x.resultDigest(attrs, false)
		a.ResultFingerprint, g.HasResult = p, h != ""
	}
	return g
}

// resultDigest reads the given result hash, else the first result source present, and
// returns its digest (when digest is set; otherwise a non-empty placeholder) and fingerprint.
func (x *Extractor) resultDigest(attrs attrs, digest bool) (string, uint64) {
	if s, ok := x.firstString(attrs, x.resultHash); ok && s != "" {
		return s, payload.TextFingerprint(s)
	}
	for _, src := range x.result {
		if v, ok := attrs.get(src); ok {
			if !digest {
				if p, ok := x.hasher.ResultFingerprint(v, src.Path); ok {
					return "-", p
				}
			} else if h, p, ok := x.hasher.ResultDigest(v, src.Path); ok {
				return h, p
			}
		}
	}
	return "", 0
}

// ArgsDigest is the attempt's args hash exactly as Extract computes it.
func (x *Extractor) ArgsDigest(span ptrace.Span) string {
	attrs := spanAttrs(span)
	if s, ok := x.firstString(attrs, x.argsHash); ok && s != "" {
		return s
	}
	h, _ := x.firstDigest(x.argumentSources(attrs))
	return h
}

// ArgsIdentity tells attempts' args hashes apart without computing them. given is the hash
// the span carries, as ArgsDigest returns it; otherwise fingerprint is the one
// (Hasher.DigestFingerprint) of the canonical JSON ArgsDigest would hash, and found is
// false where no argument source yields one and ArgsDigest returns "".
func (x *Extractor) ArgsIdentity(span ptrace.Span) (given string, fingerprint uint64, found bool) {
	attrs := spanAttrs(span)
	if s, ok := x.firstString(attrs, x.argsHash); ok && s != "" {
		return s, 0, true
	}
	for v, src := range x.argumentSources(attrs) {
		if p, ok := x.hasher.DigestFingerprint(v, src.Path); ok {
			return "", p, true
		}
	}
	return "", 0, false
}
