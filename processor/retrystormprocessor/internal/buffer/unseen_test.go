package buffer

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"
)

// unansweredTrace is a run in which the model asked for a tool no span executed, sent
// under instrumentation scope scope.
func unansweredTrace(id pcommon.TraceID, scope string) ptrace.Traces {
	b := buffertest.NewSpanBuilder(id)
	root := b.Root()
	b.Span("chat", root.SpanID(), 10, 20, map[string]any{
		"gen_ai.output.messages": `[{"role":"assistant","parts":[{"type":"tool_call","id":"c9","name":"send_invoice","arguments":{"to":"billing@example.com"}}]}]`,
	})
	b.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Scope().SetName(scope)
	return b.Traces
}

// payloadlessTrace has one attempt whose span carries neither arguments nor a result, and
// no message structure: a clean trace triage proves so and sampling drops.
func payloadlessTrace(id pcommon.TraceID) ptrace.Traces {
	b := buffertest.NewSpanBuilder(id)
	root := b.Root()
	b.Span("execute_tool ping", root.SpanID(), 10, 20, map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ping", "gen_ai.tool.call.id": "p1",
	})
	return b.Traces
}

// Blindness is loud: each tool call retry_storm could not see is counted by reason and
// scope, in traces analysed and in traces triage dropped alike, and the scope attribute is
// bounded like storm_calls' tool.
func TestUnseenToolCallsAreCounted(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 0
	h := newHarness(t, cfg, nil)
	h.Consume(unansweredTrace(buffertest.TraceID(1), "acme-agents"))
	h.Consume(payloadlessTrace(buffertest.TraceID(2)))
	h.Advance(cfg.DecisionWait + time.Second)
	assert.Zero(t, h.Sum(metadata.MetricUnseenToolCalls), "a new series is seen at 0 first (README, \"Series that start at zero\")")

	assert.EqualValues(t, 1, h.Sum(metadata.MetricUnseenToolCalls, attribute.String("reason", "unanswered"), attribute.String("scope", "acme-agents")))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricUnseenToolCalls, attribute.String("reason", "arguments_unread"), attribute.String("scope", "agent-sdk")),
		"counted on the dropped trace triage proved clean")
	assert.EqualValues(t, 1, h.Sum(metadata.MetricUnseenToolCalls, attribute.String("reason", "result_unread"), attribute.String("scope", "agent-sdk")))

	h = newHarness(t, cfg, nil)
	for i := range verdict.MaxToolNames + 5 {
		h.Consume(unansweredTrace(buffertest.TraceID(uint64(10+i)), fmt.Sprintf("scope-%03d", i)))
	}
	h.Advance(cfg.DecisionWait + time.Second)
	assert.Zero(t, h.Sum(metadata.MetricUnseenToolCalls))
	assert.EqualValues(t, 5, h.Sum(metadata.MetricUnseenToolCalls, attribute.String("scope", verdict.ToolOther)),
		"past the first %d scopes", verdict.MaxToolNames)
	assert.EqualValues(t, verdict.MaxToolNames+5, h.Sum(metadata.MetricUnseenToolCalls, attribute.String("reason", "unanswered")))
}
