package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/klauspost/compress/s2"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/spanset"
)

// Packing. Decoded, a span is some 45 heap objects the garbage collector marks at every
// collection while it waits; encoded as OTLP and compressed it is one pointer-free byte run
// it neither marks nor scans, in about a tenth of the heap the decoded span takes. Spans are packed where they will wait
// and most will be dropped unread:
//   - a trace proven clean on its root's arrival (triageAtRoot), held for root_grace only in
//     case a straggler voids that verdict, when it will wait compactHold or more
//     (waitsLong);
//   - the spans of a trace still waiting for its root compactHold after a piece of it
//     arrived (age). Pieces that arrived meanwhile are packed with it; one arriving after
//     waits compactHold in turn, and is appended. Spans packed before an error span
//     arrived stay packed; the spans of a trace showing one are compacted instead.
//
// Packed spans are decoded again only when they must be read: the trace's root arrives
// (triageAtRoot triages the whole trace), memory pressure or its decision examines it, or
// sampling keeps it. Dropped, as most are, their bytes are simply let go. Encoding costs
// about what the collections it spares cost over a few seconds, so nothing is packed that
// is decided sooner than compactHold: under the default 2s root_grace a trace that arrives
// whole is held as it came. Compressing the encoding spares no more collection work (the
// bytes are not scanned either way) but most of the heap: about 700 ns a span more for a
// sixth of the bytes (BenchmarkPackUnpack), worth it for spans held that long.

// agingTrace is an entry of the aging queue: a trace without a root that received spans at.
type agingTrace[V, K any] struct {
	pt *pendingTrace[V, K]
	at time.Time
}

// age makes compact the traces still waiting for their root compactHold after a piece of
// them arrived, unless their decision is less than compactHold away: packed, or, for a
// trace that shows an error span or that memory pressure set aside (it will be analysed
// and most likely kept), its attributes compacted.
func (s *shard[V, K]) age(now time.Time) {
	for {
		e, ok := s.aging.Front()
		if !ok || e.at.Add(compactHold).After(now) {
			return
		}
		s.aging.Pop()
		pt := e.pt
		pt.aging = false
		switch {
		case pt.state == decided || !pt.rootAt.IsZero() || !s.waitsLong(pt, now):
		case pt.errorSeen || pt.state == signalled:
			s.compact(pt)
		default:
			s.pack(pt)
		}
	}
}

// pack encodes the spans of pt's set as one OTLP request, compresses it (S2, about a sixth
// of the OTLP size for agent spans, at some 1.8 GB/s) and appends it to what pt holds packed
// as one frame, then lets go of the decoded spans. Should encoding fail (pdata always
// encodes), the spans stay decoded.
func (s *shard[V, K]) pack(pt *pendingTrace[V, K]) {
	if pt.set.Len() == 0 {
		return
	}
	td := ptrace.NewTraces()
	var w spanset.Writer
	w.Reset(td)
	for _, p := range pt.set.Parts {
		for _, span := range p.Spans {
			w.Move(p.Origin, span)
		}
	}
	b, err := s.sizer.MarshalTraces(td)
	if err == nil && s2.MaxEncodedLen(len(b)) < 0 {
		err = s2.ErrTooLarge
	}
	if err != nil {
		// The spans moved into td, in the order they were noted: hold them from there.
		pt.set, pt.compacted = spanset.FromTraces(td), 0
		s.logger.Debug("kept spans decoded: encoding failed", zap.Error(err))
		return
	}
	s.packScratch = s2.Encode(s.packScratch[:cap(s.packScratch)], b)
	if pt.packed == nil {
		pt.packed = make([]byte, 0, binary.MaxVarintLen64+len(s.packScratch))
	}
	// Appended with room to grow (no pointers in it to scan): a trace that gets a piece
	// every few seconds for an hour is not copied whole at each.
	pt.packed = binary.AppendUvarint(pt.packed, uint64(len(s.packScratch)))
	pt.packed = append(pt.packed, s.packScratch...)
	s.packScratch = keepScratch(s.packScratch)
	pt.packedSpans += pt.set.Len()
	pt.set, pt.compacted = spanset.Set{}, 0
	s.verdict.ForgetNotes(&pt.notes)
}

// unpack decodes pt's packed spans back into its set, ahead of the spans that arrived
// after them, with their arrival notes. Bytes pack wrote always decode; were they not to,
// the spans are counted as dropped (cause unpack_error) and the trace goes on without
// them.
func (s *shard[V, K]) unpack(pt *pendingTrace[V, K]) {
	if pt.packed == nil {
		return
	}
	// The frames decompressed one after another are OTLP requests one after another, which
	// decode as one.
	raw, err := unframe(s.unpackScratch[:0], pt.packed)
	var td ptrace.Traces
	if err == nil {
		td, err = s.unpacker.UnmarshalTraces(raw) // copies what it keeps
	}
	s.unpackScratch = keepScratch(raw)
	lost := pt.packedSpans
	pt.packed, pt.packedSpans = nil, 0
	if err != nil {
		s.tel.droppedSpans(DropUnpackError, int64(lost))
		if pt.state != decided { // a decided trace left the span count already
			s.spans -= int64(lost)
		}
		s.logger.Error("dropped the spans of a buffered trace that could not be decoded again", zap.Error(err))
		return
	}
	set := spanset.FromTraces(td)
	s.verdict.Note(&pt.notes, &set, true)
	set.Add(pt.set)
	pt.set, pt.compacted = set, 0
}

// errBadFrame: packed bytes that pack did not write.
var errBadFrame = errors.New("packed spans: bad frame")

// unframe appends to dst the OTLP bytes the frames of packed decompress to.
func unframe(dst, packed []byte) ([]byte, error) {
	for len(packed) > 0 {
		block, rest, err := nextFrame(packed)
		if err != nil {
			return dst, err
		}
		packed = rest
		size, err := s2.DecodedLen(block)
		if err != nil {
			return dst, err
		}
		start := len(dst)
		dst = slices.Grow(dst, size)[:start+size]
		if _, err := s2.Decode(dst[start:], block); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// packedSize is the OTLP size of the spans pt holds packed.
func packedSize(packed []byte) int64 {
	var total int64
	for len(packed) > 0 {
		block, rest, err := nextFrame(packed)
		if err != nil {
			return total
		}
		packed = rest
		if size, err := s2.DecodedLen(block); err == nil {
			total += int64(size)
		}
	}
	return total
}

// nextFrame splits the first frame's compressed block off packed.
func nextFrame(packed []byte) (block, rest []byte, err error) {
	n, k := binary.Uvarint(packed)
	if k <= 0 || n > uint64(len(packed)-k) {
		return nil, nil, errBadFrame
	}
	return packed[k : k+int(n)], packed[k+int(n):], nil
}

// maxScratch bounds the pack and unpack scratch space a shard keeps between traces: one
// huge trace must not pin its bytes for the life of the shard.
const maxScratch = 1 << 20

// keepScratch is b emptied for reuse, or nil when it grew past maxScratch.
func keepScratch(b []byte) []byte {
	if cap(b) > maxScratch {
		return nil
	}
	return b[:0]
}
