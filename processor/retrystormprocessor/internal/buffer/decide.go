package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/fifo"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/spanset"
)

// decideDue decides every trace whose deadline has passed: decision_wait after its first
// span, or root_grace after its root arrived, whichever comes first.
func (s *shard[V, K]) decideDue(now time.Time) {
	byFirst := func(pt *pendingTrace[V, K]) time.Time { return pt.first.Add(s.cfg.decisionWait) }
	s.expire(&s.arrivals, now, byFirst)
	s.expire(&s.flagged, now, byFirst)
	s.expire(&s.roots, now, func(pt *pendingTrace[V, K]) time.Time { return pt.rootAt.Add(s.cfg.rootGrace) })
	// rooted and setAside are read only under pressure: let go of what deadlines decided
	// meanwhile.
	s.oldestUndecided(&s.rooted)
	s.oldestUndecided(&s.setAside)
}

// expire pops a queue while its front is due or already decided. Deadlines in one queue
// are a constant offset from a non-decreasing clock, so the front is the earliest.
func (s *shard[V, K]) expire(q *fifo.Queue[*pendingTrace[V, K]], now time.Time, deadline func(*pendingTrace[V, K]) time.Time) {
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
func (s *shard[V, K]) relievePressure(now time.Time) {
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
func (s *shard[V, K]) judge(pt *pendingTrace[V, K], now time.Time, aside *fifo.Queue[*pendingTrace[V, K]]) {
	signal := pt.errorSeen
	if !pt.errorSeen {
		signal = s.verdict.Examine(&pt.notes, s.trace(pt))
	}
	if signal {
		s.verdict.Recycle(&pt.notes)
		pt.state = signalled
		aside.Push(pt)
		// Set aside, it waits for its deadline to be read: what examine decoded is
		// compacted, as aging would have.
		if s.waitsLong(pt, now) {
			s.compact(pt)
		}
		return
	}
	s.decideWith(pt, now, true, CauseMemoryPressure)
}

// decideSetAside decides the oldest trace memory pressure set aside, a complete one first,
// and reports whether there was one.
func (s *shard[V, K]) decideSetAside(now time.Time) bool {
	for _, q := range []*fifo.Queue[*pendingTrace[V, K]]{&s.setAside, &s.flagged} {
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
func (s *shard[V, K]) oldestUnjudged(q *fifo.Queue[*pendingTrace[V, K]]) (*pendingTrace[V, K], bool) {
	for {
		pt, ok := q.Front()
		if !ok || pt.state != decided && pt.state != signalled {
			return pt, ok
		}
		q.Pop()
	}
}

// oldestUndecided drops decided traces from the front of q and returns the front.
func (s *shard[V, K]) oldestUndecided(q *fifo.Queue[*pendingTrace[V, K]]) (*pendingTrace[V, K], bool) {
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
func (s *shard[V, K]) finish() {
	now := s.now()
	for _, q := range []*fifo.Queue[*pendingTrace[V, K]]{&s.arrivals, &s.flagged, &s.setAside} {
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
	s.roots, s.rooted = fifo.Queue[*pendingTrace[V, K]]{}, fifo.Queue[*pendingTrace[V, K]]{}
	s.aging = fifo.Queue[agingTrace[V, K]]{}
	s.flush()
	s.publish()
}

// decide decides a trace with nothing known about it yet.
func (s *shard[V, K]) decide(pt *pendingTrace[V, K], now time.Time, cause Cause) {
	s.decideWith(pt, now, false, cause)
}

// decideWith decides a trace; examined says memory pressure examined it just now (the
// verdict holds what it found). A trace without an error span is examined first, while
// still buffered.
// The verdict decides it; a kept trace is remembered for its late spans and queued for
// forwarding, and the calls its verdict held back begin the rest of the trace; a dropped
// one is remembered as dropped. Either decision is provisional when made early (memory
// pressure, max_trace_bytes) or on the rest of a provisionally decided trace.
func (s *shard[V, K]) decideWith(pt *pendingTrace[V, K], now time.Time, examined bool, cause Cause) {
	t := s.trace(pt)
	// Examined while still buffered, from the state triage and memory pressure left.
	if !examined && !pt.errorSeen {
		s.verdict.Examine(&pt.notes, t)
	}
	s.release(pt)
	out := s.verdict.Decide(&pt.notes, t, cause == CauseMemoryPressure || cause == CauseTraceBytes, now)
	s.tel.decided(out.Keep, out.Reason, cause, now.Sub(pt.first), pt.rest == nil)
	if !out.Keep {
		s.drop(pt, now, cause)
		return
	}
	kd := s.keptDecision(out.Kept, decisionMark(pt, cause))
	s.remember(pt.id, kd)
	s.enqueue(&pt.set)
	var none V
	pt.set, pt.notes = spanset.Set{}, none
	if out.Held != nil {
		s.holdRest(pt.id, out.Held, s.newRest(s.provisional(&kd), &kd))
	}
}

// drop records a decision to drop pt.
func (s *shard[V, K]) drop(pt *pendingTrace[V, K], now time.Time, cause Cause) {
	if s.cache.Drop(pt.id, decisionMark(pt, cause)) {
		s.tel.cacheEvicted(metadata.AttributeDecisionDropped)
	}
	s.tel.droppedSpans(DropSampledOut, int64(pt.held()))
	var none V
	pt.set, pt.notes, pt.packed, pt.packedSpans = spanset.Set{}, none, nil, 0
}

// lateKept forwards late spans of a trace already kept, through the verdict's late path.
func (s *shard[V, K]) lateKept(id pcommon.TraceID, set *spanset.Set, spans int64, kd keptDecision[K]) {
	s.tel.lateSpans(metadata.AttributeDecisionKept, spans)
	var changed bool
	if kd.verdict, changed = s.verdict.Late(set, kd.verdict); changed {
		s.remember(id, kd)
	}
	s.enqueue(set)
}
