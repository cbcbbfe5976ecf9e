package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/held"

// Provisional decisions. A trace decided before it could be seen whole — early under memory
// pressure, or when it outgrew max_trace_bytes — may still be going on: its decision is
// provisional for the rest of the trace. The decision cache marks it so (a mark in the
// dropped set's index, a field of a kept decision: no memory of its own), and spans of it
// arriving later are not handled as late spans but held as a new pending trace, its rest,
// bounded by max_buffered_bytes and max_trace_bytes like any trace. The rest is analysed
// alone at its own decision: what the spans dropped earlier showed is lost, what the rest
// shows is not. A rest with a signal is decided for it (and its records say they cover part
// of the trace); the rest of a kept trace is kept whatever it shows; a clean rest of a
// dropped trace is dropped, provisionally again.

// Marks of a provisional decision in the decision cache: why it was made provisional. 0 is a
// final decision.
const (
	markFinal          uint8 = 0
	markMemoryPressure uint8 = 1
	markTraceBytes     uint8 = 2
)

// provisionalCause names a mark for the late_signals metric and the log.
func provisionalCause(mark uint8) Cause {
	if mark == markTraceBytes {
		return CauseTraceBytes
	}
	return CauseMemoryPressure
}

// provisionalRest is what a pending trace that is the rest of a provisionally decided trace
// knows of that decision.
type provisionalRest[K any] struct {
	mark uint8
	// kept is the decision of a kept trace (its rest is kept too), nil for a dropped one.
	kept *keptDecision[K]
	// verdict is what the verdict is told of it.
	verdict held.Rest[K]
}

// newRest is the rest of a trace decided provisionally with mark, kept with kd (nil:
// dropped).
func (s *shard[V, K]) newRest(mark uint8, kd *keptDecision[K]) *provisionalRest[K] {
	r := &provisionalRest[K]{mark: mark, kept: kd, verdict: held.Rest[K]{Cause: provisionalCause(mark).String()}}
	if kd != nil {
		r.verdict.Kept = &kd.verdict
	}
	return r
}

// decisionMark is the mark a decision of pt made for cause leaves in the decision cache: a
// decision made early under memory pressure or past max_trace_bytes is provisional, and
// so is any decision on the rest of a trace decided provisionally before (with the mark of
// that first decision, unless this one has a cause of its own).
func decisionMark[V, K any](pt *pendingTrace[V, K], cause Cause) uint8 {
	switch {
	case cause == CauseMemoryPressure:
		return markMemoryPressure
	case cause == CauseTraceBytes:
		return markTraceBytes
	case pt.rest != nil:
		return pt.rest.mark
	}
	return markFinal
}
