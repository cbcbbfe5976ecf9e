package stormsummaryexporter

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/stormreport"
	"github.com/retrystorm/retrystorm/internal/stormreport/summaryfile"
)

// recordBatch returns count storm records with distinct ids, numbered from first.
func recordBatch(first, count int) []stormrecord.Record {
	records := make([]stormrecord.Record, count)
	for i := range records {
		records[i] = stormRecord(traceIDHex(byte((first+i)%256)), fmt.Sprintf("call_%06d", first+i))
	}
	return records
}

// pushUntilRotated pushes batches of 150 records until the file has rotated n times and
// returns every record pushed, in order.
func pushUntilRotated(t *testing.T, e *summaryExporter, path string, n int) []stormrecord.Record {
	t.Helper()
	var pushed []stormrecord.Record
	for range 100 {
		batch := recordBatch(len(pushed), 150)
		require.NoError(t, e.pushTraces(context.Background(), summaryTrace(t, batch...)))
		pushed = append(pushed, batch...)
		backups, err := summaryfile.Backups(path)
		require.NoError(t, err)
		if rotations(backups) >= n {
			return pushed
		}
	}
	t.Fatalf("file did not rotate %d times", n)
	return nil
}

// rotations counts rotated files; a backup being compressed shows as two names.
func rotations(backups []string) int {
	distinct := map[string]bool{}
	for _, b := range backups {
		distinct[strings.TrimSuffix(b, summaryfile.GzipSuffix)] = true
	}
	return len(distinct)
}

// waitForCompressedBackups waits for the background compression after rotation to finish.
func waitForCompressedBackups(t *testing.T, path string, n int) []string {
	t.Helper()
	var backups []string
	require.Eventually(t, func() bool {
		var err error
		backups, err = summaryfile.Backups(path)
		require.NoError(t, err)
		for _, b := range backups {
			if !strings.HasSuffix(b, summaryfile.GzipSuffix) {
				return false
			}
		}
		return len(backups) >= n
	}, 10*time.Second, 10*time.Millisecond)
	return backups
}

func TestRotationKeepsRecordsWholeAndTheReportReadsAcrossFiles(t *testing.T) {
	cfg := testConfig(t)
	cfg.Rotation = RotationConfig{MaxMegabytes: 1, Compress: true}
	tel := newTelemetry(t)
	e := newTestExporter(t, cfg, tel)
	startExporter(t, e)

	pushed := pushUntilRotated(t, e, cfg.Path, 2)
	backups := waitForCompressedBackups(t, cfg.Path, 2)

	var written []string
	for _, path := range append(backups, cfg.Path) {
		reader, err := summaryfile.Open(path)
		require.NoError(t, err)
		raw, err := io.ReadAll(reader)
		require.NoError(t, err)
		require.NoError(t, reader.Close())
		lines := parseLines(t, raw) // fails on any partial or broken line
		for _, line := range lines {
			for field := range recordFieldTypes {
				if _, ok := line[field]; !ok && field != "trace_url" {
					t.Fatalf("record %v lacks %s: not whole", line["id"], field)
				}
			}
		}
		written = append(written, ids(lines)...)
	}
	want := make([]string, len(pushed))
	for i := range pushed {
		want[i] = pushed[i].ID
	}
	assert.Equal(t, want, written, "every record once, in order, across rotated files")
	assert.Equal(t, int64(len(pushed)), counter(t, tel, metadata.MetricRecordsWritten))

	files, err := stormreport.ResolveFiles([]string{cfg.Path})
	require.NoError(t, err)
	assert.Equal(t, append(backups, cfg.Path), files, "the report finds the rotated, compressed files")
	input, err := stormreport.Read(files)
	require.NoError(t, err)
	assert.Len(t, input.Records, len(pushed))
	assert.Zero(t, input.SkippedLines)
	report := stormreport.Build(input.Records, 20)
	assert.Equal(t, len(pushed), report.StormSpans)
}

func TestRestartAfterRotationPreloadsFromTheNewestBackup(t *testing.T) {
	cfg := testConfig(t)
	cfg.Rotation = RotationConfig{MaxMegabytes: 1, Compress: true}
	before := newTestExporter(t, cfg, newTelemetry(t))
	require.NoError(t, before.start(context.Background(), nil))
	pushed := pushUntilRotated(t, before, cfg.Path, 1)
	require.NoError(t, before.shutdown(context.Background()))
	waitForCompressedBackups(t, cfg.Path, 1)

	// The batch before the one that rotated lives only in the compressed backup now.
	inBackup := pushed[len(pushed)-300 : len(pushed)-150]
	tel := newTelemetry(t)
	after := newTestExporter(t, cfg, tel)
	startExporter(t, after)
	require.NoError(t, after.pushTraces(context.Background(), summaryTrace(t, inBackup...)))
	assert.Equal(t, int64(len(inBackup)), counter(t, tel, metadata.MetricRecordsDeduplicated))
	assert.Zero(t, counter(t, tel, metadata.MetricRecordsWritten))
}
