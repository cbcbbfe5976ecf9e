package stormsummaryexporter

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"
	"github.com/retrystorm/retrystorm/internal/stormreport/summaryfile"
)

var errDiskGone = errors.New("disk gone")

// failingWriter forwards half of each of its first failures writes to the real writer,
// then reports an error: the torn write a full disk or a yanked volume leaves.
type failingWriter struct {
	next io.Writer

	mu       sync.Mutex
	failures int
	calls    int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls++
	if w.failures == 0 {
		return w.next.Write(p)
	}
	w.failures--
	n, err := w.next.Write(p[:len(p)/2])
	if err != nil {
		return n, err
	}
	return n, errDiskGone
}

func failFirst(n int, installed **failingWriter) exporterOption {
	return withWriterWrapper(func(next io.Writer) io.Writer {
		w := &failingWriter{next: next, failures: n}
		*installed = w
		return w
	})
}

func TestFailedWriteLeavesNoPartialLine(t *testing.T) {
	cfg := testConfig(t)
	tel := newTelemetry(t)
	var writer *failingWriter
	e := newTestExporter(t, cfg, tel, failFirst(0, &writer))
	startExporter(t, e)
	require.NoError(t, e.pushTraces(context.Background(), summaryTrace(t, stormRecord(traceIDHex(1), "earlier"))))
	before, err := os.ReadFile(cfg.Path)
	require.NoError(t, err)

	writer.failures = 1
	batch := summaryTrace(t, stormRecord(traceIDHex(2), "a"), stormRecord(traceIDHex(3), "b"))
	err = e.pushTraces(context.Background(), batch)
	require.ErrorIs(t, err, errDiskGone)
	assert.ErrorContains(t, err, "append")
	after, err := os.ReadFile(cfg.Path)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the failed batch must leave the file as it was")
	assert.Equal(t, int64(1), counter(t, tel, metadata.MetricWriteErrors))

	require.NoError(t, e.pushTraces(context.Background(), batch), "the retried batch")
	require.NoError(t, e.pushTraces(context.Background(), batch), "a second retry")
	assert.Equal(t, []string{"earlier", "a", "b"}, callKeys(readLines(t, cfg.Path)))
	assert.Equal(t, int64(3), counter(t, tel, metadata.MetricRecordsWritten))
}

func callKeys(lines []map[string]any) []string {
	out := make([]string, len(lines))
	for i, line := range lines {
		out[i], _ = line["call_key"].(string)
	}
	return out
}

// A failed write that made the rotator rotate first lands in a fresh file: the rollback
// empties that file and leaves the rotated one untouched.
func TestFailedWriteAfterRotationRollsBackTheNewFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "storms.jsonl")
	var writer *failingWriter
	file, err := openSummaryFile(path, RotationConfig{MaxMegabytes: 1}, zap.NewNop(), func(next io.Writer) io.Writer {
		writer = &failingWriter{next: next}
		return writer
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, file.close()) }()

	full := line(1000 * 1024)
	_, err = file.appendLines([][]byte{full})
	require.NoError(t, err)

	writer.failures = 1
	batch := [][]byte{line(60 * 1024), line(60 * 1024)}
	committed, err := file.appendLines(batch)
	require.ErrorIs(t, err, errDiskGone)
	assert.Zero(t, committed)

	backups, err := summaryfile.Backups(path)
	require.NoError(t, err)
	require.Len(t, backups, 1, "the overflowing write rotated")
	rotated, err := os.ReadFile(backups[0])
	require.NoError(t, err)
	assert.Equal(t, full, rotated)
	current, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Empty(t, current, "the partial write in the new file is rolled back")

	_, err = file.appendLines(batch)
	require.NoError(t, err)
	current, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, bytes.Join(batch, nil), current)
}

// line is a JSONL record of exactly size bytes, newline included.
func line(size int) []byte {
	prefix := `{"id":"pad","pad":"`
	return []byte(prefix + strings.Repeat("x", size-len(prefix)-3) + "\"}\n")
}

func TestBatchLargerThanFileIsSplitAtRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "storms.jsonl")
	file, err := openSummaryFile(path, RotationConfig{MaxMegabytes: 1}, zap.NewNop(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, file.close()) }()

	batch := [][]byte{line(700 * 1024), line(700 * 1024), line(40)}
	committed, err := file.appendLines(batch)
	require.NoError(t, err)
	assert.Equal(t, 3, committed)
	backups, err := summaryfile.Backups(path)
	require.NoError(t, err)
	require.Len(t, backups, 1)
	first, err := os.ReadFile(backups[0])
	require.NoError(t, err)
	assert.Equal(t, batch[0], first)
	current, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, append(append([]byte{}, batch[1]...), batch[2]...), current)

	_, err = file.appendLines([][]byte{line(1024*1024 + 1)})
	assert.ErrorIs(t, err, errRecordTooLarge)
}

func TestStartRepairsLineTornByACrash(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, os.MkdirAll(filepath.Dir(cfg.Path), 0o700))
	whole := `{"id":"a1","call_key":"a"}` + "\n"
	require.NoError(t, os.WriteFile(cfg.Path, []byte(whole+`{"id":"b2","call_k`), 0o600))

	e := newTestExporter(t, cfg, newTelemetry(t))
	startExporter(t, e)
	require.NoError(t, e.pushTraces(context.Background(), summaryTrace(t, stormRecord(traceIDHex(1), "c"))))
	assert.Equal(t, []string{"a", "c"}, callKeys(readLines(t, cfg.Path)))
}

func TestFilesAre0600InA0700Directory(t *testing.T) {
	cfg := testConfig(t)
	cfg.Path = filepath.Join(t.TempDir(), "deep", "summaries", "storms.jsonl")
	cfg.Rotation = RotationConfig{MaxMegabytes: 1, Compress: true}
	e := newTestExporter(t, cfg, newTelemetry(t))
	startExporter(t, e)

	assertMode(t, filepath.Dir(cfg.Path), os.ModeDir|0o700)
	assertMode(t, filepath.Dir(filepath.Dir(cfg.Path)), os.ModeDir|0o700)
	assertMode(t, cfg.Path, 0o600)

	pushUntilRotated(t, e, cfg.Path, 1)
	backups := waitForCompressedBackups(t, cfg.Path, 1)
	for _, backup := range backups {
		assertMode(t, backup, 0o600)
	}
	assertMode(t, cfg.Path, 0o600)
}

func TestExistingFileIsTightenedTo0600(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, os.MkdirAll(filepath.Dir(cfg.Path), 0o700))
	require.NoError(t, os.WriteFile(cfg.Path, nil, 0o644))
	require.NoError(t, os.Chmod(cfg.Path, 0o644))
	e := newTestExporter(t, cfg, newTelemetry(t))
	startExporter(t, e)
	assertMode(t, cfg.Path, 0o600)
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equalf(t, want, info.Mode()&(os.ModeDir|os.ModePerm), "mode of %s", path)
}

func TestFileRemovedOrReplacedBehindTheExporter(t *testing.T) {
	tests := []struct {
		name  string
		touch func(t *testing.T, path string)
		moved []string // call keys left in the moved-away file
	}{
		{name: "removed", touch: func(t *testing.T, path string) { require.NoError(t, os.Remove(path)) }},
		{name: "moved away", touch: func(t *testing.T, path string) { require.NoError(t, os.Rename(path, path+".old")) }, moved: []string{"before"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			e := newTestExporter(t, cfg, newTelemetry(t))
			startExporter(t, e)
			require.NoError(t, e.pushTraces(context.Background(), summaryTrace(t, stormRecord(traceIDHex(1), "before"))))
			tt.touch(t, cfg.Path)

			require.NoError(t, e.pushTraces(context.Background(), summaryTrace(t, stormRecord(traceIDHex(2), "after"))))
			assert.Equal(t, []string{"after"}, callKeys(readLines(t, cfg.Path)), "the write lands in the file at path")
			assertMode(t, cfg.Path, 0o600)
			if tt.moved != nil {
				assert.Equal(t, tt.moved, callKeys(readLines(t, cfg.Path+".old")))
			}
		})
	}
}
