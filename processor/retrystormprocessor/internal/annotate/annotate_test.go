package annotate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

func spansByName(td ptrace.Traces, name string) []ptrace.Span {
	var out []ptrace.Span
	for _, s := range tracespans.All(td) {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func str(t *testing.T, m pcommon.Map, k string) string {
	t.Helper()
	v, ok := m.Get(k)
	require.True(t, ok, "missing %s", k)
	return v.AsString()
}

func TestApplyRemapsAndAnnotates(t *testing.T) {
	td := fixtures.Load(t, "logfire_mcp.json")
	tr := analysis.New(analysis.DefaultConfig(), nil, nil).Analyze(td)
	st := Apply(tr, Options{Reason: "storm", Redact: true})
	assert.Equal(t, 1, st.Remapped)

	attempts := spansByName(td, "MCP request: tools/call lookup_order")
	require.Len(t, attempts, 2)
	first, second := attempts[0], attempts[1]
	if first.StartTimestamp() > second.StartTimestamp() {
		first, second = second, first
	}
	assert.Equal(t, ptrace.StatusCodeError, first.Status().Code())
	assert.Equal(t, "tool reported isError (result redacted)", first.Status().Message())
	assert.Equal(t, "tool_error", str(t, first.Attributes(), "error.type"))
	assert.Equal(t, "true", str(t, first.Attributes(), stormrecord.AttrStatusRemap))
	for _, s := range attempts {
		assert.Len(t, str(t, s.Attributes(), stormrecord.AttrArgsHash), 64)
		assert.Equal(t, "2", str(t, s.Attributes(), stormrecord.AttrCallAttempts))
		assert.Equal(t, "true", str(t, s.Attributes(), stormrecord.AttrCallStorm))
		assert.Equal(t, "transient_dependency", str(t, s.Attributes(), stormrecord.AttrCallClass))
		// The tool name the record has, on every attempt: readers count calls per tool by it.
		assert.Equal(t, "lookup_order", str(t, s.Attributes(), stormrecord.AttrCallTool))
	}
	assert.Equal(t, "1", str(t, first.Attributes(), stormrecord.AttrCallAttempt))
	assert.Equal(t, "error", str(t, first.Attributes(), stormrecord.AttrStatus))
	assert.Equal(t, "executor", str(t, second.Attributes(), stormrecord.AttrCallLayer))

	var rec stormrecord.Record
	require.NoError(t, json.Unmarshal([]byte(str(t, second.Attributes(), stormrecord.AttrCallSummary)), &rec),
		"the summary travels on the last attempt")
	assert.Equal(t, 2, rec.Attempts)
	assert.Len(t, rec.Timeline, 2)
	_, onFirst := first.Attributes().Get(stormrecord.AttrCallSummary)
	assert.False(t, onFirst)

	root := spansByName(td, "handle ticket 88213")[0]
	assert.Equal(t, "storm", str(t, root.Attributes(), stormrecord.AttrSampling))
	assert.Equal(t, "1", str(t, root.Attributes(), stormrecord.AttrTraceStorms))
}

func TestApplyWithoutRedactionKeepsPayloadAndResultText(t *testing.T) {
	td := fixtures.Load(t, "logfire_mcp.json")
	tr := analysis.New(analysis.DefaultConfig(), nil, nil).Analyze(td)
	Apply(tr, Options{Reason: "storm"})
	for _, s := range spansByName(td, "MCP request: tools/call lookup_order") {
		_, ok := s.Attributes().Get("request")
		assert.True(t, ok)
		if s.Status().Code() == ptrace.StatusCodeError {
			assert.Equal(t, "order service unavailable", s.Status().Message())
		}
	}
}

func TestFindingEventsAndKeptErrorType(t *testing.T) {
	td := fixtures.Load(t, "openinference.json")
	tr := analysis.New(analysis.DefaultConfig(), nil, nil).Analyze(td)
	Apply(tr, Options{Reason: "storm", Redact: true})
	var events []ptrace.SpanEvent
	for _, s := range tracespans.All(td) {
		for _, e := range s.Events().All() {
			if e.Name() == stormrecord.FindingEvent {
				events = append(events, e)
				assert.Equal(t, "ToolCallingAgent.run", s.Name(), "unrecovered_failure sits on the green answer")
			}
		}
	}
	require.Len(t, events, 1)
	assert.Equal(t, "unrecovered_failure", str(t, events[0].Attributes(), stormrecord.FindingKind))
	assert.True(t, strings.HasPrefix(str(t, events[0].Attributes(), stormrecord.FindingCallKey), "call_Gm6Y"))
}

func TestLateSpansAreRemapped(t *testing.T) {
	td := fixtures.Load(t, "logfire_mcp.json")
	x := toolspan.NewExtractor(toolspan.DefaultConfig(), nil, true)
	tools, st := LateSpans(tracespans.All(td), x, Options{Redact: true})
	assert.Equal(t, 1, st.Remapped)
	assert.NotEmpty(t, tools)
	errors := 0
	for _, s := range spansByName(td, "MCP request: tools/call lookup_order") {
		if s.Status().Code() == ptrace.StatusCodeError {
			errors++
			assert.Equal(t, "tool_error", str(t, s.Attributes(), "error.type"))
		}
	}
	assert.Equal(t, 1, errors)
}

func TestFindingRecordOnTheAnswerSpan(t *testing.T) {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	traceID := pcommon.TraceID{1, 2, 3}
	answer := spans.AppendEmpty()
	answer.SetName("invoke_agent support")
	answer.SetTraceID(traceID)
	answer.SetSpanID(pcommon.SpanID{1})
	answer.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	answer.Attributes().PutStr("retrystorm.answer.cited_assets", "kb/refunds,kb/shipping")
	read := spans.AppendEmpty()
	read.SetName("fetch kb/shipping")
	read.SetTraceID(traceID)
	read.SetSpanID(pcommon.SpanID{2})
	read.SetParentSpanID(answer.SpanID())
	read.Attributes().PutStr("retrystorm.read.asset", "kb/shipping")

	tr := analysis.New(analysis.DefaultConfig(), nil, nil).Analyze(td)
	Apply(tr, Options{Reason: "divergence", Redact: true})

	var rec stormrecord.FindingRecord
	require.NoError(t, json.Unmarshal([]byte(str(t, answer.Attributes(), stormrecord.AttrFindingSummary)), &rec))
	assert.Equal(t, stormrecord.FindingSchema, rec.Schema)
	assert.Equal(t, stormrecord.FindingRecordID(traceID.String(), answer.SpanID().String()), rec.ID)
	require.Len(t, rec.Findings, 1)
	assert.Equal(t, "unbacked_citation", rec.Findings[0].Kind)
	assert.Contains(t, rec.Findings[0].Detail, "kb/refunds")
	_, onRead := read.Attributes().Get(stormrecord.AttrFindingSummary)
	assert.False(t, onRead, "the record sits on the span the finding concerns only")
	assert.Equal(t, "1", str(t, answer.Attributes(), stormrecord.AttrTraceFinding))
	require.Equal(t, 1, answer.Events().Len(), "the finding event stays")
}
