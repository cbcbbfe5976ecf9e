package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/decisioncache"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/fifo"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/held"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/loglimit"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/spanset"
)

// pendingTrace is a trace held until its decision.
type pendingTrace[V, K any] struct {
	id  pcommon.TraceID
	set spanset.Set
	// notes is what the verdict noted of the trace: of each span of set, in order, and
	// what a triage on its root's arrival kept.
	notes V
	bytes int64
	first time.Time
	// input numbers the shard input the trace first arrived in: a trace is never shed
	// for memory pressure in the input that brought its first spans.
	input  uint64
	rootAt time.Time
	state  traceState
	// errorSeen: a span in status ERROR arrived, a signal known without analysis. A trace
	// shows one in any state.
	errorSeen bool
	// packed holds packedSpans spans encoded (pack): a settled trace's, or those a trace
	// waiting for its root held compactHold. They arrived before the spans of set, and
	// arrivals notes only set's.
	packed      []byte
	packedSpans int
	// compacted counts the parts of set whose attributes are compacted (keyTable).
	compacted int
	// aging: the trace waits in the shard's aging queue for compactHold to pass. It stays
	// queued whatever its state becomes meanwhile.
	aging bool
	// rest is set when the trace was decided provisionally before and these are spans
	// that came after (provisional.go): their analysis sees only them.
	rest *provisionalRest[K]
}

// traceState is where a pending trace is in its life: buffered (pending, then triaged on its
// root's arrival or set aside under memory pressure), then decided.
type traceState uint8

const (
	// pending: buffered, nothing known of it yet.
	pending traceState = iota
	// provenClean: the triage made on its root's arrival proved it clean (settled holds
	// what the decision needs). Spans arriving later make it pending again.
	provenClean
	// unproven: that triage did not prove it clean, so its decision analyses without
	// triaging again. Spans arriving later make it pending again.
	unproven
	// signalled: analysis under memory pressure found a signal; the trace is set aside in
	// the flagged (or setAside) queue and decided only after every clean-looking trace.
	signalled
	// decided: released from the buffer.
	decided
)

// triaged reports whether the trace needs no triage at its decision: it was triaged on its
// root's arrival, or set aside for a signal (triage only proves traces clean).
func (st traceState) triaged() bool { return st == provenClean || st == unproven || st == signalled }

// keptDecision is what late spans of a kept trace need: its verdict, and in two bytes the
// verdict lends it (held.Verdict Marks) the store's own flags, so an entry takes no more.
type keptDecision[K any] struct{ verdict K }

// Indices of the store's flags in a kept verdict's Marks.
const (
	// markProvisional is the mark of a provisional decision (markFinal: final): later
	// spans are then held and analysed as the rest of the trace, not forwarded as late.
	markProvisional = 0
	// markValuesForgotten: the trace's payload values were too many to remember
	// (maxDecisionBytes), so its later spans are dropped as if the decision were forgotten.
	markValuesForgotten = 1
)

// provisional is kd's provisional mark.
func (s *shard[V, K]) provisional(kd *keptDecision[K]) uint8 {
	return s.verdict.Marks(&kd.verdict)[markProvisional]
}

// valuesForgotten reports that kd's payload values were too many to remember.
func (s *shard[V, K]) valuesForgotten(kd *keptDecision[K]) bool {
	return s.verdict.Marks(&kd.verdict)[markValuesForgotten] != 0
}

// keptDecision is a kept verdict remembered with its provisional mark.
func (s *shard[V, K]) keptDecision(k K, mark uint8) keptDecision[K] {
	*s.verdict.Marks(&k) = [2]uint8{markProvisional: mark}
	return keptDecision[K]{k}
}

// shardInput is one message to a shard: pieces to ingest with the time ConsumeTraces received
// them, and when ack is set, a request to close it once they are ingested and due deadlines
// are decided.
type shardInput struct {
	pieces []spanset.Piece
	at     time.Time
	ack    chan struct{}
}

type shardConfig struct {
	decisionWait time.Duration
	rootGrace    time.Duration
	maxBytes     int64
	// maxTraceBytes is the most one trace holds before it is decided provisionally.
	maxTraceBytes int64
	keptCache     int
	// keptBytes bounds the kept decisions' memory, maxDecisionBytes one decision's payload
	// values (remember.go).
	keptBytes, maxDecisionBytes int64
	droppedCache                int
	// released: every trace is decided as it arrives (WithReleasedTraces).
	released bool
}

// shard owns the buffered traces whose ids hash to it, and everything about them: the byte
// accounting, the deadline queues, the decision cache and the verdict that decides them.
// Only its goroutine (or, in synchronous mode, the caller) touches it; the gauges are
// atomics for the meter.
type shard[V, K any] struct {
	cfg      shardConfig
	now      func() time.Time
	ctx      context.Context
	next     consumer.Traces
	tel      *telemetry
	logger   *zap.Logger
	verdict  held.Verdict[V, K]
	sizer    ptrace.ProtoMarshaler
	unpacker ptrace.ProtoUnmarshaler
	// packScratch and unpackScratch are the compressed and decompressed bytes of the last
	// trace packed or unpacked, reused.
	packScratch, unpackScratch []byte
	keys                       *keyTable

	traces   map[pcommon.TraceID]*pendingTrace[V, K]
	inputs   uint64                          // shard inputs with pieces so far
	arrivals fifo.Queue[*pendingTrace[V, K]] // by first span: decision_wait, and shed first
	flagged  fifo.Queue[*pendingTrace[V, K]] // by first span: signalled under pressure
	roots    fifo.Queue[*pendingTrace[V, K]] // by root arrival: root_grace
	// rooted (by root arrival) lists complete traces for memory pressure to decide before
	// fragments; setAside holds those of them it found a signal in.
	rooted   fifo.Queue[*pendingTrace[V, K]]
	setAside fifo.Queue[*pendingTrace[V, K]]
	aging    fifo.Queue[agingTrace[V, K]] // by piece arrival: compactHold, for traces without a root
	cache    *decisioncache.Cache[keptDecision[K]]
	bytes    int64
	spans    int64
	// lastArrival keeps arrival times non-decreasing across concurrent ConsumeTraces calls,
	// so the deadline queues stay sorted.
	lastArrival time.Time

	out      ptrace.Traces
	outSpans int64
	writer   spanset.Writer

	in   chan shardInput
	done chan struct{}
	// room is signalled (without waiting) each time the shard takes an input.
	room chan<- struct{}
	// evictLog limits the eviction log lines of every shard together.
	evictLog *loglimit.Limiter
	gauges   struct{ bytes, traces, spans atomic.Int64 }
}

// flushSpans bounds a forwarded batch, so neither a huge kept trace nor deciding a full
// buffer at shutdown builds a request over the 4 MiB OTLP receivers accept by default
// (agent spans run about 0.5 kB of OTLP each).
const flushSpans = 2048

// init makes the shard's state; its verdict is its own (a verdict holds a hasher and
// scratch space and is not safe for concurrent use).
func (s *shard[V, K]) init(v held.Verdict[V, K]) {
	s.verdict = v
	s.traces = map[pcommon.TraceID]*pendingTrace[V, K]{}
	s.keys = newKeyTable()
	s.cache = decisioncache.New[keptDecision[K]](s.cfg.keptCache, s.cfg.keptBytes, s.cfg.droppedCache, s.forget)
	s.out = ptrace.NewTraces()
	s.in = make(chan shardInput, 16)
	s.done = make(chan struct{})
}

// run is the shard goroutine. Deadlines are checked after every input, so a busy shard
// decides on time without its ticker; the ticker serves idle shards.
func (s *shard[V, K]) run(tick time.Duration, finishing <-chan struct{}) {
	defer close(s.done)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case in := <-s.in:
			s.handle(in)
		case <-ticker.C:
			s.step(nil, time.Time{})
		case <-finishing:
			s.drain()
			s.finish()
			return
		}
	}
}

func (s *shard[V, K]) handle(in shardInput) {
	if s.room != nil {
		select {
		case s.room <- struct{}{}:
		default:
		}
	}
	s.step(in.pieces, in.at)
	if in.ack != nil {
		close(in.ack)
	}
}

// drain ingests what was routed before shutdown began.
func (s *shard[V, K]) drain() {
	for {
		select {
		case in := <-s.in:
			s.handle(in)
		default:
			return
		}
	}
}

// step ingests pieces that arrived at the given time, keeps the buffer in bounds, decides
// what is due and forwards what was kept.
func (s *shard[V, K]) step(pieces []spanset.Piece, arrived time.Time) {
	now := s.now()
	if len(pieces) > 0 {
		s.inputs++
		if arrived.After(s.lastArrival) {
			s.lastArrival = arrived
		}
		for _, pc := range pieces {
			pt := s.ingest(pc, s.lastArrival)
			if pt != nil && s.cfg.released {
				s.decide(pt, now, CauseReleased)
				continue
			}
			if pt != nil && pt.bytes > s.cfg.maxTraceBytes {
				// One trace must not take the shard's share: decided now, provisionally.
				s.decide(pt, now, CauseTraceBytes)
			}
			s.relievePressure(now)
		}
	}
	s.decideDue(now)
	s.verdict.ExpireSuspects(now)
	s.age(now)
	s.flush()
	s.publish()
}

// ingest buffers a piece and returns its pending trace; nil when the piece was handled as
// late spans of a trace decided for good.
func (s *shard[V, K]) ingest(pc spanset.Piece, now time.Time) *pendingTrace[V, K] {
	spans := int64(pc.Set.Len())
	s.tel.received(spans)
	rest, late := s.lateOf(pc, spans)
	if late {
		return nil
	}
	pt, ok := s.traces[pc.ID]
	if !ok {
		pt = &pendingTrace[V, K]{id: pc.ID, set: pc.Set, first: now, input: s.inputs, rest: rest}
		s.traces[pc.ID] = pt
		s.arrivals.Push(pt)
	} else {
		pt.set.Add(pc.Set)
		s.voidTriage(pt)
	}
	var root ptrace.Span
	var hasRoot, hasError bool
	root, hasRoot, hasError = s.verdict.Note(&pt.notes, &pc.Set, false)
	// The piece's OTLP size. A trace that arrives whole, root included, and is packed has
	// it for free: its encoding's length. Settling may pack any trace, moving its spans, so
	// every other piece is sized first.
	whole := !ok && hasRoot
	var size int64
	if !whole {
		size = pc.Set.Size(&s.sizer)
	}
	pt.errorSeen = pt.errorSeen || hasError
	if hasRoot && pt.rootAt.IsZero() {
		pt.rootAt = now
		s.roots.Push(pt)
		s.rooted.Push(pt)
		s.triageAtRoot(pt, root, whole)
	}
	if whole {
		if pt.packed != nil {
			size = packedSize(pt.packed)
		} else {
			size = pc.Set.Size(&s.sizer)
		}
	}
	pt.bytes += size
	s.spans += spans
	s.bytes += size
	switch {
	case pt.rootAt.IsZero():
		if !pt.aging && s.cfg.decisionWait > compactHold {
			pt.aging = true
			s.aging.Push(agingTrace[V, K]{pt: pt, at: now})
		}
	case s.waitsLong(pt, now):
		s.compact(pt)
	}
	return pt
}

// lateOf looks a piece's trace up in the decision cache. Spans of a trace decided for good
// are late: forwarded (kept) or dropped here, and late is true; so are spans of a kept
// trace whose decision or payload values the cache forgot, dropped (remember.go). Spans of
// a trace decided provisionally are the rest of it, to be buffered: rest says what that
// decision was.
func (s *shard[V, K]) lateOf(pc spanset.Piece, spans int64) (rest *provisionalRest[K], late bool) {
	if pt, ok := s.traces[pc.ID]; ok && pt.rest != nil {
		// A rest is pending (calls held back at the decision begin it): later spans join
		// it, whatever the cache forgot since; it holds what it needs of the decision.
		s.tel.lateSpans(metadata.AttributeLateDecisionProvisional, spans)
		return pt.rest, false
	}
	if kd, ok := s.cache.Kept(pc.ID); ok {
		if s.valuesForgotten(&kd) {
			s.dropForgotten(spans)
			return nil, true
		}
		if s.provisional(&kd) == markFinal {
			s.lateKept(pc.ID, &pc.Set, spans, kd)
			return nil, true
		}
		s.tel.lateSpans(metadata.AttributeLateDecisionProvisional, spans)
		return s.newRest(s.provisional(&kd), &kd), false
	}
	if dropped, mark := s.cache.Dropped(pc.ID); dropped {
		if mark == markForgotten {
			s.dropForgotten(spans)
			return nil, true
		}
		if mark == markFinal {
			s.tel.lateSpans(metadata.AttributeDecisionDropped, spans)
			s.tel.droppedSpans(DropLate, spans)
			return nil, true
		}
		s.tel.lateSpans(metadata.AttributeLateDecisionProvisional, spans)
		return s.newRest(mark, nil), false
	}
	return nil, false
}

// triageAtRoot has the verdict triage a trace whose root just arrived, while its spans
// are still in the CPU's caches, instead of at its deadline root_grace later, when they no
// longer are. Most traces arrive whole with their root last, and most of those triage
// proves clean: sampling drops them at the deadline from what triage kept, without reading
// a span again. A trace that sampling keeps even when clean, or that shows an error span,
// is analysed at its deadline and needs no triage (nor does one set aside under memory
// pressure, or any trace when the configuration leaves triage nothing to prove); with
// root_grace 0 the deadline is now. root is the trace's first root span, just arrived;
// whole says every span of the trace came with it. A trace proven clean that will wait
// compactHold or more is packed.
func (s *shard[V, K]) triageAtRoot(pt *pendingTrace[V, K], root ptrace.Span, whole bool) {
	if pt.errorSeen || pt.state == signalled || s.cfg.rootGrace <= 0 {
		return
	}
	triaged, clean := s.verdict.TriageAtRoot(&pt.notes, s.trace(pt), root, whole)
	switch {
	case !triaged:
		return
	case clean:
		pt.state = provenClean
	default:
		pt.state = unproven
	}
	if clean && s.waitsLong(pt, pt.rootAt) {
		s.pack(pt)
	}
}

// trace is pt as the verdict reads it.
func (s *shard[V, K]) trace(pt *pendingTrace[V, K]) *held.Trace[K] {
	t := &held.Trace[K]{
		ID: pt.id, Set: &pt.set,
		Triaged: pt.state.triaged(), ErrorSeen: pt.errorSeen, Fragment: pt.rootAt.IsZero(),
		Unpack: func() { s.unpack(pt) },
	}
	if pt.rest != nil {
		t.Rest = &pt.rest.verdict
	}
	return t
}

// voidTriage forgets the triage made on the root's arrival: spans arrived after it.
func (s *shard[V, K]) voidTriage(pt *pendingTrace[V, K]) {
	if pt.state == provenClean || pt.state == unproven {
		pt.state = pending
	}
	s.verdict.Void(&pt.notes)
}

// compactHold is the hold above which buffered spans are made compact (packed, or their
// attributes compacted): either costs about as much CPU per span as triage, and pays back
// only in memory held a while.
const compactHold = 5 * time.Second

// waitsLong reports whether pt will wait compactHold or longer from now until its
// deadline: decision_wait after its first span or, once its root has arrived, root_grace
// after that if sooner. (With the defaults a trace is decided 2s after its root, and held
// as it came.)
func (s *shard[V, K]) waitsLong(pt *pendingTrace[V, K], now time.Time) bool {
	wait := pt.first.Add(s.cfg.decisionWait).Sub(now)
	if !pt.rootAt.IsZero() {
		wait = min(wait, pt.rootAt.Add(s.cfg.rootGrace).Sub(now))
	}
	return wait >= compactHold
}

// compact compacts the attributes of the spans of pt's set not compacted yet (keyTable).
func (s *shard[V, K]) compact(pt *pendingTrace[V, K]) {
	for _, p := range pt.set.Parts[pt.compacted:] {
		for _, span := range p.Spans {
			s.keys.compact(span.Attributes())
		}
	}
	pt.compacted = len(pt.set.Parts)
}

// publish mirrors the shard's accounting for the buffered gauges.
func (s *shard[V, K]) publish() {
	s.gauges.bytes.Store(s.bytes)
	s.gauges.traces.Store(int64(len(s.traces)))
	s.gauges.spans.Store(s.spans)
}

// release takes a trace out of the buffer.
func (s *shard[V, K]) release(pt *pendingTrace[V, K]) {
	delete(s.traces, pt.id)
	pt.state = decided
	s.bytes -= pt.bytes
	s.spans -= int64(pt.held())
}

// held is the number of spans pt holds, decoded or packed.
func (pt *pendingTrace[V, K]) held() int { return pt.set.Len() + pt.packedSpans }
