package retrystormprocessor

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// TestUnbackedCitationRecordOnKeptAnswer: the answer cites a table whose read failed, so
// the trace is kept and the answer span carries the finding record the exporter writes;
// the record survives redaction as a record, and the same trace gives the same id.
func TestUnbackedCitationRecordOnKeptAnswer(t *testing.T) {
	ids := map[string]bool{}
	for range 2 {
		h := newHarness(t, testConfig(), nil)
		id := buffertest.TraceID(77)
		b := buffertest.NewSpanBuilder(id)
		root := b.Root()
		root.Attributes().PutStr("retrystorm.answer.cited_assets", `["warehouse.refunds"]`)
		read := b.Tool(root.SpanID(), "read_table", "call-1", 100, false)
		read.Attributes().PutStr("retrystorm.read.asset", "warehouse.refunds")
		read.Attributes().PutStr("gen_ai.tool.call.result", `{"isError":true,"content":"permission denied"}`)
		rootID := root.SpanID() // the consumed spans move on: keep what the checks need
		h.Consume(b.Traces)
		h.Advance(2 * time.Second)

		var record stormrecord.FindingRecord
		carriers := 0
		for _, s := range buffertest.SinkSpans(h.Sink)[id] {
			v, ok := s.Attributes().Get(stormrecord.AttrFindingSummary)
			if !ok {
				continue
			}
			carriers++
			assert.Equal(t, rootID, s.SpanID(), "on the answer span")
			require.NoError(t, json.Unmarshal([]byte(v.Str()), &record))
		}
		require.Equal(t, 1, carriers)
		assert.Equal(t, stormrecord.FindingSchema, record.Schema)
		assert.Equal(t, stormrecord.FindingRecordID(id.String(), rootID.String()), record.ID)
		assert.Equal(t, rootID.String(), record.SpanID)
		require.Len(t, record.Findings, 1)
		assert.Equal(t, "unbacked_citation", record.Findings[0].Kind)
		assert.Equal(t, "checkout-agent", *record.ServiceName)
		ids[record.ID] = true
	}
	assert.Len(t, ids, 1, "one trace, one record id, however often it is processed")
}

// TestRecordsCarryNoPayloadInTheirFreeText: span names are scrubbed of payload values in
// the trace, and so is what the records copied from them — a finding record's span_name and
// every finding's detail, on the records and the finding events — while the ids and tool names the records join on stay.
func TestRecordsCarryNoPayloadInTheirFreeText(t *testing.T) {
	const secret = "tok_9f8e7d6c5b4a3921"
	h := newHarness(t, testConfig(), nil)
	id := buffertest.TraceID(78)
	b := buffertest.NewSpanBuilder(id)
	root := b.Span("invoke_agent answer for "+secret, pcommon.SpanID{}, 0, 10_000, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "checkout",
		"retrystorm.answer.cited_assets": `["warehouse.refunds"]`,
	})
	read := b.Tool(root.SpanID(), "read_table", "call-1", 100, true)
	read.Attributes().PutStr("gen_ai.tool.call.arguments", `{"table":"warehouse.refunds","token":"`+secret+`"}`)
	read.Attributes().PutStr("retrystorm.read.asset", "warehouse.refunds")
	h.Consume(b.Traces)
	h.Advance(2 * time.Second)

	var storm stormrecord.Record
	var finding stormrecord.FindingRecord
	for _, s := range buffertest.SinkSpans(h.Sink)[id] {
		assert.NotContains(t, s.Name(), secret, "span %s", s.Name())
		for _, ev := range s.Events().All() {
			if v, ok := ev.Attributes().Get(stormrecord.FindingDetail); ok {
				assert.NotContains(t, v.Str(), secret, "the detail of a finding event")
			}
		}
		if v, ok := s.Attributes().Get(stormrecord.AttrCallSummary); ok {
			require.NoError(t, json.Unmarshal([]byte(v.Str()), &storm))
		}
		if v, ok := s.Attributes().Get(stormrecord.AttrFindingSummary); ok {
			assert.NotContains(t, v.Str(), secret)
			require.NoError(t, json.Unmarshal([]byte(v.Str()), &finding))
		}
	}
	require.Len(t, finding.Findings, 1)
	assert.Equal(t, "invoke_agent answer for [redacted]", finding.SpanName)
	require.NotEmpty(t, storm.Findings, "the failed read under a green answer is an unrecovered_failure")
	for _, f := range storm.Findings {
		assert.NotContains(t, f.Detail, secret, f.Kind)
	}
	assert.Contains(t, storm.Findings[0].Detail, "[redacted]", "the detail quoted the answer span's name")
	assert.Equal(t, "read_table", storm.ToolName)
	assert.Equal(t, stormrecord.RecordID(id.String(), storm.CallKey), storm.ID)
	assert.Positive(t, h.Sum(metadata.MetricRedactions, attribute.String("where", "scrubbed")))
}
