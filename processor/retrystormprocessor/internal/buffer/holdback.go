package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/spanset"
)

// Calls held back across a provisional decision (the verdict's holdback.go picks them)
// begin the rest of their trace.

// holdRest buffers the spans held back at a provisional decision as the rest of the trace,
// a new pending trace that later spans join. They were received and counted with the part.
func (s *shard[V, K]) holdRest(id pcommon.TraceID, set *spanset.Set, rest *provisionalRest[K]) {
	at := s.lastArrival
	pt := &pendingTrace[V, K]{id: id, set: *set, first: at, input: s.inputs, rest: rest}
	_, _, pt.errorSeen = s.verdict.Note(&pt.notes, &pt.set, false)
	pt.bytes = pt.set.Size(&s.sizer)
	s.traces[id] = pt
	s.arrivals.Push(pt)
	s.bytes += pt.bytes
	s.spans += int64(pt.set.Len())
	if s.cfg.decisionWait > compactHold {
		pt.aging = true
		s.aging.Push(agingTrace[V, K]{pt: pt, at: at})
	}
}
