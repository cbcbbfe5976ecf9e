package stormsummaryexporter

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"
	"github.com/retrystorm/retrystorm/internal/stormreport/summaryfile"
)

// victimContent ends in a partial line: a followed link would have it cut (repair) and
// appended to, and its mode tightened.
const victimContent = "{\"id\":\"v1\"}\nsomeone else's partial line"

// sharedDir is a world-writable directory (as /tmp, or a shared volume) holding a file
// that is not the exporter's.
func sharedDir(t *testing.T) (dir, victim string) {
	t.Helper()
	dir = t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o777))
	victim = filepath.Join(t.TempDir(), "victim.txt")
	require.NoError(t, os.WriteFile(victim, []byte(victimContent), 0o644))
	require.NoError(t, os.Chmod(victim, 0o644))
	return dir, victim
}

func assertUntouched(t *testing.T, victim string) {
	t.Helper()
	content, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, victimContent, string(content), "the link's target was written")
	assertMode(t, victim, 0o644)
}

func TestStartRefusesASymlinkAtPath(t *testing.T) {
	tests := []struct {
		name   string
		target func(victim string) string
	}{
		{name: "to another file", target: func(victim string) string { return victim }},
		{name: "dangling", target: func(victim string) string { return victim + ".missing" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, victim := sharedDir(t)
			cfg := testConfig(t)
			cfg.Path = filepath.Join(dir, "storms.jsonl")
			require.NoError(t, os.Symlink(tt.target(victim), cfg.Path))

			e := newTestExporter(t, cfg, newTelemetry(t))
			err := e.start(context.Background(), nil)
			require.ErrorIs(t, err, errSymlink)
			assert.EqualError(t, err, "open summary file: "+cfg.Path+" is a symbolic link: refusing to follow it")
			require.NoError(t, e.shutdown(context.Background()))

			assertUntouched(t, victim)
			assert.NoFileExists(t, victim+".missing", "the dangling link's target was created")
			info, err := os.Lstat(cfg.Path)
			require.NoError(t, err)
			assert.NotZero(t, info.Mode()&os.ModeSymlink, "the link itself is left alone")
		})
	}
}

// A link planted at path after start (the file removed and replaced) fails the write; the
// retry fails the same way until the link is gone.
func TestWriteRefusesASymlinkPlantedAtPath(t *testing.T) {
	dir, victim := sharedDir(t)
	cfg := testConfig(t)
	cfg.Path = filepath.Join(dir, "storms.jsonl")
	tel := newTelemetry(t)
	e := newTestExporter(t, cfg, tel)
	startExporter(t, e)
	require.NoError(t, e.pushTraces(context.Background(), summaryTrace(t, stormRecord(traceIDHex(1), "before"))))

	require.NoError(t, os.Remove(cfg.Path))
	require.NoError(t, os.Symlink(victim, cfg.Path))
	err := e.pushTraces(context.Background(), summaryTrace(t, stormRecord(traceIDHex(2), "after")))
	require.ErrorIs(t, err, errSymlink)
	assert.ErrorContains(t, err, cfg.Path)
	assertUntouched(t, victim)
	assert.Equal(t, int64(1), counter(t, tel, metadata.MetricWriteErrors))

	require.NoError(t, os.Remove(cfg.Path))
	require.NoError(t, e.pushTraces(context.Background(), summaryTrace(t, stormRecord(traceIDHex(2), "after"))))
	assert.Equal(t, []string{"after"}, callKeys(readLines(t, cfg.Path)))
}

// The rotator itself refuses a link at path when it opens the file again or rotates it,
// and never writes through a link at a backup name.
func TestRotatorNeverFollowsASymlink(t *testing.T) {
	t.Run("reopen", func(t *testing.T) {
		dir, victim := sharedDir(t)
		path := filepath.Join(dir, "storms.jsonl")
		require.NoError(t, os.Symlink(victim, path))
		r := newRotator(path, RotationConfig{MaxMegabytes: 1}, zap.NewNop())
		_, err := r.Write([]byte("{}\n"))
		require.ErrorIs(t, err, errSymlink)
		require.NoError(t, r.stop())
		assertUntouched(t, victim)
	})
	t.Run("rotate", func(t *testing.T) {
		dir, victim := sharedDir(t)
		path := filepath.Join(dir, "storms.jsonl")
		r := newRotator(path, RotationConfig{MaxMegabytes: 1}, zap.NewNop())
		_, err := r.Write(line(1000 * 1024))
		require.NoError(t, err)
		// Replaced behind the open handle: rotation must not rename the link or follow it.
		require.NoError(t, os.Remove(path))
		require.NoError(t, os.Symlink(victim, path))
		_, err = r.Write(line(100 * 1024))
		require.ErrorIs(t, err, errSymlink)
		require.NoError(t, r.stop())
		assertUntouched(t, victim)
		backups, err := summaryfile.Backups(path)
		require.NoError(t, err)
		assert.Empty(t, backups)
	})
	t.Run("backup name taken by a link", func(t *testing.T) {
		dir, victim := sharedDir(t)
		path := filepath.Join(dir, "storms.jsonl")
		at := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
		taken := filepath.Join(dir, "storms-2026-01-02T15-04-05.000.jsonl")
		require.NoError(t, os.Symlink(victim, taken))
		require.NoError(t, os.Symlink(victim, filepath.Join(dir, "storms-2026-01-02T15-04-05.001.jsonl.gz")))
		r := newRotator(path, RotationConfig{MaxMegabytes: 1, Compress: true}, zap.NewNop())
		r.now = func() time.Time { return at }
		first := line(1000 * 1024)
		_, err := r.Write(first)
		require.NoError(t, err)
		_, err = r.Write(line(100 * 1024))
		require.NoError(t, err)
		require.NoError(t, r.stop())
		assertUntouched(t, victim)
		backup := filepath.Join(dir, "storms-2026-01-02T15-04-05.002.jsonl.gz")
		assert.Equal(t, first, gunzip(t, backup), "the rotation took the first free name")
		assertMode(t, backup, 0o600)
	})
	t.Run("compressed backup name taken by a link", func(t *testing.T) {
		dir, victim := sharedDir(t)
		src := filepath.Join(dir, "storms-2026-01-02T15-04-05.000.jsonl")
		require.NoError(t, os.WriteFile(src, []byte("{}\n"), 0o600))
		require.NoError(t, os.Symlink(victim, src+summaryfile.GzipSuffix))
		require.NoError(t, compressBackup(src))
		assertUntouched(t, victim)
		assert.Equal(t, []byte("{}\n"), gunzip(t, src+summaryfile.GzipSuffix))
		assert.NoFileExists(t, src)
	})
	t.Run("backup that is a link is not compressed", func(t *testing.T) {
		dir, victim := sharedDir(t)
		src := filepath.Join(dir, "storms-2026-01-02T15-04-05.000.jsonl")
		require.NoError(t, os.Symlink(victim, src))
		require.ErrorIs(t, compressBackup(src), errSymlink)
		assertUntouched(t, victim)
		assert.NoFileExists(t, src+summaryfile.GzipSuffix)
	})
}

func gunzip(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	gz, err := gzip.NewReader(bytes.NewReader(raw))
	require.NoError(t, err)
	content, err := io.ReadAll(gz)
	require.NoError(t, err)
	return content
}
