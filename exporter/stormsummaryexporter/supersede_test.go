package stormsummaryexporter

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// partOf is the record of the call as a part of its trace saw it: its first n attempts.
func partOf(r stormrecord.Record, n int) stormrecord.Record {
	r.Attempts = n
	r.Statuses = slices.Clone(r.Statuses[:n])
	r.AttemptSpanIDs = r.AttemptSpanIDs[:n]
	r.Timeline = r.Timeline[:n]
	r.Storm = n > 1
	r.Statuses[n-1] = "error" // the call's last attempt seen failed
	return r
}

// TestAMoreCompleteRecordOfAnIDIsWrittenAgain: the record of a call that saw more of its
// attempts (the rest of a trace decided in two parts), or a later revision of it (a
// finding found after its trace was forwarded), is written under the same id; the same
// record again, or a less complete one, is a duplicate. Across a restart too: the memory
// preloaded from the file knows how complete each line was.
func TestAMoreCompleteRecordOfAnIDIsWrittenAgain(t *testing.T) {
	cfg := testConfig(t)
	cfg.Include = []string{includeStorm, includeFailure}
	full := stormRecord(traceIDHex(1), "call_1")
	tel := newTelemetry(t)
	e := newTestExporter(t, cfg, tel)
	startExporter(t, e)
	push := func(records ...stormrecord.Record) {
		t.Helper()
		require.NoError(t, e.pushTraces(context.Background(), summaryTrace(t, records...)))
	}
	push(partOf(full, 1))
	push(partOf(full, 1))       // a re-export: a duplicate
	push(full, partOf(full, 2)) // both parts in one batch: the fuller is written
	revised := full
	revised.Revision = 2
	revised.Findings = []stormrecord.Finding{{Kind: "stale_cache_suspect", Detail: "late"}}
	push(revised)
	push(full) // the earlier revision, re-exported: a duplicate

	lines := readLines(t, cfg.Path)
	require.Len(t, lines, 3)
	for i, want := range []float64{1, 3, 3} {
		assert.Equal(t, full.ID, lines[i]["id"])
		assert.Equal(t, want, lines[i]["attempts"], "line %d", i)
	}
	assert.Equal(t, []float64{1, 1, 2}, []float64{lines[0]["revision"].(float64), lines[1]["revision"].(float64), lines[2]["revision"].(float64)})
	assert.Equal(t, int64(3), counter(t, tel, metadata.MetricRecordsWritten))
	assert.Equal(t, int64(2), counter(t, tel, metadata.MetricRecordsSuperseding))
	assert.Equal(t, int64(3), counter(t, tel, metadata.MetricRecordsDeduplicated))
	require.NoError(t, e.shutdown(context.Background()))

	tel = newTelemetry(t)
	e = newTestExporter(t, cfg, tel)
	startExporter(t, e)
	push(full, partOf(full, 2), revised) // after a restart: all known, none more complete
	assert.Len(t, readLines(t, cfg.Path), 3)
	assert.Equal(t, int64(0), counter(t, tel, metadata.MetricRecordsWritten))
	assert.Equal(t, int64(3), counter(t, tel, metadata.MetricRecordsDeduplicated))
}

// TestPreloadKeepsTheMostCompleteLineOfAnID: a file whose later line of an id is the less
// complete (a restart wrote the first part's record after the whole one) still dedups
// against the more complete.
func TestPreloadKeepsTheMostCompleteLineOfAnID(t *testing.T) {
	cfg := testConfig(t)
	full := stormRecord(traceIDHex(2), "call_2")
	e := newTestExporter(t, cfg, newTelemetry(t))
	startExporter(t, e)
	require.NoError(t, e.pushTraces(context.Background(), summaryTrace(t, full)))
	require.NoError(t, e.shutdown(context.Background()))
	lines, err := preloadIDs(cfg.Path, 1<<20)
	require.NoError(t, err)
	require.Len(t, lines, 1)

	e = newTestExporter(t, cfg, newTelemetry(t))
	e.remember(full.ID, stormrecord.Completeness{Attempts: 3, Revision: 1})
	e.remember(full.ID, stormrecord.Completeness{Attempts: 1, Revision: 1})
	got, ok := e.written.Peek(full.ID)
	require.True(t, ok)
	assert.Equal(t, 3, got.Attempts)
}
