package analysis

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/classify"
)

var noParent pcommon.SpanID

func analyze(t *testing.T, b *traceBuilder) *Trace {
	t.Helper()
	return New(DefaultConfig(), nil, nil).Analyze(b.Traces)
}

func onlyUnit(t *testing.T, tr *Trace) *Unit {
	t.Helper()
	require.Len(t, tr.Units, 1)
	return tr.Units[0]
}

func kinds(u *Unit) []string {
	var out []string
	for _, f := range u.Findings {
		out = append(out, f.Kind)
	}
	return out
}

func TestSiblingAttemptsShareTheCallID(t *testing.T) {
	b := newTrace(1)
	root := b.span("invoke_agent a", noParent, 0, 100, agentSpan("a")...)
	b.span("execute_tool search", root, 10, 20, genaiTool("search", "call_1", `{"q":"x"}`, errored)...)
	b.span("execute_tool search", root, 30, 40, genaiTool("search", "call_1", `{"q":"x"}`)...)
	b.span("execute_tool fetch", root, 50, 60, genaiTool("fetch", "call_2", `{"u":"y"}`)...)
	tr := analyze(t, b)
	require.Len(t, tr.Units, 2)
	u := tr.Units[0]
	assert.Equal(t, "call_1", u.Key())
	assert.True(t, u.Storm)
	assert.Equal(t, stormrecord.LayerExecutor, u.Layer)
	assert.Equal(t, classify.TransientDependency, u.Class)
	assert.False(t, tr.Units[1].Storm, "near miss: a single attempt is no storm")
	assert.Nil(t, tr.Units[1].Record, "a clean single call produces no record")
	assert.Equal(t, 0, tr.DegradedCalls)
}

func TestNestedAttemptsWithTransportResends(t *testing.T) {
	b := newTrace(2)
	root := b.span("invoke_agent a", noParent, 0, 500, agentSpan("a")...)
	logical := b.span("execute_tool search_docs", root, 10, 400, genaiTool("search_docs", "call_9", `{"q":"x"}`)...)
	mcp := func(id int, opts ...spanOpt) []spanOpt {
		return append([]spanOpt{attr("mcp.method.name", "tools/call"), attr("gen_ai.tool.name", "search_docs"),
			attr("jsonrpc.request.id", id), kind(ptrace.SpanKindClient)}, opts...)
	}
	a1 := b.span("tools/call search_docs", logical, 20, 200, mcp(1, attr("error.type", "tool_error"))...)
	http := func(resend int, code int) []spanOpt {
		return []spanOpt{kind(ptrace.SpanKindClient), attr("http.request.method", "POST"),
			attr("http.request.resend_count", resend), attr("http.response.status_code", code)}
	}
	b.span("POST", a1, 21, 80, http(0, 503)...)
	b.span("POST", a1, 90, 150, http(1, 503)...)
	b.span("POST", a1, 160, 190, http(2, 200)...)
	b.span("tools/call search_docs", logical, 210, 390, mcp(2)...)
	tr := analyze(t, b)
	u := onlyUnit(t, tr)
	assert.Equal(t, "call_9", u.Key(), "the logical span's call id keys its nested attempts")
	assert.Equal(t, 2, len(u.Attempts()), "the logical span is not an attempt; jsonrpc ids are never call keys")
	assert.Equal(t, 3, u.Layers.Transport)
	assert.Equal(t, 2, u.Layers.Executor)
	assert.Equal(t, stormrecord.LayerExecutor, u.Layer)
	assert.Equal(t, []string{"error", "ok"}, u.Record.Statuses)
}

func TestSingleAttemptWithThreeResendsIsATransportStorm(t *testing.T) {
	b := newTrace(3)
	root := b.span("invoke_agent a", noParent, 0, 500, agentSpan("a")...)
	a := b.span("execute_tool pay", root, 10, 400, genaiTool("pay", "call_p", `{}`)...)
	for i, code := range []int{503, 503, 200} {
		b.span("POST", a, int64(20+i*100), int64(90+i*100), kind(ptrace.SpanKindClient),
			attr("http.request.method", "POST"), attr("http.request.resend_count", i), attr("http.response.status_code", code))
	}
	u := onlyUnit(t, analyze(t, b))
	assert.True(t, u.Storm)
	assert.Equal(t, 1, u.Record.Attempts)
	assert.Equal(t, 3, u.Layers.Transport)
	assert.Equal(t, stormrecord.LayerTransport, u.Layer)
	assert.Equal(t, classify.TransientDependency, u.Class, "classified over the wire sends")
}

func TestNoCallIDFallsBackToParentToolArgs(t *testing.T) {
	b := newTrace(4)
	root := b.span("invoke_agent a", noParent, 0, 500, agentSpan("a")...)
	mcp := []spanOpt{attr("mcp.method.name", "tools/call"), attr("gen_ai.tool.name", "read_file"), kind(ptrace.SpanKindClient)}
	b.span("tools/call read_file", root, 10, 20, append(mcp, attr("error.type", "tool_error"), attr("jsonrpc.request.id", 1))...)
	b.span("tools/call read_file", root, 30, 40, append(mcp, attr("jsonrpc.request.id", 2))...)
	tr := analyze(t, b)
	u := onlyUnit(t, tr)
	assert.True(t, strings.HasPrefix(u.Key(), "fallback:"))
	assert.Equal(t, 2, len(u.Attempts()))
	assert.Equal(t, 1, tr.DegradedCalls)
	assert.Equal(t, []string{"error", "ok"}, u.Record.Statuses)
}

func TestAgentChainAcrossStepParents(t *testing.T) {
	b := newTrace(5)
	root := b.span("invoke_agent weather", noParent, 0, 900, agentSpan("weather")...)
	step := []spanOpt{attr("gen_ai.operation.name", "agent_step")}
	s1 := b.span("step 1", root, 10, 300, step...)
	s2 := b.span("step 2", root, 310, 600, step...)
	s3 := b.span("step 3", root, 610, 890, step...)
	b.span("execute_tool get_weather", s1, 20, 290, genaiTool("get_weather", "call_a", `{"city":"Oslo"}`, errored)...)
	b.span("execute_tool get_weather", s2, 320, 590, genaiTool("get_weather", "call_b", `{ "city": "Oslo" }`, errored)...)
	b.span("execute_tool get_weather", s3, 620, 880, genaiTool("get_weather", "call_c", `{"city":"Oslo"}`)...)
	u := onlyUnit(t, analyze(t, b))
	assert.Equal(t, "call_a", u.Key(), "the chain is keyed by its first call")
	assert.Equal(t, stormrecord.LayerAgent, u.Layer)
	assert.Equal(t, stormrecord.Layers{Transport: 0, Executor: 3, Agent: 3}, u.Layers)
	assert.Equal(t, classify.TransientDependency, u.Class)
	assert.Equal(t, []string{"error", "error", "ok"}, u.Record.Statuses)
}

func TestAgentChainNearMisses(t *testing.T) {
	b := newTrace(6)
	root := b.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
	b.span("execute_tool get_weather", root, 20, 90, genaiTool("get_weather", "c1", `{"city":"Oslo"}`)...)
	b.span("execute_tool get_weather", root, 100, 190, genaiTool("get_weather", "c2", `{"city":"Oslo"}`)...)
	b.span("execute_tool get_weather", root, 200, 290, genaiTool("get_weather", "c3", `{"city":"Rome"}`, errored)...)
	b.span("execute_tool get_weather", root, 300, 390, genaiTool("get_weather", "c4", `{"city":"Bergen"}`)...)
	tr := analyze(t, b)
	assert.Len(t, tr.Units, 4, "a call after a success, or with other args, does not chain")
	for _, u := range tr.Units {
		assert.False(t, u.Storm)
	}
}
