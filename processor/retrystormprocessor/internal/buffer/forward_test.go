package buffer

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
)

// TestAKeptTraceLeavesInBoundedRequestsUnderItsResourcesAndScopes: a kept trace larger
// than two outgoing batches, spread over two resources of two scopes each and sharing its
// scopes with a dropped trace, leaves in requests of at most flushSpans spans, every span
// once and under its own resource and scope; the dropped trace's spans never leave.
func TestAKeptTraceLeavesInBoundedRequestsUnderItsResourcesAndScopes(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.Sampling.CleanPercent = 0
	h := newHarness(t, cfg, nil)
	kept, dropped := buffertest.TraceID(1), buffertest.TraceID(2)
	td := buffertest.StormTrace(kept)
	perScope := flushSpans * 3 / 4
	for r := range 2 {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutInt("r", int64(r))
		for sc := range 2 {
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName(fmt.Sprintf("scope-%d-%d", r, sc))
			for i := range perScope {
				span := ss.Spans().AppendEmpty()
				span.SetTraceID(kept)
				if i%5 == 0 {
					span.SetTraceID(dropped)
				}
				span.SetSpanID([8]byte{byte(r), byte(sc), byte(i >> 8), byte(i)})
				span.SetParentSpanID([8]byte{0xff})
				span.SetName(fmt.Sprintf("step-%d-%d", r, sc))
			}
		}
	}
	want := td.SpanCount() - 4*((perScope+4)/5)
	require.Greater(t, want, 2*flushSpans)
	h.Consume(td)
	require.NoError(t, h.Shutdown(context.Background()))

	got := 0
	seen := map[[8]byte]bool{}
	for _, req := range h.Sink.AllTraces() {
		assert.LessOrEqual(t, req.SpanCount(), flushSpans)
		forEachResourceScopeSpan(req, func(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, span ptrace.Span) {
			got++
			assert.Equal(t, kept, span.TraceID())
			assert.False(t, seen[span.SpanID()], "every span once")
			seen[span.SpanID()] = true
			if r, ok := rs.Resource().Attributes().Get("r"); ok {
				id := span.SpanID()
				assert.Equal(t, fmt.Sprintf("step-%d-%d", r.Int(), id[1]), span.Name(), "under its own resource")
				assert.Equal(t, fmt.Sprintf("scope-%d-%d", r.Int(), id[1]), ss.Scope().Name(), "and scope")
			} else {
				assert.Equal(t, "agent-sdk", ss.Scope().Name())
			}
		})
	}
	assert.Equal(t, want, got)
}

// TestAKeptTraceThatDoesNotFitStartsANewRequest: kept traces are not cut across requests
// when they fit in one.
func TestAKeptTraceThatDoesNotFitStartsANewRequest(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	h := newHarness(t, cfg, nil)
	var traces []ptrace.Traces
	for i := range 3 {
		td := buffertest.StormTrace(buffertest.TraceID(uint64(i)))
		ss := td.ResourceSpans().At(0).ScopeSpans().At(0)
		for j := range flushSpans/2 - 6 {
			span := ss.Spans().AppendEmpty()
			span.SetTraceID(buffertest.TraceID(uint64(i)))
			span.SetSpanID([8]byte{0xee, byte(j >> 8), byte(j)})
			span.SetParentSpanID([8]byte{0xff})
		}
		traces = append(traces, td)
	}
	for _, td := range traces {
		h.Consume(td)
	}
	require.NoError(t, h.Shutdown(context.Background()))
	reqs := h.Sink.AllTraces()
	require.Len(t, reqs, 2, "two traces fill one request; the third does not fit and starts the next")
	for _, req := range reqs {
		traces := map[[16]byte]bool{}
		forEachResourceScopeSpan(req, func(_ ptrace.ResourceSpans, _ ptrace.ScopeSpans, span ptrace.Span) {
			traces[span.TraceID()] = true
		})
		assert.Equal(t, req.SpanCount(), len(traces)*(flushSpans/2-2), "whole traces only")
	}
}
