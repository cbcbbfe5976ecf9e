package analysis

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
)

// TestMCPToolListingsAreNotAttempts: OpenAI Agents JS lists an MCP server's tools in an
// mcp_tools span once a turn, which OpenInference marks openinference.span.kind=TOOL with
// no tool name. Recognised, the four listings of the captured run (testdata/sdk/pending:
// the capture still fails elsewhere, see its README) grouped as one nameless call of four
// attempts, an executor storm. With the default not_tool_spans they are no attempts: the
// run's calls are its three tool executions, and nothing storms.
func TestMCPToolListingsAreNotAttempts(t *testing.T) {
	requests, _ := fixtures.LoadCapture(t, "pending/openai_agents_mcp")
	listings := 0
	for _, td := range requests {
		for _, s := range tracespans.All(td) {
			if s.Name() == "mcp_tools" {
				listings++
			}
		}
	}
	require.Equal(t, 4, listings, "the capture's MCP tool listings")
	td := ptrace.NewTraces()
	for _, r := range requests {
		r.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	}
	// Without the rule, the fault this guards against: the listings storm.
	without := DefaultConfig()
	without.Recognition.NotToolSpans = nil
	again := ptrace.NewTraces()
	td.CopyTo(again)
	assert.True(t, New(without, nil, stalecache.New(100)).Analyze(again).Signals.Storm, "with not_tool_spans empty the listings no longer storm: the test shows nothing")

	tr := New(DefaultConfig(), nil, stalecache.New(100)).Analyze(td)
	var tools []string
	for _, u := range tr.Units {
		assert.NotEmpty(t, u.Last().ToolName, "a unit without a tool name")
		assert.False(t, u.Storm, "unit %q storms", u.Last().ToolName)
		for _, c := range u.Calls {
			for range c.Attempts {
				tools = append(tools, u.Last().ToolName)
			}
		}
	}
	assert.ElementsMatch(t, []string{"lookup_customer", "charge_card", "charge_card"}, tools)
	assert.False(t, tr.Signals.Storm)
}
