package buffer

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// withToolTimes sets every tool span's start and end to raw OTLP timestamps.
func withToolTimes(td ptrace.Traces, start, end pcommon.Timestamp) ptrace.Traces {
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := range spans.Len() {
		if s := spans.At(i); !s.ParentSpanID().IsEmpty() {
			s.SetStartTimestamp(start)
			s.SetEndTimestamp(end)
		}
	}
	return td
}

// Span times past int64 nanoseconds reach the storm record clamped to 2262-04-11, never
// wrapped into 1969, and each clamped time of a decided trace is counted, whether the
// trace was analysed (a storm) or only triaged (a clean trace sampling drops).
func TestTimestampsPastInt64AreClampedAndCounted(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 0
	h := newHarness(t, cfg, nil, WithSynchronous())
	h.Consume(withToolTimes(buffertest.StormTrace(buffertest.TraceID(1)), 1<<63+5, math.MaxUint64))        // 3 attempts
	h.Consume(withToolTimes(buffertest.CleanTrace(buffertest.TraceID(2), "lookup"), 1000, math.MaxUint64)) // 1 attempt
	h.Advance(3 * time.Second)

	assert.EqualValues(t, 3, h.Sum(metadata.MetricTimestampsClamped, attribute.String("field", "start")))
	assert.EqualValues(t, 4, h.Sum(metadata.MetricTimestampsClamped, attribute.String("field", "end")))
	var records []stormrecord.Record
	for _, s := range buffertest.SinkSpans(h.Sink)[buffertest.TraceID(1)] {
		if v, ok := s.Attributes().Get(stormrecord.AttrCallSummary); ok {
			var r stormrecord.Record
			require.NoError(t, json.Unmarshal([]byte(v.Str()), &r))
			records = append(records, r)
		}
	}
	require.Len(t, records, 1)
	r := records[0]
	assert.Equal(t, "2262-04-11T23:47:16.854775807Z", r.Time, "clamped to the last instant int64 nanoseconds hold")
	assert.Zero(t, r.MS, "every attempt starts and ends at the clamped instant")
	for _, at := range r.Timeline {
		assert.GreaterOrEqual(t, at.StartMSOffset, int64(0))
		assert.GreaterOrEqual(t, at.DurationMS, int64(0))
	}
	h.Conservation()
}
