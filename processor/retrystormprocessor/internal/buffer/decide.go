package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/annotate"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/decision"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/fifo"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"
)

// decideDue decides every trace whose deadline has passed: decision_wait after its first
// span, or root_grace after its root arrived, whichever comes first.
func (s *shard) decideDue(now time.Time) {
	byFirst := func(pt *pendingTrace) time.Time { return pt.first.Add(s.cfg.decisionWait) }
	s.expire(&s.arrivals, now, byFirst)
	s.expire(&s.flagged, now, byFirst)
	s.expire(&s.roots, now, func(pt *pendingTrace) time.Time { return pt.rootAt.Add(s.cfg.rootGrace) })
	// rooted and setAside are read only under pressure: let go of what deadlines decided
	// meanwhile.
	s.oldestUndecided(&s.rooted)
	s.oldestUndecided(&s.setAside)
}

// expire pops a queue while its front is due or already decided. Deadlines in one queue
// are a constant offset from a non-decreasing clock, so the front is the earliest.
func (s *shard) expire(q *fifo.Queue[*pendingTrace], now time.Time, deadline func(*pendingTrace) time.Time) {
	for {
		pt, ok := q.Front()
		if !ok || (pt.state != decided && deadline(pt).After(now)) {
			return
		}
		q.Pop()
		if pt.state != decided {
			s.decide(pt, now, CauseDeadline)
		}
	}
}

// relievePressure decides traces early while the shard holds more than its share of
// max_buffered_bytes, in the order that loses least. Complete traces (their root arrived)
// go first, oldest root first: nothing but stragglers is still to come of them, so an
// early decision judges them on what a deadline would. Then fragments still waiting for
// their root, oldest first: each is judged on part of its trace, its decision provisional
// for the rest. Each is examined: a clean-looking trace is decided through normal sampling,
// one showing a signal is set aside, and only when nothing clean-looking is left are those
// decided, complete ones first: kept and flushed, never dropped for lack of room. A trace
// whose first spans came in the current input is not judged on them while a set-aside
// trace can be flushed instead: a buffer full of storms would otherwise decide each new
// trace from its first request (a root may come first, its attempts next).
func (s *shard) relievePressure(now time.Time) {
	for s.bytes > s.cfg.maxBytes {
		root, rooted := s.oldestUnjudged(&s.rooted)
		frag, fragment := s.oldestUnjudged(&s.arrivals)
		switch {
		case rooted && root.input != s.inputs:
			s.rooted.Pop()
			s.judge(root, now, &s.setAside)
		case fragment && frag.input != s.inputs:
			s.arrivals.Pop()
			s.judge(frag, now, &s.flagged)
		case s.decideSetAside(now):
		case rooted:
			s.rooted.Pop()
			s.judge(root, now, &s.setAside)
		case fragment:
			s.arrivals.Pop()
			s.judge(frag, now, &s.flagged)
		default:
			return
		}
	}
}

// judge examines a trace under memory pressure: one that looks clean is decided, one that
// shows a signal is set aside and queued in aside.
func (s *shard) judge(pt *pendingTrace, now time.Time, aside *fifo.Queue[*pendingTrace]) {
	var q *analysis.IndexedTrace
	var tr *analysis.Trace
	if !pt.errorSeen {
		q, tr = s.examine(pt)
	}
	if pt.errorSeen || tr != nil && !tr.Signals.Clean() {
		s.analyzer.Recycle(q)
		pt.state = signalled
		aside.Push(pt)
		// Set aside, it waits for its deadline to be read: what examine decoded is
		// compacted, as aging would have.
		if s.waitsLong(pt, now) {
			s.compact(pt)
		}
		return
	}
	s.decideWith(pt, now, q, tr, CauseMemoryPressure)
}

// decideSetAside decides the oldest trace memory pressure set aside, a complete one first,
// and reports whether there was one.
func (s *shard) decideSetAside(now time.Time) bool {
	for _, q := range []*fifo.Queue[*pendingTrace]{&s.setAside, &s.flagged} {
		if pt, ok := s.oldestUndecided(q); ok {
			q.Pop()
			s.decide(pt, now, CauseMemoryPressure)
			return true
		}
	}
	return false
}

// oldestUnjudged drops decided and set-aside traces from the front of q and returns the
// front.
func (s *shard) oldestUnjudged(q *fifo.Queue[*pendingTrace]) (*pendingTrace, bool) {
	for {
		pt, ok := q.Front()
		if !ok || pt.state != decided && pt.state != signalled {
			return pt, ok
		}
		q.Pop()
	}
}

// oldestUndecided drops decided traces from the front of q and returns the front.
func (s *shard) oldestUndecided(q *fifo.Queue[*pendingTrace]) (*pendingTrace, bool) {
	for {
		pt, ok := q.Front()
		if !ok || pt.state != decided {
			return pt, ok
		}
		q.Pop()
	}
}

// finish decides every buffered trace at shutdown and forwards what is kept. Once the
// shutdown deadline has passed, the rest is dropped without analysis.
func (s *shard) finish() {
	now := s.now()
	for _, q := range []*fifo.Queue[*pendingTrace]{&s.arrivals, &s.flagged, &s.setAside} {
		for pt, ok := q.Pop(); ok; pt, ok = q.Pop() {
			switch {
			case pt.state == decided:
			case s.ctx.Err() != nil:
				s.release(pt)
				s.tel.droppedSpans(DropShutdown, int64(pt.held()))
			default:
				s.decide(pt, now, CauseShutdown)
			}
		}
	}
	s.roots, s.rooted = fifo.Queue[*pendingTrace]{}, fifo.Queue[*pendingTrace]{}
	s.aging = fifo.Queue[agingTrace]{}
	s.flush()
	s.publish()
}

// decide decides a trace with nothing known about it yet.
func (s *shard) decide(pt *pendingTrace, now time.Time, cause Cause) {
	s.decideWith(pt, now, nil, nil, cause)
}

// examine triages a trace without an error span and analyses it unless triage proved it
// clean: tr is nil exactly when q.Clean. A trace sampling keeps even if it is clean is
// analysed either way, so it is analysed without triage; so is a trace memory pressure
// set aside for a signal: triage only proves traces clean, and the trace showed one. (Its analysis is not kept from then: about 450 bytes per span, half again
// its spans' own heap, at the moment memory is short.)
//
// A trace proven clean on its root's arrival (triageAtRoot) is not read again: examine
// returns neither, and the decision takes what that triage kept. One it did not prove clean
// is analysed without a second triage.
func (s *shard) examine(pt *pendingTrace) (*analysis.IndexedTrace, *analysis.Trace) {
	if pt.settled != nil {
		return nil, nil
	}
	s.unpack(pt)
	q := s.index(pt)
	if !pt.state.triaged() && !s.policy.KeepsClean(pt.id, rootTraceState(q.Tree)) {
		if q = s.analyzer.TriageIndexed(q); q.Clean {
			return q, nil
		}
	}
	return q, s.analyzer.AnalyzeTree(q.Tree)
}

// decideWith decides a trace, given what is known about it: its triage q, its analysis tr,
// or neither. A trace without an error span is examined first; one triage proves clean and
// sampling drops (most traffic) is done without analysis, its results remembered for the
// stale-cache check. Every other trace is analysed, sampled, and either annotated and
// queued for forwarding or dropped. The decision is cached for late spans.
func (s *shard) decideWith(pt *pendingTrace, now time.Time, q *analysis.IndexedTrace, tr *analysis.Trace, cause Cause) {
	// The closure reads q when it runs, so it sees the triage made below; nothing uses the
	// trace's tree once it is decided.
	defer func() { s.analyzer.Recycle(q) }()
	// Examined while still buffered, from the state triage and memory pressure left.
	if tr == nil && q == nil && !pt.errorSeen {
		q, tr = s.examine(pt)
	}
	s.release(pt)
	if settled, clean := pt.settled, tr == nil && q != nil && q.Clean; settled != nil || clean {
		in := decision.Input{TraceID: pt.id}
		if settled != nil {
			in.Tools, in.TraceState = settled.Tools, settled.TraceState
		} else {
			in.Tools, in.TraceState = q.Tools, rootTraceState(q.Tree)
		}
		// The rest of a kept trace is kept: it goes on to be analysed and annotated.
		if d := s.policy.Decide(in); !d.Keep && (pt.rest == nil || pt.rest.kept == nil) {
			if settled == nil {
				settled = s.analyzer.Settle(q, in.TraceState)
			}
			s.reportResolved(s.analyzer.RememberClean(settled))
			s.tel.triaged(settled)
			s.drop(pt, d, now, cause)
			return
		}
	}
	if tr == nil {
		s.unpack(pt) // a trace proven clean that sampling keeps, or an error trace packed before its error
		if q == nil {
			// An error span (no triage), or a trace proven clean that sampling keeps: the tree all the same.
			q = s.index(pt)
		}
		tr = s.analyzer.AnalyzeTree(q.Tree)
	}
	s.reportResolved(tr.Resolved)
	d := restDecision(pt, s.policy.Decide(decision.Input{
		TraceID:    pt.id,
		Signals:    signalsOf(tr.Signals),
		Tools:      tr.Tools,
		TraceState: rootTraceState(tr.Tree),
	}))
	var held *spanSet
	if d.Keep {
		held = s.holdBack(pt, tr, cause) // before the part is annotated: held calls go on
	}
	s.tel.analysed(tr)
	s.restAnalysed(pt, tr)
	if !d.Keep {
		s.holdSuspects(tr, d)
		s.drop(pt, d, now, cause)
		return
	}
	s.tel.decided(d, cause, now.Sub(pt.first), pt.rest == nil)
	st := annotate.Apply(tr, annotate.Options{Reason: string(d.Reason), Redact: s.cfg.redact})
	s.tel.remapped(st.Remapped)
	kd := keptDecision{provisional: decisionMark(pt, cause), reason: reasonIndex(d.Reason), stamp: d.Stamp, threshold: d.Threshold}
	if s.cfg.redact {
		var known *redact.Values
		if pt.rest != nil && pt.rest.kept != nil {
			known = pt.rest.kept.payloads // copies of the first part's payloads in the rest
		}
		kd.payloads = s.redactKept(tr, &pt.set, known)
	}
	if d.Stamp {
		stampSpans(&pt.set, s.policy, d.Threshold)
	}
	s.holdSuspects(tr, d)
	s.remember(pt.id, kd)
	s.enqueue(&pt.set)
	pt.set, pt.arrivals, pt.settled = spanSet{}, nil, nil
	if held != nil {
		s.holdRest(pt.id, held, &provisionalRest{mark: kd.provisional, kept: &kd})
	}
}

// drop records a decision to drop pt.
func (s *shard) drop(pt *pendingTrace, d decision.Decision, now time.Time, cause Cause) {
	s.tel.decided(d, cause, now.Sub(pt.first), pt.rest == nil)
	if s.cache.Drop(pt.id, decisionMark(pt, cause)) {
		s.tel.cacheEvicted(metadata.AttributeDecisionDropped)
	}
	s.tel.droppedSpans(DropSampledOut, int64(pt.held()))
	pt.set, pt.arrivals, pt.settled, pt.packed, pt.packedSpans = spanSet{}, nil, nil, nil, 0
}

func signalsOf(s analysis.Signals) decision.Signals {
	return decision.Signals{s.Storm, s.ToolError, s.Divergence, s.SpanError, s.Incomplete}
}

// rootTraceState is the tracestate of the trace's root span, or of its first span when the
// root has not arrived.
func rootTraceState(t *grouping.Tree) string {
	nodes := t.Nodes
	for i := range nodes {
		if nodes[i].Span.ParentSpanID().IsEmpty() {
			return nodes[i].Span.TraceState().AsRaw()
		}
	}
	if len(nodes) > 0 {
		return nodes[0].Span.TraceState().AsRaw()
	}
	return ""
}

// lateKept forwards spans of a trace already kept. They are not analysed as a trace (a
// fragment would give wrong call counts): an isError attempt among them is remapped, a
// tool attempt gets its payload hashes, the payloads the trace and these spans carry are
// redacted and the sampling threshold stamped, nothing else.
func (s *shard) lateKept(id pcommon.TraceID, set *spanSet, spans int64, kd keptDecision) {
	s.tel.lateSpans(metadata.AttributeDecisionKept, spans)
	tools, st := annotate.LateSpans(set.All(), s.analyzer.Extractor(), annotate.Options{Redact: s.cfg.redact})
	s.tel.remapped(st.Remapped)
	if s.cfg.redact {
		if vals := s.redactLate(set, tools, kd.payloads); vals != kd.payloads {
			// Tool spans among the late ones brought payloads: later spans are scrubbed of them too.
			kd.payloads = vals
			s.remember(id, kd)
		}
	}
	if kd.stamp {
		stampSpans(set, s.policy, kd.threshold)
	}
	s.enqueue(set)
}

// stampSpans writes the threshold into every span's tracestate, as the policy stamps.
// Spans sharing a tracestate (the usual case) share one serialisation; a tracestate that
// does not parse, or that the threshold would make invalid, is left as it is.
func stampSpans(set *spanSet, policy *decision.Policy, th sampling.Threshold) {
	var lastIn, lastOut string
	have := false
	for _, span := range set.All() {
		raw := span.TraceState().AsRaw()
		if !have || raw != lastIn {
			out, err := policy.Stamp(raw, th)
			if err != nil {
				continue
			}
			lastIn, lastOut, have = raw, out, true
		}
		span.TraceState().FromRaw(lastOut)
	}
}
