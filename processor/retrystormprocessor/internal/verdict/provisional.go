package verdict // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"

import (
	"time"

	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
)

// Provisional decisions (the store's package buffer says how they are made). A trace decided before it could be seen whole — early under memory
// pressure, or when it outgrew max_trace_bytes — may still be going on: its decision is
// provisional for the rest of the trace. The decision cache marks it so (a mark in the
// dropped set's index, a field of a kept decision: no memory of its own), and spans of it
// arriving later are not handled as late spans but held as a new pending trace, its rest,
// bounded by max_buffered_bytes and max_trace_bytes like any trace. The rest is analysed
// alone at its own decision: what the spans dropped earlier showed is lost, what the rest
// shows is not. A rest with a signal is decided for it (and its records say they cover part
// of the trace); the rest of a kept trace is kept whatever it shows; a clean rest of a
// dropped trace is dropped, provisionally again.

// restDecision applies what the rest of a trace inherits from its kept first part: the rest
// of a kept trace is kept, at the first part's reason and threshold when its own analysis
// would not keep it.
func restDecision(t *Trace, d sample.Decision) sample.Decision {
	if d.Keep || t.Rest == nil || t.Rest.Kept == nil {
		return d
	}
	kd := t.Rest.Kept
	return sample.Decision{Keep: true, Reason: reasonOf(kd.reason), Threshold: kd.Threshold, Stamp: kd.Stamp}
}

// reasonIndex numbers a sampling reason for a kept decision: its place in
// sample.SignalReasons, or len(SignalReasons) for clean.
func reasonIndex(reason sample.Reason) uint8 {
	for i, r := range sample.SignalReasons {
		if r == reason {
			return uint8(i)
		}
	}
	return uint8(len(sample.SignalReasons))
}

func reasonOf(i uint8) sample.Reason {
	if int(i) < len(sample.SignalReasons) {
		return sample.SignalReasons[i]
	}
	return sample.ReasonClean
}

// signalReason is the sampling reason of the strongest signal the analysis found, in the
// policy's order of priority; "" when the trace is clean.
func signalReason(s analysis.Signals) sample.Reason {
	for i, present := range signalsOf(s) {
		if present {
			return sample.SignalReasons[i]
		}
	}
	return ""
}

// restAnalysed marks the records of the rest of a provisionally decided trace as partial and,
// when the rest brought a signal, counts it and logs it (rate-limited).
func (v *Verdict) restAnalysed(t *Trace, tr *analysis.Trace, now time.Time) {
	if t.Rest == nil {
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
	cause := t.Rest.Cause
	v.shared.Tel.lateSignal(cause, reason)
	if ok, suppressed := v.shared.LateLog.Allow(now); ok {
		first := "dropped"
		if t.Rest.Kept != nil {
			first = "kept"
		}
		v.shared.Logger.Warn("a signal arrived after its trace was decided provisionally; analysed the rest of the trace on its own",
			zap.String("trace.id", t.ID.String()),
			zap.String("late_signal.cause", cause),
			zap.String("late_signal.reason", string(reason)),
			zap.String("late_signal.first_decision", first),
			zap.Int("late_signal.spans", t.Set.Len()),
			zap.Int64("log.suppressed", suppressed))
	}
}
