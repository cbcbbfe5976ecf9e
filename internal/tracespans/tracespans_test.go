package tracespans

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestAllYieldsEverySpanInOrderWithItsResource: two resources, one with two scopes and an
// empty one; every span once, in order, beside its own resource and scope; a break stops
// the walk.
func TestAllYieldsEverySpanInOrderWithItsResource(t *testing.T) {
	td := ptrace.NewTraces()
	for r, scopes := range [][]int{{2, 0, 1}, {3}} {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutInt("r", int64(r))
		for j, n := range scopes {
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("s" + string(rune('0'+j)))
			for range n {
				ss.Spans().AppendEmpty().SetName(string(rune('a' + td.SpanCount() - 1)))
			}
		}
	}
	var names string
	var resources []int64
	var scopes []string
	for o, span := range All(td) {
		names += span.Name()
		r, _ := o.Resource.Attributes().Get("r")
		resources = append(resources, r.Int())
		scopes = append(scopes, o.Scope.Name())
	}
	assert.Equal(t, "abcdef", names)
	assert.Equal(t, []int64{0, 0, 0, 1, 1, 1}, resources)
	assert.Equal(t, []string{"s0", "s0", "s2", "s0", "s0", "s0"}, scopes, "each span with its own scope")

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

// TestOnePerRequestKeepsEachSpanWithItsResourceAndScope: every span in its own request, in
// order, with its own resource and scope, and the input untouched.
func TestOnePerRequestKeepsEachSpanWithItsResourceAndScope(t *testing.T) {
	td := ptrace.NewTraces()
	for r, scopes := range [][]int{{2, 1}, {1}} {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutInt("r", int64(r))
		for s, n := range scopes {
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName(string(rune('A' + r*2 + s)))
			for range n {
				ss.Spans().AppendEmpty().SetName(string(rune('a' + td.SpanCount() - 1)))
			}
		}
	}
	parts := OnePerRequest(td)
	var got []string
	for _, p := range parts {
		assert.Equal(t, 1, p.SpanCount())
		rs := p.ResourceSpans().At(0)
		r, _ := rs.Resource().Attributes().Get("r")
		ss := rs.ScopeSpans().At(0)
		got = append(got, ss.Spans().At(0).Name()+ss.Scope().Name()+r.AsString())
	}
	assert.Equal(t, []string{"aA0", "bA0", "cB0", "dC1"}, got)
	assert.Equal(t, 4, td.SpanCount(), "the input is not consumed")
	assert.Empty(t, OnePerRequest(ptrace.NewTraces()))
}
