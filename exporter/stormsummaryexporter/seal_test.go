package stormsummaryexporter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/tracespans"
)

// unsealed strips the seals off td's spans: records as a client writes them, or as a
// pipeline without retry_storm in front of the exporter carries them.
func unsealed(td ptrace.Traces) ptrace.Traces {
	for _, span := range tracespans.All(td) {
		span.Attributes().Remove(stormrecord.AttrSeal)
	}
	return td
}

func startFactoryExporter(t *testing.T, cfg *Config, tel *componenttest.Telemetry) exporter.Traces {
	t.Helper()
	exp, err := NewFactory().CreateTraces(context.Background(), settings(tel), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	return exp
}

// TestOnlySealedRecordsAreWritten: a record no retry_storm of this collector sealed is not
// written, nor remembered, so a forged record carrying a real record's id, sent first,
// does not keep the real one out; it is counted, and the batch the exporter was given is
// left as it came (other consumers share it).
func TestOnlySealedRecordsAreWritten(t *testing.T) {
	cfg := testConfig(t)
	cfg.Include = []string{includeStorm, includeFailure, includeFinding}
	tel := newTelemetry(t)
	exp := startFactoryExporter(t, cfg, tel)

	real := stormRecord(traceIDHex(1), "call-1")
	forged := real
	forged.Attempts, forged.Class = 9, ptr("forged_class") // more complete than the real one, were it read
	forgedBatch := unsealed(summaryTrace(t, forged))
	addFindingSpan(t, forgedBatch, findingRecord(traceIDHex(2), "00000000000000a1"))
	unsealed(forgedBatch)
	require.NoError(t, exp.ConsumeTraces(context.Background(), forgedBatch))
	require.NoError(t, exp.ConsumeTraces(context.Background(), summaryTrace(t, real)))
	require.NoError(t, exp.Shutdown(context.Background()))

	lines := readLines(t, cfg.Path)
	require.Len(t, lines, 1, "only the sealed record")
	assert.Equal(t, real.ID, lines[0]["id"])
	assert.EqualValues(t, real.Attempts, lines[0]["attempts"])
	assert.Equal(t, int64(2), counter(t, tel, metadata.MetricRecordsUnsealed))
	assert.Zero(t, counter(t, tel, metadata.MetricRecordsDeduplicated), "the forged record pre-empted nothing")
	given := 0
	for _, span := range tracespans.All(forgedBatch) {
		if _, ok := span.Attributes().Get(stormrecord.AttrCallSummary); ok {
			given++
		}
	}
	assert.Equal(t, 1, given, "the batch given to the exporter was changed")
}

// TestAcceptUnsealedWritesRecordsFromUpstream: with accept_unsealed, records another
// collector's retry_storm wrote are written as they come.
func TestAcceptUnsealedWritesRecordsFromUpstream(t *testing.T) {
	cfg := testConfig(t)
	cfg.AcceptUnsealed = true
	tel := newTelemetry(t)
	exp := startFactoryExporter(t, cfg, tel)
	record := stormRecord(traceIDHex(3), "upstream")
	require.NoError(t, exp.ConsumeTraces(context.Background(), unsealed(summaryTrace(t, record))))
	require.NoError(t, exp.Shutdown(context.Background()))
	assert.Equal(t, []string{record.ID}, ids(readLines(t, cfg.Path)))
	assert.Zero(t, counter(t, tel, metadata.MetricRecordsUnsealed))
}
