package analysis

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// citingTrace is an agent whose answer cites three assets and a subagent whose answer
// cites one; only gold.users is read successfully.
func citingTrace() *traceBuilder {
	b := newTrace(40)
	root := b.span("invoke_agent a", noParent, 0, 900, append(agentSpan("a"), attr("run_id", "run_7"),
		attr("retrystorm.answer.cited_assets", []any{"gold.orders", "gold.users", "gold.refunds"}))...)
	b.span("execute_tool read_table", root, 10, 90, genaiTool("read_table", "c1", `{"t":"gold.users"}`,
		attr("retrystorm.read.asset", "gold.users"))...)
	b.span("execute_tool read_table", root, 100, 190, genaiTool("read_table", "c2", `{"t":"gold.orders"}`,
		attr("retrystorm.read.asset", "gold.orders"), errored)...)
	sub := b.span("invoke_agent b", root, 200, 800, agentSpan("b")...)
	b.span("answer", sub, 700, 790, attr("retrystorm.answer.cited_assets", "gold.ledger"))
	return b
}

func TestFindingRecordPerSpanOfTraceLevelFindings(t *testing.T) {
	b := citingTrace()
	tr := analyze(t, b)
	require.Len(t, tr.FindingRecords, 2, "one record per span the findings concern")

	answer := tr.FindingRecords[0]
	assert.Equal(t, "invoke_agent a", answer.Span.Name())
	r := answer.Record
	traceHex := b.TraceID.String()
	assert.Equal(t, stormrecord.FindingSchema, r.Schema)
	assert.Equal(t, stormrecord.FindingRecordID(traceHex, answer.Span.SpanID().String()), r.ID)
	assert.Equal(t, traceHex, r.TraceID)
	assert.Equal(t, answer.Span.SpanID().String(), r.SpanID)
	assert.Equal(t, "invoke_agent a", r.SpanName)
	assert.Equal(t, "2026-11-30T10:00:00.9Z", r.Time, "when the answer ended")
	assert.Equal(t, ptr("agent-svc"), r.ServiceName)
	assert.Equal(t, ptr("run_7"), r.RunID)
	require.Len(t, r.Findings, 2, "a failed read backs nothing, and each unbacked asset is a finding")
	for _, f := range r.Findings {
		assert.Equal(t, "unbacked_citation", f.Kind)
	}
	assert.Contains(t, r.Findings[0].Detail, `"gold.orders"`)
	assert.Contains(t, r.Findings[1].Detail, `"gold.refunds"`)

	nested := tr.FindingRecords[1].Record
	assert.Equal(t, "answer", nested.SpanName)
	assert.Nil(t, nested.RunID, "the subagent carries no run id either")
	require.Len(t, nested.Findings, 1)

	for _, u := range tr.Units {
		if u.Record != nil {
			for _, f := range u.Record.Findings {
				assert.NotEqual(t, "unbacked_citation", f.Kind, "a trace-level finding is in no call record")
			}
		}
	}
}

func TestFindingRecordIsStableAcrossAnalyses(t *testing.T) {
	first := analyze(t, citingTrace())
	again := analyze(t, citingTrace())
	require.Len(t, again.FindingRecords, len(first.FindingRecords))
	for i := range first.FindingRecords {
		assert.Equal(t, first.FindingRecords[i].Record, again.FindingRecords[i].Record, "the same trace gives the same record, id included")
	}
}

func TestNoFindingRecordWhenEveryCitationIsBacked(t *testing.T) {
	b := newTrace(41)
	root := b.span("invoke_agent a", noParent, 0, 900, append(agentSpan("a"),
		attr("retrystorm.answer.cited_assets", `["gold.users"]`))...)
	b.span("execute_tool read_table", root, 10, 90, genaiTool("read_table", "c1", `{}`, attr("retrystorm.read.asset", "gold.users"))...)
	assert.Empty(t, analyze(t, b).FindingRecords)
}

func TestFindingRecordTimeOfHostileTimestamps(t *testing.T) {
	b := newTrace(42)
	b.span("answer", noParent, 0, 10, attr("retrystorm.answer.cited_assets", "doc-1"),
		func(s ptrace.Span) { s.SetEndTimestamp(pcommon.Timestamp(math.MaxUint64)) })
	b.span("late answer", noParent, 500, 10, attr("retrystorm.answer.cited_assets", "doc-2"))
	tr := analyze(t, b)
	require.Len(t, tr.FindingRecords, 2)
	assert.Equal(t, "2262-04-11T23:47:16.854775807Z", tr.FindingRecords[0].Record.Time, "clamped, not wrapped to before 1970")
	assert.Equal(t, "2026-11-30T10:00:00.5Z", tr.FindingRecords[1].Record.Time, "an end before the start: the start")
}
