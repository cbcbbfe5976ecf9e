package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
)

// Packing. Decoded, a span is some 45 heap objects the garbage collector marks at every
// collection while it waits; encoded as OTLP it is one pointer-free byte run it neither
// marks nor scans, in about two thirds of the heap. Spans are packed where they will wait
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
// whole is held as it came.

// agingTrace is an entry of the aging queue: a trace without a root that received spans at.
type agingTrace struct {
	pt *pendingTrace
	at time.Time
}

// age makes compact the traces still waiting for their root compactHold after a piece of
// them arrived, unless their decision is less than compactHold away: packed, or, for a
// trace that shows an error span or that memory pressure set aside (it will be analysed
// and most likely kept), its attributes compacted.
func (s *shard) age(now time.Time) {
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

// pack encodes the spans of pt's set as one OTLP request, appends it to what pt holds
// packed (concatenated OTLP requests decode as one) and lets go of the decoded spans.
// Should encoding fail (pdata always encodes), the spans stay decoded.
func (s *shard) pack(pt *pendingTrace) {
	if pt.set.Len() == 0 {
		return
	}
	td := ptrace.NewTraces()
	var w spanWriter
	w.reset(td)
	for _, p := range pt.set.parts {
		for _, span := range p.spans {
			w.move(p.origin, span)
		}
	}
	b, err := s.sizer.MarshalTraces(td)
	if err != nil {
		// The spans moved into td, in the order they were noted: hold them from there.
		pt.set, pt.compacted = piecesSet(td), 0
		s.logger.Debug("kept spans decoded: encoding failed", zap.Error(err))
		return
	}
	if pt.packed == nil {
		pt.packed = b
	} else {
		// Appended with room to grow (no pointers in it to scan): a trace that gets a piece
		// every few seconds for an hour is not copied whole at each.
		pt.packed = append(pt.packed, b...)
	}
	pt.packedSpans += pt.set.Len()
	pt.set, pt.arrivals, pt.compacted = spanSet{}, nil, 0
}

// unpack decodes pt's packed spans back into its set, ahead of the spans that arrived
// after them, with their arrival notes. Bytes pack wrote always decode; were they not to,
// the spans are counted as dropped (cause unpack_error) and the trace goes on without
// them.
func (s *shard) unpack(pt *pendingTrace) {
	if pt.packed == nil {
		return
	}
	td, err := s.unpacker.UnmarshalTraces(pt.packed)
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
	set := piecesSet(td)
	notes, _, _, _ := s.note(make([]grouping.Arrival, 0, set.Len()+len(pt.arrivals)), &set)
	pt.arrivals = append(notes, pt.arrivals...)
	set.add(pt.set)
	pt.set, pt.compacted = set, 0
}

// piecesSet is every span of td, which holds one trace, as one set.
func piecesSet(td ptrace.Traces) spanSet {
	var set spanSet
	for _, pc := range splitByTrace(td) {
		set.add(pc.set)
	}
	return set
}
