package analysis

import (
	"testing"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// attemptRecordTrace is the per-attempt record example (the rows below: one call tried three times,
// timeout, error, ok; testdata/README.md, attempt_record.json) as OTel spans carrying the fields.
func attemptRecordTrace() *traceBuilder {
	b := newTrace(0x19)
	b.Base = b.Base.Truncate(0)
	root := b.span("invoke_agent checkout-agent", pcommon.SpanID{}, 0, 8000, agentSpan("checkout-agent")...)
	rows := []struct {
		attempt       int
		status        string
		start, end    int64
		tokIn, tokOut int
		effect        string
	}{
		{1, "timeout", 1757385600120, 1757385604120, 812, 0, "unknown"},
		{2, "error", 1757385604200, 1757385606100, 790, 48, "unknown"},
		{3, "ok", 1757385606200, 1757385607800, 788, 36, "external"},
	}
	epoch := b.Base.UnixMilli()
	for _, r := range rows {
		b.span("charge_card", root, r.start-epoch, r.end-epoch,
			attr("run_id", "run_7f3"), attr("span_id", "span_19"), attr("attempt", r.attempt),
			attr("tool_name", "charge_card"), attr("args_hash", "a91c9e0c"), attr("idem_hash", "e2b1aa44"),
			attr("status", r.status), attr("token_in", r.tokIn), attr("token_out", r.tokOut),
			attr("side_effect", r.effect))
	}
	return b
}

func TestAttemptRecordExampleTimeline(t *testing.T) {
	tr := New(DefaultConfig(), nil, nil).Analyze(attemptRecordTrace().Traces)
	require.Len(t, tr.Units, 1)
	u := tr.Units[0]
	require.NotNil(t, u.Record)
	r := u.Record
	assert.Equal(t, "span_19", r.CallKey)
	assert.Equal(t, 3, r.Attempts)
	assert.Equal(t, []string{"timeout", "error", "ok"}, r.Statuses)
	assert.Equal(t, 1, r.UniqueArgs)
	assert.EqualValues(t, 7680, r.MS)
	require.NotNil(t, r.IdemHash)
	assert.Equal(t, "e2b1aa44", *r.IdemHash)
	assert.True(t, r.StatusFlip)
	require.NotNil(t, r.Class)
	assert.Equal(t, "transient_dependency", *r.Class)
	assert.Equal(t, stormrecord.LayerExecutor, r.Layer)
	assert.Equal(t, "run_7f3", *r.RunID)
	assert.Equal(t, "charge_card", r.ToolName)
	assert.EqualValues(t, 2390, *r.TokensIn)
	assert.EqualValues(t, 84, *r.TokensOut)
	assert.EqualValues(t, 1602, *r.FailedTokensIn)
	assert.EqualValues(t, 48, *r.FailedTokensOut)
	assert.Equal(t, []string{"unknown", "unknown", "external"}, r.SideEffects)
	assert.Empty(t, r.Findings)
	assert.Zero(t, r.IncompleteAttempts)
	assert.Len(t, r.AttemptSpanIDs, 3)
	assert.Equal(t, "2025-09-09T02:40:07.8Z", r.Time)
	assert.True(t, tr.Signals.Storm)
	assert.True(t, tr.Signals.ToolError)
}
