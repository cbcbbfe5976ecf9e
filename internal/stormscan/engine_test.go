package stormscan

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/retrystorm/retrystorm/internal/attemptlog"
)

// TestSummaryReadsTheProcessorsTelemetryNames: the names the summary reads are the
// processor's instruments, so a rename there fails here instead of showing zeros.
func TestSummaryReadsTheProcessorsTelemetryNames(t *testing.T) {
	tr := newTraffic(t, 8, 20)
	ctx := context.Background()
	ec := defaultEngineConfig()
	ec.processor.RootGrace = 0 // decided at the root: a resent trace is late
	eng, err := newEngine(ctx, ec, filepath.Join(t.TempDir(), "r.jsonl"), &testWriter{t})
	require.NoError(t, err)
	defer eng.close(ctx)
	for _, td := range tr.requests() {
		require.NoError(t, eng.consume(ctx, td))
	}
	require.NoError(t, eng.consume(ctx, tr.requests()[0]))
	// A trace whose root never comes is decided at the end: an early decision (shutdown).
	attempts := newAttemptSpans()
	for line := range strings.Lines(attemptLogExample) {
		ev, ok, err := attemptlog.ParseLine([]byte(line))
		require.True(t, ok)
		require.NoError(t, err)
		attempts.add(ev)
	}
	require.NoError(t, eng.consume(ctx, attempts.take()))
	require.NoError(t, eng.finish(ctx))
	var rm metricdata.ResourceMetrics
	require.NoError(t, eng.reader.Collect(ctx, &rm))
	names := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			names[m.Name] = true
		}
	}
	for _, want := range []string{metricTraces, metricEarlyDecisions, metricLateSpans, metricSpansDropped} {
		assert.True(t, names[want], "%s is an instrument of the processor", want)
	}
	c, err := eng.counts(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(len(tr.traces)+1), c.traces["kept"]+c.traces["dropped"])
	assert.Equal(t, int64(tr.requests()[0].SpanCount()), c.lateSpans)
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
