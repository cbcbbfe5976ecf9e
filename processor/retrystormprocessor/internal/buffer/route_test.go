package buffer

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/spanset"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"
)

// batch builds one resource per entry of layout; each resource has one scope per inner
// slice, holding spans of the listed trace numbers in order.
func batch(layout [][][]uint64) ptrace.Traces {
	td := ptrace.NewTraces()
	for r, scopes := range layout {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutInt("resource", int64(r))
		rs.SetSchemaUrl("https://opentelemetry.io/schemas/1.30.0")
		for s, traces := range scopes {
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("scope")
			ss.Scope().SetVersion(string(rune('a' + s)))
			for i, n := range traces {
				span := ss.Spans().AppendEmpty()
				span.SetTraceID(buffertest.TraceID(n))
				span.SetSpanID(pcommon.SpanID{byte(r), byte(s), byte(i)})
			}
		}
	}
	return td
}

func TestSplitByTrace(t *testing.T) {
	tests := []struct {
		name   string
		layout [][][]uint64
		want   map[uint64]int // spans per trace
	}{
		{"one resource, one trace", [][][]uint64{{{1, 1, 1}}}, map[uint64]int{1: 3}},
		{"mixed scope", [][][]uint64{{{1, 2, 1, 3, 2}}}, map[uint64]int{1: 2, 2: 2, 3: 1}},
		{"single-trace and mixed scopes", [][][]uint64{{{1, 1}, {2, 1}}}, map[uint64]int{1: 3, 2: 1}},
		{"a trace across resources", [][][]uint64{{{1}}, {{1, 2}}, {{2}}}, map[uint64]int{1: 2, 2: 2}},
		{"a trace's runs apart in one scope, and across scopes", [][][]uint64{{{1, 2, 2, 1, 1}, {2, 1}}}, map[uint64]int{1: 4, 2: 3}},
		{"empty", [][][]uint64{{{}}}, map[uint64]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			td := batch(tt.layout)
			handles := map[ptrace.Span]bool{}
			for _, span := range tracespans.All(td) {
				handles[span] = true
			}
			pieces := spanset.Split(td, nil, nil)
			require.Len(t, pieces, len(tt.want))
			for _, pc := range pieces {
				for _, span := range pc.Set.All() {
					assert.True(t, handles[span], "the piece holds the request's own span, not a copy")
				}
				size := pc.Set.Size(&ptrace.ProtoMarshaler{})
				moved := setTraces(&pc.Set)
				assert.Equal(t, tt.want[traceNumber(t, pc.ID, tt.want)], moved.SpanCount())
				assert.Equal(t, moved.SpanCount(), pc.Set.Len())
				assert.Equal(t, int64((&ptrace.ProtoMarshaler{}).TracesSize(moved)), size,
					"the piece's size is the OTLP size of its spans once moved")
				forEachResourceScopeSpan(moved, func(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, span ptrace.Span) {
					assert.Equal(t, pc.ID, span.TraceID())
					r, _ := rs.Resource().Attributes().Get("resource")
					assert.Equal(t, byte(r.Int()), span.SpanID()[0], "the span keeps its resource")
					assert.Equal(t, string(rune('a'+span.SpanID()[1])), ss.Scope().Version(), "and its scope")
					assert.Equal(t, "https://opentelemetry.io/schemas/1.30.0", rs.SchemaUrl())
				})
			}
		})
	}
}

// setTraces moves the spans of set into new traces, as enqueue moves a kept trace.
func setTraces(set *spanset.Set) ptrace.Traces {
	td := ptrace.NewTraces()
	var w spanset.Writer
	w.Reset(td)
	for _, p := range set.Parts {
		for _, span := range p.Spans {
			w.Move(p.Origin, span)
		}
	}
	return td
}

func traceNumber(t *testing.T, id pcommon.TraceID, want map[uint64]int) uint64 {
	for n := range want {
		if buffertest.TraceID(n) == id {
			return n
		}
	}
	t.Fatalf("unexpected trace %s", id)
	return 0
}

func forEachResourceScopeSpan(td ptrace.Traces, f func(ptrace.ResourceSpans, ptrace.ScopeSpans, ptrace.Span)) {
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				f(rs, ss, ss.Spans().At(k))
			}
		}
	}
}

func TestShardOfSpreadsTraces(t *testing.T) {
	counts := make([]int, 4)
	for n := range uint64(10_000) {
		counts[shardOf(buffertest.TraceID(n), 4)]++
	}
	for i, c := range counts {
		assert.InDeltaf(t, 2500, c, 250, "shard %d", i)
	}
	// Ids whose halves are constant still spread.
	seen := map[int]bool{}
	for n := range 64 {
		var id pcommon.TraceID
		id[15] = byte(n)
		seen[shardOf(id, 4)] = true
	}
	assert.Len(t, seen, 4)
}

// TestEachBufferedSpanCarriesItsArrival: a trace that arrives one span per request holds
// one arrival note per span, in the order its tree will index them, each the analyzer's
// note of that span.
func TestEachBufferedSpanCarriesItsArrival(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	h := newHarness(t, cfg, nil)
	id := buffertest.TraceID(7)
	for _, td := range tracespans.OnePerRequest(buffertest.WithoutRoot(buffertest.StormTrace(id))) {
		h.Consume(td)
	}
	h.Consume(buffertest.CleanTrace(id, "lookup"))
	h.CatchUp()
	sh := h.buffer.shards[0]
	pt := sh.traces[id]
	require.NotNil(t, pt)
	require.Len(t, pt.notes.Arrivals(), pt.set.Len())
	var fresh verdict.Notes
	sh.verdict.Note(&fresh, &pt.set, false)
	notes := fresh.Arrivals()
	tools := 0
	i := 0
	for _, span := range pt.set.All() {
		assert.Equal(t, notes[i], pt.notes.Arrivals()[i])
		if strings.HasPrefix(span.Name(), "execute_tool") {
			tools++
		}
		i++
	}
	assert.Equal(t, 4, tools)
	distinct := map[uint8]bool{}
	for _, a := range pt.notes.Arrivals() {
		distinct[a.Mark] = true
	}
	assert.Len(t, distinct, 3, "the agent span, tool spans and failed tool spans are marked apart")
}
