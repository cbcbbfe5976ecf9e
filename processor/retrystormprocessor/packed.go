package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// Packing. About 85% of traces are proven clean when their root arrives (settle) and are
// then held for root_grace only in case a straggler voids that verdict. Decoded, a span is
// some 45 heap objects the garbage collector marks at every collection while it waits;
// encoded as OTLP it is one pointer-free byte run it neither marks nor scans, in about
// two thirds of the heap. A packed trace is decoded again only if a straggler arrives or
// sampling keeps it; dropped, as most are, its bytes are simply let go.
//
// Encoding costs about what the collections it spares cost over a few seconds, so only
// traces that may wait compactHold or longer are packed (as only those are compacted):
// under the default 2s root_grace a settled trace is held as it came.

// pack encodes pt's spans as one OTLP request and lets go of the decoded ones. Should
// encoding fail (pdata always encodes), the spans stay decoded.
func (s *shard) pack(pt *pendingTrace) {
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
		pt.set = piecesSet(td)
		s.logger.Debug("kept a settled trace decoded: encoding failed", zap.Error(err))
		return
	}
	pt.packed, pt.packedSpans = b, pt.set.Len()
	pt.set, pt.arrivals = spanSet{}, nil
}

// unpack decodes a packed trace's spans back into its set, with their arrival notes.
// Bytes pack wrote always decode; were they not to, the spans are counted as dropped
// (cause unpack_error) and the trace goes on without them.
func (s *shard) unpack(pt *pendingTrace) {
	if pt.packed == nil {
		return
	}
	td, err := s.unpacker.UnmarshalTraces(pt.packed)
	lost := pt.packedSpans
	pt.packed, pt.packedSpans = nil, 0
	if err != nil {
		s.tel.droppedSpans(dropUnpackError, int64(lost))
		if !pt.decided { // a decided trace left the span count already
			s.spans -= int64(lost)
		}
		s.logger.Error("dropped the spans of a buffered trace that could not be decoded again", zap.Error(err))
		return
	}
	pt.set = piecesSet(td)
	pt.arrivals = nil
	s.note(pt, &pt.set)
}

// piecesSet is every span of td, which holds one trace, as one set.
func piecesSet(td ptrace.Traces) spanSet {
	var set spanSet
	for _, pc := range splitByTrace(td) {
		set.add(pc.set)
	}
	return set
}
