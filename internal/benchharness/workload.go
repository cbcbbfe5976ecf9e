package benchharness

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

// WorkloadConfig says what traffic to generate and how to cut it into requests.
type WorkloadConfig struct {
	// Seed of agenttraffic's generator: one seed, one workload.
	Seed uint64
	// Traces is the number of traces to generate (one more when the last draw is a
	// stale_cache pair).
	Traces int
	// BatchSpans is the most spans one request carries, as an SDK batch span processor
	// exports them (its default is 512). 0 sends each trace in its own request.
	BatchSpans int
	// Rootless drops each trace's root span, so a trace waits for its decision_wait.
	Rootless bool
	// Shapes are the shapes to draw from; empty: agenttraffic's default.
	Shapes []agenttraffic.Shape
}

// traceInfo is what the harness knows about one trace of a workload.
type traceInfo struct {
	spans int
	// lastBatch is the request carrying the trace's last span.
	lastBatch int
}

// Workload is pre-generated traffic held as OTLP-encoded requests outside the Go heap, so
// holding it neither inflates the heap the garbage collector paces against nor gets scanned.
// Batch decodes one request into fresh pdata, as the OTLP receiver does.
type Workload struct {
	batches    []encodedBatch
	store      *arena
	traces     []traceInfo
	index      map[pcommon.TraceID]int
	spans      int
	batchSpans []int
}

// encodedBatch is where one encoded request is held in the arena.
type encodedBatch struct{ chunk, off, n int }

// NewWorkload generates the traces and encodes them as requests. Inside a request, spans
// come in the order an SDK's batch span processor queues them: trace after trace, children
// before their parent (the root last), grouped under one resource and one scope per
// instrumentation scope. Traces are generated, cut and encoded one at a time, and each
// request goes to the arena as it is encoded: a workload of gigabytes (the replay drive's)
// is held once, outside the heap.
func NewWorkload(cfg WorkloadConfig) (*Workload, error) {
	gen, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: cfg.Seed, Shapes: cfg.Shapes})
	if err != nil {
		return nil, fmt.Errorf("generate workload: %w", err)
	}
	w := &Workload{index: make(map[pcommon.TraceID]int, cfg.Traces+1), store: &arena{}}
	b := newBatcher(cfg.BatchSpans)
	flush := func() error {
		td, n := b.take()
		if n == 0 {
			return nil
		}
		raw, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			return fmt.Errorf("encode workload request: %w", err)
		}
		at, err := w.store.add(raw)
		if err != nil {
			return err
		}
		w.batches = append(w.batches, at)
		w.batchSpans = append(w.batchSpans, n)
		return nil
	}
	fail := func(err error) (*Workload, error) {
		_ = w.store.close()
		return nil, err
	}
	// As Generator.Generate draws them: cfg.Traces, and the rest of a stale_cache group.
	for len(w.traces) < cfg.Traces || gen.Pending() {
		planned := gen.Next()
		tr := &planned
		id := pcommon.TraceID(tr.ID)
		w.index[id] = len(w.traces)
		spans := exportOrder(tr, cfg.Rootless)
		td := agenttraffic.TraceToPdata(tr)
		rs := td.ResourceSpans().At(0)
		src := rs.ScopeSpans().At(0).Spans()
		for _, k := range spans {
			if b.full() {
				if err := flush(); err != nil {
					return fail(err)
				}
			}
			b.add(rs.Resource(), tr.Scope, src.At(k))
		}
		w.traces = append(w.traces, traceInfo{spans: len(spans), lastBatch: len(w.batches)})
		w.spans += len(spans)
		if cfg.BatchSpans == 0 {
			if err := flush(); err != nil {
				return fail(err)
			}
		}
	}
	if err := flush(); err != nil {
		return fail(err)
	}
	return w, nil
}

// Close releases the encoded requests.
func (w *Workload) Close() error { return w.store.close() }

// Len is the number of requests.
func (w *Workload) Len() int { return len(w.batches) }

// Spans is the number of spans over all requests.
func (w *Workload) Spans() int { return w.spans }

// Traces is the number of traces.
func (w *Workload) Traces() int { return len(w.traces) }

// BatchSpans is the number of spans of request i.
func (w *Workload) BatchSpans(i int) int { return w.batchSpans[i] }

// EncodedBytes is the OTLP-encoded size of all requests.
func (w *Workload) EncodedBytes() int { return w.store.size() }

// Batch decodes request i into fresh pdata the caller owns.
func (w *Workload) Batch(i int) (ptrace.Traces, error) {
	b := w.batches[i]
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(w.store.bytes(b))
	if err != nil {
		return td, fmt.Errorf("decode workload request %d: %w", i, err)
	}
	return td, nil
}

// trace returns the index of the trace with the given id.
func (w *Workload) trace(id pcommon.TraceID) (int, bool) {
	i, ok := w.index[id]
	return i, ok
}

// exportOrder lists the indexes of tr's spans in the order an SDK ends them: depth first,
// each span after its children. A rootless trace leaves out its root spans.
func exportOrder(tr *agenttraffic.Trace, rootless bool) []int {
	children := map[agenttraffic.SpanID][]int{}
	var roots []int
	for i := range tr.Spans {
		if p := tr.Spans[i].Parent; p.IsZero() {
			roots = append(roots, i)
		} else {
			children[p] = append(children[p], i)
		}
	}
	order := make([]int, 0, len(tr.Spans))
	var visit func(i int)
	visit = func(i int) {
		for _, c := range children[tr.Spans[i].ID] {
			visit(c)
		}
		order = append(order, i)
	}
	for _, r := range roots {
		visit(r)
		if rootless {
			order = order[:len(order)-1]
		}
	}
	return order
}

// batcher builds one request the way an OTLP exporter groups an SDK batch: one resource per
// distinct resource (one here: every trace comes from one service) and, under it, one scope
// per instrumentation scope, in order of first appearance.
type batcher struct {
	limit  int
	td     ptrace.Traces
	scopes map[string]ptrace.SpanSlice
	n      int
}

func newBatcher(limit int) *batcher {
	b := &batcher{limit: limit}
	b.reset()
	return b
}

func (b *batcher) reset() {
	b.td = ptrace.NewTraces()
	b.scopes = map[string]ptrace.SpanSlice{}
	b.n = 0
}

func (b *batcher) full() bool { return b.limit > 0 && b.n >= b.limit }

func (b *batcher) add(res pcommon.Resource, scope string, span ptrace.Span) {
	spans, ok := b.scopes[scope]
	if !ok {
		rss := b.td.ResourceSpans()
		if rss.Len() == 0 {
			res.CopyTo(rss.AppendEmpty().Resource())
		}
		ss := rss.At(0).ScopeSpans().AppendEmpty()
		ss.Scope().SetName(scope)
		spans = ss.Spans()
		b.scopes[scope] = spans
	}
	span.CopyTo(spans.AppendEmpty())
	b.n++
}

func (b *batcher) take() (ptrace.Traces, int) {
	td, n := b.td, b.n
	b.reset()
	return td, n
}
