package tracespans

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// TestBuilderNumbersSpansAndCopiesRequests: ids count up with IDHigh in, times are offsets
// from Base, attributes are set, a request holds the chosen spans under a copy of the
// resource and scope, and an attribute pdata cannot hold panics.
func TestBuilderNumbersSpansAndCopiesRequests(t *testing.T) {
	base := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	b := NewBuilder(pcommon.TraceID{7}, "svc", "scope-a", base)
	b.IDHigh = 0xab << 56
	root := b.Span("root", pcommon.SpanID{}, 0, 1000, nil)
	child := b.Span("child", root.SpanID(), 10, 20, map[string]any{"k": "v", "n": 3})
	b.SpanWithID(pcommon.SpanID{9}, "chosen", child.SpanID(), 30, 40, nil)

	assert.Equal(t, pcommon.SpanID{0xab, 0, 0, 0, 0, 0, 0, 1}, root.SpanID())
	assert.Equal(t, pcommon.SpanID{0xab, 0, 0, 0, 0, 0, 0, 2}, child.SpanID())
	assert.Equal(t, pcommon.TraceID{7}, child.TraceID())
	assert.Equal(t, base.Add(10*time.Millisecond), child.StartTimestamp().AsTime())
	assert.Equal(t, map[string]any{"k": "v", "n": int64(3)}, child.Attributes().AsRaw())
	assert.Equal(t, "chosen", b.Last().Name())

	req := b.Request(1, 3)
	require.Equal(t, 2, req.SpanCount())
	rs := req.ResourceSpans().At(0)
	svc, _ := rs.Resource().Attributes().Get("service.name")
	assert.Equal(t, "svc", svc.Str())
	assert.Equal(t, "scope-a", rs.ScopeSpans().At(0).Scope().Name())
	assert.Equal(t, "child", rs.ScopeSpans().At(0).Spans().At(0).Name())
	assert.Equal(t, 3, b.Traces.SpanCount(), "the builder keeps its spans")

	assert.Panics(t, func() { b.Span("bad", root.SpanID(), 0, 1, map[string]any{"k": struct{}{}}) })
}
