package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/decision"
)

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
type provisionalRest struct {
	mark uint8
	// kept is the decision of a kept trace (its rest is kept too), nil for a dropped one.
	kept *keptDecision
}

// decisionMark is the mark a decision of pt made for cause leaves in the decision cache: a
// decision made early under memory pressure or past max_trace_bytes is provisional, and
// so is any decision on the rest of a trace decided provisionally before (with the mark of
// that first decision, unless this one has a cause of its own).
func decisionMark(pt *pendingTrace, cause Cause) uint8 {
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

// index indexes pt's spans for triage and analysis; the tree of the rest of a
// provisionally decided trace says so, for following the model to read the history its
// later model calls record (the outputs that made the requests went with the first part).
func (s *shard) index(pt *pendingTrace) *analysis.IndexedTrace {
	q := s.analyzer.IndexSpans(pt.set.Len(), pt.set.All(), pt.arrivals)
	q.Tree.Rest = pt.rest != nil
	return q
}

// restDecision applies what the rest of a trace inherits from its kept first part: the rest
// of a kept trace is kept, at the first part's reason and threshold when its own analysis
// would not keep it.
func restDecision(pt *pendingTrace, d decision.Decision) decision.Decision {
	if d.Keep || pt.rest == nil || pt.rest.kept == nil {
		return d
	}
	kd := pt.rest.kept
	return decision.Decision{Keep: true, Reason: reasonOf(kd.reason), Threshold: kd.threshold, Stamp: kd.stamp}
}

// reasonIndex numbers a sampling reason for a kept decision: its place in
// decision.SignalReasons, or len(SignalReasons) for clean.
func reasonIndex(reason decision.Reason) uint8 {
	for i, r := range decision.SignalReasons {
		if r == reason {
			return uint8(i)
		}
	}
	return uint8(len(decision.SignalReasons))
}

func reasonOf(i uint8) decision.Reason {
	if int(i) < len(decision.SignalReasons) {
		return decision.SignalReasons[i]
	}
	return decision.ReasonClean
}

// signalReason is the sampling reason of the strongest signal the analysis found, in the
// policy's order of priority; "" when the trace is clean.
func signalReason(s analysis.Signals) decision.Reason {
	for i, present := range signalsOf(s) {
		if present {
			return decision.SignalReasons[i]
		}
	}
	return ""
}

// restAnalysed marks the records of the rest of a provisionally decided trace as partial and,
// when the rest brought a signal, counts it and logs it (rate-limited).
func (s *shard) restAnalysed(pt *pendingTrace, tr *analysis.Trace) {
	if pt.rest == nil {
		return
	}
	for _, u := range tr.Units {
		if u.Record != nil {
			u.Record.Partial = true
		}
	}
	for _, sf := range tr.FindingRecords {
		sf.Record.Partial = true
	}
	reason := signalReason(tr.Signals)
	if reason == "" {
		return
	}
	cause := provisionalCause(pt.rest.mark)
	s.tel.lateSignal(cause, reason)
	if ok, suppressed := s.lateLog.allow(s.now()); ok {
		first := "dropped"
		if pt.rest.kept != nil {
			first = "kept"
		}
		s.logger.Warn("a signal arrived after its trace was decided provisionally; analysed the rest of the trace on its own",
			zap.String("trace.id", pt.id.String()),
			zap.String("late_signal.cause", cause.String()),
			zap.String("late_signal.reason", string(reason)),
			zap.String("late_signal.first_decision", first),
			zap.Int("late_signal.spans", pt.held()),
			zap.Int64("log.suppressed", suppressed))
	}
}

// lateSignalLogEvery is the least time between two late-signal log lines across shards.
const lateSignalLogEvery = time.Second

// logLimiter lets one line through per interval across every shard, and counts the lines
// it held back for the next one to report. Shards share it through atomics only.
type logLimiter struct {
	every      time.Duration
	next       atomic.Int64 // Unix nanoseconds before which lines are held back
	suppressed atomic.Int64
}

// allow reports whether a line may be logged now, and how many were held back since the
// last one that was.
func (l *logLimiter) allow(now time.Time) (ok bool, suppressed int64) {
	next := l.next.Load()
	if now.UnixNano() < next || !l.next.CompareAndSwap(next, now.Add(l.every).UnixNano()) {
		l.suppressed.Add(1)
		return false, 0
	}
	return true, l.suppressed.Swap(0)
}
