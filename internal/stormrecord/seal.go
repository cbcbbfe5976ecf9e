package stormrecord

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// AttrSeal carries the processor's seal on each span it annotated: an HMAC, under a key
// the collector process draws at start and never writes anywhere, of what the storm_summary
// exporter and the storms connector read of the span (its ids, the annotations SealedKeys
// lists, its finding events' kinds, whether it is a late-finding span). A reader in the same
// process takes a span's annotations only when the seal matches, so neither a client that
// reaches a pipeline without retry_storm nor one that copied a seal off a backend can
// make it read what the processor did not write (processor README, "Security").
const AttrSeal = "retrystorm.seal"

// SealedKeys are the annotations readers read, in the order the seal covers them.
var SealedKeys = [...]string{
	AttrCallKey, AttrCallTool, AttrCallAttempt, AttrCallAttempts, AttrCallLayer, AttrCallStorm,
	AttrCallClass, AttrStatus, AttrStatusRemap, AttrCallSummary, AttrFindingSummary,
}

// sealKey is this process's seal key: processor, exporter and connector share it because
// they share the process, and nothing else has it.
var sealKey = func() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic("draw the retrystorm seal key: " + err.Error())
	}
	return k
}()

// sealDomain keeps the seal's input apart from any other use of the key.
const sealDomain = "retrystorm.seal/v1\x00"

// sealBytes is how much of the HMAC the seal keeps: 128 bits.
const sealBytes = 16

// SealState is what Check finds on a span.
type SealState int

const (
	// Unannotated: the span carries nothing readers read.
	Unannotated SealState = iota
	// Sealed: what readers read is the processor's.
	Sealed
	// Unsealed: the span carries annotations without a seal that matches them.
	Unsealed
)

// Sealer seals and checks spans; one is not safe for concurrent use.
type Sealer struct {
	mac  hash.Hash
	buf  []byte
	vals [len(SealedKeys)]pcommon.Value
	seal pcommon.Value
}

// NewSealer returns a Sealer under this process's key.
func NewSealer() *Sealer {
	return &Sealer{mac: hmac.New(sha256.New, sealKey)}
}

// Seal writes span's seal when it carries an annotation readers read and reports whether
// it did. The processor calls it on every span it forwards, after the last annotation.
func (s *Sealer) Seal(span ptrace.Span) bool {
	if !s.gather(span) {
		if s.seal != (pcommon.Value{}) {
			span.Attributes().Remove(AttrSeal)
		}
		return false
	}
	sum := s.sum(span)
	span.Attributes().PutStr(AttrSeal, hex.EncodeToString(sum))
	return true
}

// Check reports whether span carries annotations readers read and, if so, whether its
// seal matches them.
func (s *Sealer) Check(span ptrace.Span) SealState {
	if !s.gather(span) {
		return Unannotated
	}
	if s.seal == (pcommon.Value{}) || s.seal.Type() != pcommon.ValueTypeStr {
		return Unsealed
	}
	got, err := hex.DecodeString(s.seal.Str())
	if err != nil || len(got) != sealBytes || subtle.ConstantTimeCompare(got, s.sum(span)) != 1 {
		return Unsealed
	}
	return Sealed
}

// gather reads the span's sealed annotations and seal, the first of a repeated key as
// pcommon.Map.Get reads it, and reports whether there is any annotation (or the span is a
// late-finding span, whose name alone tells the connector something).
func (s *Sealer) gather(span ptrace.Span) bool {
	s.vals = [len(SealedKeys)]pcommon.Value{}
	s.seal = pcommon.Value{}
	annotated := span.Name() == LateFindingSpan
	for k, v := range span.Attributes().All() {
		if len(k) < len(Prefix) || k[0] != Prefix[0] || k[:len(Prefix)] != Prefix {
			continue
		}
		if k == AttrSeal {
			if s.seal == (pcommon.Value{}) {
				s.seal = v
			}
			continue
		}
		for i, sk := range SealedKeys {
			if k == sk {
				if s.vals[i] == (pcommon.Value{}) {
					s.vals[i] = v
					annotated = true
				}
				break
			}
		}
	}
	return annotated
}

// sum is the seal of what gather read.
func (s *Sealer) sum(span ptrace.Span) []byte {
	b := append(s.buf[:0], sealDomain...)
	tid, sid := span.TraceID(), span.SpanID()
	b = append(b, tid[:]...)
	b = append(b, sid[:]...)
	if span.Name() == LateFindingSpan {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	for i, v := range s.vals {
		if v == (pcommon.Value{}) {
			continue
		}
		b = append(b, byte(i+1))
		b = appendValue(b, v)
	}
	for _, ev := range span.Events().All() {
		if ev.Name() != FindingEvent {
			continue
		}
		b = append(b, 0xfe)
		if kind, ok := ev.Attributes().Get(FindingKind); ok {
			b = appendValue(b, kind)
		}
	}
	s.buf = b
	s.mac.Reset()
	s.mac.Write(b)
	return s.mac.Sum(nil)[:sealBytes]
}

// appendValue writes v's type and value, each length-prefixed, so no two values write the
// same bytes.
func appendValue(b []byte, v pcommon.Value) []byte {
	b = append(b, byte(v.Type()))
	switch v.Type() {
	case pcommon.ValueTypeEmpty:
		return b
	case pcommon.ValueTypeInt:
		return binary.BigEndian.AppendUint64(b, uint64(v.Int()))
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return append(b, 1)
		}
		return append(b, 0)
	case pcommon.ValueTypeDouble:
		return binary.BigEndian.AppendUint64(b, math.Float64bits(v.Double()))
	case pcommon.ValueTypeStr:
		b = binary.AppendUvarint(b, uint64(len(v.Str())))
		return append(b, v.Str()...)
	}
	s := v.AsString()
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// Seal seals span with a Sealer of its own: for tests and tools that build annotated
// spans by hand, as the processor would leave them.
func Seal(span ptrace.Span) bool { return NewSealer().Seal(span) }
