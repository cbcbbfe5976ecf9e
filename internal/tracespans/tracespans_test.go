package tracespans

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestAllYieldsEverySpanInOrderWithItsResource: two resources, one with two scopes and an
// empty one; every span once, in order, beside its own resource; a break stops the walk.
func TestAllYieldsEverySpanInOrderWithItsResource(t *testing.T) {
	td := ptrace.NewTraces()
	for r, scopes := range [][]int{{2, 0, 1}, {3}} {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutInt("r", int64(r))
		for _, n := range scopes {
			ss := rs.ScopeSpans().AppendEmpty()
			for range n {
				ss.Spans().AppendEmpty().SetName(string(rune('a' + td.SpanCount() - 1)))
			}
		}
	}
	var names string
	var resources []int64
	for res, span := range All(td) {
		names += span.Name()
		r, _ := res.Attributes().Get("r")
		resources = append(resources, r.Int())
	}
	assert.Equal(t, "abcdef", names)
	assert.Equal(t, []int64{0, 0, 0, 1, 1, 1}, resources)

	seen := 0
	for range All(td) {
		if seen++; seen == 2 {
			break
		}
	}
	assert.Equal(t, 2, seen)
	for range All(ptrace.NewTraces()) {
		t.Fatal("an empty Traces yields nothing")
	}
}
