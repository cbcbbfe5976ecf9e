package retrystormprocessor

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// TestUnbackedCitationRecordOnKeptAnswer: the answer cites a table whose read failed, so
// the trace is kept and the answer span carries the finding record the exporter writes;
// the record survives redaction as a record, and the same trace gives the same id.
func TestUnbackedCitationRecordOnKeptAnswer(t *testing.T) {
	ids := map[string]bool{}
	for range 2 {
		h := newHarness(t, testConfig(), nil)
		id := traceID(77)
		b := newSpanBuilder(id)
		root := b.root()
		root.Attributes().PutStr("retrystorm.answer.cited_assets", `["warehouse.refunds"]`)
		read := b.tool(root.SpanID(), "read_table", "call-1", 100, false)
		read.Attributes().PutStr("retrystorm.read.asset", "warehouse.refunds")
		read.Attributes().PutStr("gen_ai.tool.call.result", `{"isError":true,"content":"permission denied"}`)
		rootID := root.SpanID() // the consumed spans move on: keep what the checks need
		h.consume(b.td)
		h.advance(2 * time.Second)

		var record stormrecord.FindingRecord
		carriers := 0
		for _, s := range sinkSpans(h.sink)[id] {
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
