package conversation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
)

// trace builds a tree of spans given as (id, parent, name, start ms, end ms, attributes).
type spanDef struct {
	id, parent byte
	name       string
	start, end int
	attrs      map[string]any
	kind       ptrace.SpanKind
}

func buildTree(t *testing.T, defs ...spanDef) *grouping.Tree {
	t.Helper()
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for _, d := range defs {
		s := spans.AppendEmpty()
		s.SetSpanID([8]byte{d.id})
		if d.parent != 0 {
			s.SetParentSpanID([8]byte{d.parent})
		}
		s.SetName(d.name)
		s.SetKind(d.kind)
		s.SetStartTimestamp(pcommon.Timestamp(d.start) * 1e6)
		s.SetEndTimestamp(pcommon.Timestamp(d.end) * 1e6)
		require.NoError(t, s.Attributes().FromRaw(d.attrs))
	}
	return grouping.NewTree(td)
}

func call(id, name string) string {
	return `[{"type":"tool_call","id":"` + id + `","name":"` + name + `","arguments":{}}]`
}

func exec(tree *grouping.Tree, node int32, id, tool string) Executor {
	return Executor{Node: node, CallID: id, Tool: tool, Start: tree.Nodes[node].Span.StartTimestamp()}
}

func TestMatch(t *testing.T) {
	tree := buildTree(t,
		spanDef{id: 1, name: "agent", start: 0, end: 100},
		spanDef{id: 2, parent: 1, name: "model 1", start: 1, end: 5, attrs: map[string]any{"out": call("c1", "charge")}},
		spanDef{id: 3, parent: 1, name: "charge try 1", start: 6, end: 7},
		spanDef{id: 4, parent: 1, name: "charge try 2", start: 8, end: 9},
		spanDef{id: 5, parent: 1, name: "model 2", start: 10, end: 12, attrs: map[string]any{"out": call("c2", "charge")}},
		spanDef{id: 6, parent: 1, name: "charge again", start: 13, end: 14},
		spanDef{id: 7, parent: 1, name: "lookup, before any request", start: 0, end: 1},
	)
	c := NewReader().Read(tree, nil, Skim)
	require.Len(t, c.Requests, 2)
	// One matcher for every case, as triage keeps one: nothing of a match stays for the next.
	var m Matcher
	t.Run("by call id", func(t *testing.T) {
		of, count := m.Match(tree, c.Requests, []Executor{exec(tree, 5, "c2", "charge"), exec(tree, 2, "c1", "charge")})
		assert.Equal(t, []int{1, 0}, of)
		assert.Equal(t, []int{1, 1}, count)
	})
	t.Run("a retry answers the request it repeats; a re-call answers its own", func(t *testing.T) {
		of, count := m.Match(tree, c.Requests, []Executor{exec(tree, 2, "", "charge"), exec(tree, 3, "", "charge"), exec(tree, 5, "", "charge")})
		assert.Equal(t, []int{0, 0, 1}, of)
		assert.Equal(t, []int{2, 1}, count)
	})
	t.Run("an executor of another tool answers nothing", func(t *testing.T) {
		of, count := m.Match(tree, c.Requests, []Executor{exec(tree, 2, "", "refund")})
		assert.Equal(t, []int{-1}, of)
		assert.Equal(t, []int{0, 0}, count)
	})
	t.Run("an executor started before every request takes one left over", func(t *testing.T) {
		of, _ := m.Match(tree, c.Requests, []Executor{exec(tree, 6, "", "charge")})
		assert.Equal(t, []int{0}, of)
	})
	t.Run("a span never answers a request made below it", func(t *testing.T) {
		of, _ := m.Match(tree, c.Requests, []Executor{exec(tree, 0, "", "charge")})
		assert.Equal(t, []int{-1}, of, "the agent holds the model spans")
	})
}

// Two calls asked for in one model turn are two calls, whatever order they ran in.
func TestMatchParallelRequests(t *testing.T) {
	out := `[{"type":"tool_call","id":"a","name":"lookup","arguments":{"id":1}},{"type":"tool_call","id":"b","name":"lookup","arguments":{"id":2}}]`
	tree := buildTree(t,
		spanDef{id: 1, name: "model", start: 0, end: 5, attrs: map[string]any{"out": out}},
		spanDef{id: 2, name: "lookup", start: 6, end: 7},
		spanDef{id: 3, name: "lookup", start: 6, end: 8},
	)
	c := NewReader().Read(tree, nil, Skim)
	var m Matcher
	of, count := m.Match(tree, c.Requests, []Executor{exec(tree, 1, "", "lookup"), exec(tree, 2, "", "lookup")})
	assert.Equal(t, []int{0, 1}, of)
	assert.Equal(t, []int{1, 1}, count)
}

func TestCandidates(t *testing.T) {
	tree := buildTree(t,
		spanDef{id: 1, name: "agent", start: 0, end: 100},
		spanDef{id: 2, parent: 1, name: "model", start: 1, end: 5, attrs: map[string]any{
			"out": call("c1", "charge_card"), "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1"}},
		spanDef{id: 3, parent: 1, name: "tool.execution:charge_card", start: 6, end: 7},
		spanDef{id: 4, parent: 1, name: "step", start: 6, end: 7, attrs: map[string]any{"fw.call": "c1"}},
		spanDef{id: 5, parent: 1, name: "charge_card_v2", start: 6, end: 7},
		spanDef{id: 6, parent: 1, name: "run", start: 6, end: 7, attrs: map[string]any{"fw.tool_name": "charge_card"}},
		spanDef{id: 7, parent: 3, name: "POST charge_card", kind: ptrace.SpanKindClient, start: 6, end: 7, attrs: map[string]any{"http.request.method": "POST"}},
	)
	c := NewReader().Read(tree, nil, Full)
	got := Candidates(tree, c, []int{0}, make([]bool, len(tree.Nodes)), nil)
	var names []string
	for _, e := range got {
		names = append(names, tree.Nodes[e.Node].Span.Name()+":"+e.CallID)
	}
	assert.Equal(t, []string{"tool.execution:charge_card:", "step:c1", "run:"}, names,
		"named for the tool as a word, carrying the call id, or naming it in a *name attribute; not a longer identifier, not the model that asked, not an HTTP send")
}

// The offered tools are candidates where no request is recorded.
func TestCandidatesOfOfferedTools(t *testing.T) {
	tree := buildTree(t,
		spanDef{id: 1, name: "llm", start: 0, end: 5, attrs: map[string]any{"llm.tools": `["charge_card"]`,
			"gen_ai.tool.definitions": `[{"name":"charge_card","parameters":{}}]`}},
		spanDef{id: 2, name: "tool.execution:charge_card", start: 6, end: 7},
	)
	c := NewReader().Read(tree, nil, Full)
	require.Equal(t, []string{"charge_card"}, c.Offers)
	got := Candidates(tree, c, nil, make([]bool, len(tree.Nodes)), nil)
	require.Len(t, got, 1)
	assert.Equal(t, int32(1), got[0].Node)
}

func TestMentions(t *testing.T) {
	for s, want := range map[string]bool{
		"charge_card": true, "execute_tool charge_card": true, "charge_card.tool": true, "payments/charge_card": true,
		"Function: charge_card": true, "charge_card_v2": false, "recharge_card": false, "charge_cards x": false,
	} {
		assert.Equal(t, want, mentions(s, "charge_card"), s)
	}
}
