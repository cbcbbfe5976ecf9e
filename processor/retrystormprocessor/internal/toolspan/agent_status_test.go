package toolspan

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
)

func TestEveryDefaultAgentRuleHasAHitAndANearMiss(t *testing.T) {
	x := NewExtractor(DefaultConfig(), nil, true)
	require.NotEmpty(t, DefaultConfig().AgentSpans)
	for _, r := range DefaultConfig().AgentSpans {
		if r.SpanNamePrefix != "" {
			t.Run(fmt.Sprintf("%+v", r), func(t *testing.T) {
				assert.True(t, x.IsAgentSpan(newSpan(t, r.SpanNamePrefix+" {name!r}", nil)))
				assert.True(t, x.IsAgentSpan(newSpan(t, " "+r.SpanNamePrefix+" checkout", nil)), "white space ignored")
				assert.False(t, x.IsAgentSpan(newSpan(t, "x"+r.SpanNamePrefix, nil)))
			})
			continue
		}
		require.NotEmpty(t, r.Attribute, "the default agent rules match attributes or a span name's start")
		t.Run(fmt.Sprintf("%+v", r), func(t *testing.T) {
			assert.True(t, x.IsAgentSpan(newSpan(t, "agent", map[string]any{r.Attribute: r.Value})))
			assert.True(t, x.IsAgentSpan(newSpan(t, "agent", map[string]any{r.Attribute: " " + r.Value + " "})), "white space ignored")
			assert.False(t, x.IsAgentSpan(newSpan(t, "agent", map[string]any{r.Attribute: r.Value + "_x"})))
			assert.False(t, x.IsAgentSpan(newSpan(t, "agent", map[string]any{r.Attribute + "_x": r.Value})))
		})
	}
	assert.False(t, x.IsAgentSpan(newSpan(t, "execute_tool x", map[string]any{"gen_ai.operation.name": "execute_tool"})))
}

// A framework that marks its agent spans elsewhere is one rule away, and an empty list
// recognises none.
func TestAgentRulesAreConfigurable(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AgentSpans = []Rule{{SpanNamePrefix: "agent:"}}
	x := NewExtractor(cfg, nil, true)
	assert.True(t, x.IsAgentSpan(newSpan(t, "agent: planner", nil)))
	assert.False(t, x.IsAgentSpan(newSpan(t, "planner", map[string]any{"gen_ai.operation.name": "invoke_agent"})))
	cfg.AgentSpans = nil
	assert.False(t, NewExtractor(cfg, nil, true).IsAgentSpan(newSpan(t, "x", map[string]any{"gen_ai.operation.name": "invoke_agent"})))
}

// strandsAttempt is an execute_tool span as Strands Agents writes it: status OK whatever
// happened, the outcome in gen_ai.tool.status, arguments and result only in events.
func strandsAttempt(t *testing.T, toolStatus string) ptrace.Span {
	s := newSpan(t, "execute_tool charge_card", map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "charge_card",
		"gen_ai.tool.call.id": "tooluse_1", "gen_ai.tool.status": toolStatus,
		"event:gen_ai.tool.message:content": `{"card":"4111"}`,
		"event:gen_ai.choice:message":       `[{"text":"declined"}]`,
	})
	s.Status().SetCode(ptrace.StatusCodeOk)
	return s
}

func TestToolStatusErrorFailsTheAttemptAndPlansTheRemap(t *testing.T) {
	x := NewExtractor(DefaultConfig(), nil, true)
	a := x.Extract(strandsAttempt(t, "error"), pcommon.NewResource())
	assert.Equal(t, outcome.Error, a.Status)
	require.NotNil(t, a.Remap, "an explicit OK is overridden, as for isError")
	assert.Equal(t, "gen_ai.tool.status=error", a.Remap.Report)
	assert.Empty(t, a.Remap.Description, "no payload in the description")
	assert.True(t, a.Remap.SetErrorType)
	assert.Equal(t, sha(`{"card":"4111"}`), a.ArgsHash, "arguments read from the gen_ai.tool.message event")
	assert.Equal(t, sha(`[{"text":"declined"}]`), a.ResultHash, "result read from the gen_ai.choice event")
	assert.Empty(t, a.RedactKeys, "event sources name no span attribute to delete")

	g := x.Glance(strandsAttempt(t, "ERROR "))
	assert.Equal(t, outcome.Error, g.Status, "the cheap look sees the report too: triage never calls it clean")

	ok := x.Extract(strandsAttempt(t, "success"), pcommon.NewResource())
	assert.Equal(t, outcome.OK, ok.Status)
	assert.Nil(t, ok.Remap)

	noOverride := NewExtractor(DefaultConfig(), nil, false).Extract(strandsAttempt(t, "error"), pcommon.NewResource())
	assert.Equal(t, outcome.Error, noOverride.Status)
	assert.Nil(t, noOverride.Remap, "override_ok off leaves an explicit OK")
}

func TestToolStatusReadsLangChainToolMessageStatus(t *testing.T) {
	x := NewExtractor(DefaultConfig(), nil, true)
	span := newSpan(t, "execute_tool DynamicStructuredTool", map[string]any{
		"traceloop.span.kind": "task", "gen_ai.operation.name": "execute_tool",
		"traceloop.entity.input":  `{"args":["{\"card\":\"5555\"}"]}`,
		"traceloop.entity.output": `{"lc":1,"type":"constructor","kwargs":{"status":"error","content":"declined","tool_call_id":"c1"}}`,
	})
	a := x.Extract(span, pcommon.NewResource())
	assert.Equal(t, outcome.Error, a.Status)
	require.NotNil(t, a.Remap)
	assert.Equal(t, "traceloop.entity.output#kwargs.status=error", a.Remap.Report)
	assert.NotEmpty(t, a.ArgsHash, "arguments read from traceloop.entity.input#args")
}

func TestToolErrorValuesAreConfigurable(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ToolErrorValues = []string{"failed", "denied"}
	x := NewExtractor(cfg, nil, true)
	assert.Equal(t, outcome.Error, x.Extract(strandsAttempt(t, "Denied"), pcommon.NewResource()).Status)
	assert.Equal(t, outcome.OK, x.Extract(strandsAttempt(t, "error"), pcommon.NewResource()).Status, "only the listed values fail")
}
