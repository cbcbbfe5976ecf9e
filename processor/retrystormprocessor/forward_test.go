package retrystormprocessor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestChunkSpansKeepsResourcesAndBoundsEachPiece(t *testing.T) {
	td := ptrace.NewTraces()
	for r := range 2 {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutInt("r", int64(r))
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("scope")
		for i := range 5 {
			ss.Spans().AppendEmpty().SetName(string(rune('a' + r*5 + i)))
		}
	}
	chunks := chunkSpans(td, 4)
	require.Len(t, chunks, 3)
	var names []string
	for _, c := range chunks {
		assert.LessOrEqual(t, c.SpanCount(), 4)
		for _, rs := range c.ResourceSpans().All() {
			r, _ := rs.Resource().Attributes().Get("r")
			for _, ss := range rs.ScopeSpans().All() {
				assert.Equal(t, "scope", ss.Scope().Name())
				for _, s := range ss.Spans().All() {
					names = append(names, s.Name())
					assert.Equal(t, int64((s.Name()[0]-'a')/5), r.Int(), "a span keeps its resource")
				}
			}
		}
	}
	assert.Equal(t, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, names)
	assert.Empty(t, chunkSpans(ptrace.NewTraces(), 4))
}
