package analysis

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// HoldBack takes a unit out of the part: its counts, findings and record go with the rest
// of the trace, and the part's signals are read again without it, its error span included.
func TestHoldBackTakesAUnitOutOfThePart(t *testing.T) {
	b := newTrace(40)
	step := b.span("step 1", noParent, 0, 100)
	b.span("execute_tool charge", step, 10, 20, genaiTool("charge", "call_1", `{"card":"x"}`, errored)...)
	b.span("execute_tool search", step, 30, 40, genaiTool("search", "call_2", `{"q":"x"}`)...)
	tr := analyze(t, b)
	require.Len(t, tr.Units, 2)
	require.True(t, tr.Signals.ToolError)
	require.True(t, tr.Signals.SpanError)
	require.True(t, tr.Signals.Divergence, "unrecovered_failure on the step")
	charge := tr.Units[0]
	require.Equal(t, "call_1", charge.Key())
	assert.True(t, charge.SelfDescribed())
	nodes := charge.Nodes(nil)
	require.Len(t, nodes, 1)

	held := make([]bool, len(tr.Tree.Nodes))
	held[nodes[0]] = true
	tr.HoldBack([]*Unit{charge}, held)
	assert.Equal(t, []*Unit{charge}, tr.HeldUnits)
	require.Len(t, tr.Units, 1)
	assert.Equal(t, "call_2", tr.Units[0].Key())
	assert.Equal(t, 1, tr.Calls)
	assert.Equal(t, 1, tr.ToolAttempts)
	assert.Empty(t, tr.Findings)
	assert.True(t, tr.Signals.Clean(), "what is left of the part is clean: %+v", tr.Signals)
}
