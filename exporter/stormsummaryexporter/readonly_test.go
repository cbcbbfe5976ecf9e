package stormsummaryexporter

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"
)

// unprivileged runs fn on a fresh OS thread whose effective capabilities are cleared, so
// file permissions bind even when the tests run as root; the thread dies with it.
func unprivileged(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the runtime discards the thread on exit
		if os.Geteuid() == 0 {
			header := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
			var data [2]unix.CapUserData
			if err := unix.Capget(&header, &data[0]); err != nil {
				done <- err
				return
			}
			data[0].Effective, data[1].Effective = 0, 0
			if err := unix.Capset(&header, &data[0]); err != nil {
				done <- err
				return
			}
		}
		defer close(done)
		fn()
	}()
	require.NoError(t, <-done, "drop capabilities")
}

func TestReadOnlyDirectoryFailsTheWriteWithoutPartialLine(t *testing.T) {
	cfg := testConfig(t)
	tel := newTelemetry(t)
	e := newTestExporter(t, cfg, tel)
	startExporter(t, e)
	require.NoError(t, e.pushTraces(context.Background(), summaryTrace(t, stormRecord(traceIDHex(1), "earlier"))))
	require.NoError(t, e.file.close()) // as after a restart: the next write reopens the file
	before, err := os.ReadFile(cfg.Path)
	require.NoError(t, err)

	dir := filepath.Dir(cfg.Path)
	require.NoError(t, os.Chmod(cfg.Path, 0o400))
	require.NoError(t, os.Chmod(dir, 0o500))
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })

	batch := summaryTrace(t, stormRecord(traceIDHex(2), "a"), stormRecord(traceIDHex(3), "b"))
	var pushErr error
	unprivileged(t, func() { pushErr = e.pushTraces(context.Background(), batch) })
	require.ErrorIs(t, pushErr, fs.ErrPermission)
	assert.ErrorContains(t, pushErr, "append")
	after, err := os.ReadFile(cfg.Path)
	require.NoError(t, err)
	assert.Equal(t, before, after)
	assert.Equal(t, int64(1), counter(t, tel, metadata.MetricWriteErrors))

	require.NoError(t, os.Chmod(dir, 0o700))
	require.NoError(t, os.Chmod(cfg.Path, 0o600))
	require.NoError(t, e.pushTraces(context.Background(), batch))
	assert.Equal(t, []string{"earlier", "a", "b"}, callKeys(readLines(t, cfg.Path)))
}

func TestStartFailsInAReadOnlyDirectory(t *testing.T) {
	cfg := testConfig(t)
	dir := filepath.Dir(cfg.Path)
	require.NoError(t, os.MkdirAll(dir, 0o500))
	require.NoError(t, os.Chmod(dir, 0o500))
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })

	e := newTestExporter(t, cfg, newTelemetry(t))
	var startErr error
	unprivileged(t, func() { startErr = e.start(context.Background(), nil) })
	require.ErrorIs(t, startErr, os.ErrPermission)
	assert.ErrorContains(t, startErr, "open summary file")
	require.NoError(t, e.shutdown(context.Background()))
}
