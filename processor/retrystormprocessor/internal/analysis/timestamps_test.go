package analysis

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

const (
	maxUint64Nanos = pcommon.Timestamp(math.MaxUint64) // 2^64−1: AsTime would give 1969
	pastInt64Nanos = pcommon.Timestamp(1<<63 + 5)      // just past what int64 nanoseconds hold
)

// times overrides a span's start and end with raw OTLP timestamps.
func times(start, end pcommon.Timestamp) spanOpt {
	return func(s ptrace.Span) { s.SetStartTimestamp(start); s.SetEndTimestamp(end) }
}

// Span times past int64 nanoseconds are clamped to 2262-04-11, never wrapped: the record
// time, its duration and the timeline stay sane, and each clamped time is counted.
func TestTimestampsPastInt64AreClampedNotWrapped(t *testing.T) {
	normal := pcommon.NewTimestampFromTime(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
	tests := []struct {
		name          string
		first, second spanOpt
		starts, ends  int
		wantMS        int64
		wantTime      string
	}{
		{
			name:   "end 2^64-1",
			first:  times(normal, maxUint64Nanos),
			second: times(normal+1e9, maxUint64Nanos),
			ends:   2, wantMS: int64(toolspan.MaxTimestamp-normal) / 1e6,
			wantTime: "2262-04-11T23:47:16.854775807Z",
		},
		{
			name:   "start and end 2^63+5",
			first:  times(pastInt64Nanos, pastInt64Nanos),
			second: times(pastInt64Nanos, maxUint64Nanos),
			starts: 2, ends: 2, wantMS: 0,
			wantTime: "2262-04-11T23:47:16.854775807Z",
		},
		{
			// The clamped start sorts the attempt last; the call still ends at the latest end.
			name:   "start 2^64-1 after a normal end",
			first:  times(maxUint64Nanos, normal),
			second: times(normal, normal+2e6),
			starts: 1, wantMS: 2,
			wantTime: "2026-11-30T10:00:00.002Z",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTrace(40)
			root := b.span("invoke_agent a", noParent, 0, 100, agentSpan("a")...)
			b.span("execute_tool search", root, 0, 0, genaiTool("search", "call_1", `{"q":"x"}`, errored, tt.first)...)
			b.span("execute_tool search", root, 0, 0, genaiTool("search", "call_1", `{"q":"x"}`, tt.second)...)
			tr := analyze(t, b)
			assert.Equal(t, tt.starts, tr.ClampedStarts, "clamped starts")
			assert.Equal(t, tt.ends, tr.ClampedEnds, "clamped ends")
			r := onlyUnit(t, tr).Record
			require.NotNil(t, r, "a storm has a record")
			assert.Equal(t, tt.wantTime, r.Time)
			at, err := time.Parse(time.RFC3339Nano, r.Time)
			require.NoError(t, err)
			assert.False(t, at.Before(normal.AsTime()), "record time %s is before the attempts", r.Time)
			assert.Equal(t, tt.wantMS, r.MS)
			require.Len(t, r.Timeline, 2)
			for _, at := range r.Timeline {
				assert.GreaterOrEqual(t, at.StartMSOffset, int64(0))
				assert.GreaterOrEqual(t, at.DurationMS, int64(0))
			}
		})
	}
}

// Triage reads the same clamped times as the analysis, and counts them the same.
func TestTriageCountsClampedTimestamps(t *testing.T) {
	b := newTrace(41)
	root := b.span("invoke_agent a", noParent, 0, 100, agentSpan("a")...)
	b.span("execute_tool search", root, 0, 0, genaiTool("search", "call_1", `{"q":"x"}`, okay, times(pastInt64Nanos, maxUint64Nanos))...)
	an := New(DefaultConfig(), nil, stalecache.New(100))
	q := an.Triage(b.Traces)
	require.True(t, q.Clean, string(q.stop))
	assert.Equal(t, 1, q.ClampedStarts)
	assert.Equal(t, 1, q.ClampedEnds)
	st := an.Settle(q, "")
	assert.Equal(t, 1, st.ClampedStarts)
	assert.Equal(t, 1, st.ClampedEnds)
	tr := an.Analyze(b.Traces)
	assert.Equal(t, 1, tr.ClampedStarts)
	assert.Equal(t, 1, tr.ClampedEnds)
}

// The stale-cache age is computed on clamped times: an attempt at 2^64−1 is later than a
// result remembered in 2026 (int64 would have made it 1 ns before the epoch), and a result
// remembered at 2^63+5 is not older than an attempt in 2026.
func TestStaleCacheAgeOnClampedTimes(t *testing.T) {
	result := attr("gen_ai.tool.call.result", `{"fresh":"2026-11-28"}`)
	stormWith := func(traceByte byte, fast spanOpt) *traceBuilder {
		b := newTrace(traceByte)
		root := b.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
		b.span("execute_tool freshness", root, 10, 410, genaiTool("freshness", "c1", `{"t":"gold"}`, status(ptrace.StatusCodeError, "timeout"))...)
		b.span("execute_tool freshness", root, 420, 421, genaiTool("freshness", "c1", `{"t":"gold"}`, result, fast)...)
		return b
	}
	warmAt := func(traceByte byte, at pcommon.Timestamp) *traceBuilder {
		b := newTrace(traceByte)
		root := b.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
		b.span("execute_tool freshness", root, 0, 0, genaiTool("freshness", "w1", `{"t":"gold"}`, result, times(at, at+1))...)
		return b
	}
	normal := pcommon.NewTimestampFromTime(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))

	an := New(DefaultConfig(), nil, stalecache.New(100))
	require.Empty(t, an.Analyze(warmAt(42, normal).Traces).Findings)
	late := an.Analyze(stormWith(43, times(maxUint64Nanos-1e6, maxUint64Nanos)).Traces)
	assert.Contains(t, allKinds(late), "stale_cache_suspect", "2262 is long after 2026")

	an = New(DefaultConfig(), nil, stalecache.New(100))
	require.Empty(t, an.Analyze(warmAt(44, pastInt64Nanos).Traces).Findings)
	early := an.Analyze(stormWith(45, times(normal, normal+1e6)).Traces)
	assert.NotContains(t, allKinds(early), "stale_cache_suspect", "a result first seen in 2262 is not older than 2026")
}
