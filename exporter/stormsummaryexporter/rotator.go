package stormsummaryexporter // import "github.com/retrystorm/retrystorm/exporter/stormsummaryexporter"

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/internal/stormreport/summaryfile"
)

// rotator appends to the summary file and rotates it by size, naming backups as
// lumberjack does (storms-2006-01-02T15-04-05.000.jsonl, UTC) so stormreport reads them.
// It replaces lumberjack because lumberjack opens, truncates and chowns every file by name
// and follows a symbolic link at any of them; the rotator opens each file with O_NOFOLLOW
// and creates new ones exclusively. Not safe for concurrent use, except that the
// background mill (backup cleanup and compression) runs beside writes.
type rotator struct {
	path       string
	maxBytes   int64
	maxBackups int
	compress   bool
	logger     *zap.Logger
	now        func() time.Time

	file *os.File
	size int64

	// milling counts running mills; millMu keeps two from working on the same backups.
	milling sync.WaitGroup
	millMu  sync.Mutex
}

func newRotator(path string, rotation RotationConfig, logger *zap.Logger) *rotator {
	return &rotator{
		path:       path,
		maxBytes:   int64(rotation.MaxMegabytes) * megabyte,
		maxBackups: rotation.MaxBackups,
		compress:   rotation.Compress,
		logger:     logger,
		now:        time.Now,
	}
}

// Write appends p, first rotating when p would take the file past maxBytes.
func (r *rotator) Write(p []byte) (int, error) {
	if int64(len(p)) > r.maxBytes {
		return 0, fmt.Errorf("write of %d bytes exceeds the summary file size %d", len(p), r.maxBytes)
	}
	if r.file == nil {
		if err := r.open(); err != nil {
			return 0, err
		}
	}
	if r.size > 0 && r.size+int64(len(p)) > r.maxBytes {
		if err := r.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := r.file.Write(p)
	r.size += int64(n)
	return n, err
}

// open opens (or creates) the file at path for appending.
func (r *rotator) open() error {
	file, err := openRegular(r.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, fileMode)
	if err != nil {
		return fmt.Errorf("open summary file: %w", err)
	}
	info, err := file.Stat()
	if err != nil {
		_ = file.Close()
		return fmt.Errorf("stat summary file: %w", err)
	}
	r.file, r.size = file, info.Size()
	return nil
}

// rotate moves the current file aside under a backup name and creates a new one. The new
// file is created with O_EXCL: whatever appeared at path since the rename (a planted link)
// makes the write fail rather than be followed.
func (r *rotator) rotate() error {
	if err := r.Close(); err != nil {
		return err
	}
	info, err := os.Lstat(r.path)
	if err != nil {
		return fmt.Errorf("stat summary file to rotate it: %w", err)
	}
	if err := checkRegular(r.path, info); err != nil {
		return fmt.Errorf("rotate summary file: %w", err)
	}
	if err := os.Rename(r.path, r.backupName()); err != nil {
		return fmt.Errorf("rotate summary file: %w", err)
	}
	file, err := os.OpenFile(r.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND|oNoFollow, fileMode)
	if err != nil {
		return fmt.Errorf("create summary file after rotation: %w", err)
	}
	r.file, r.size = file, 0
	if r.maxBackups > 0 || r.compress {
		r.milling.Add(1)
		go r.mill()
	}
	return nil
}

// backupName is a free backup name for this moment: a second rotation within the same
// millisecond takes the next millisecond instead of replacing the first backup.
func (r *rotator) backupName() string {
	dir, base := filepath.Split(r.path)
	ext := filepath.Ext(base)
	prefix := strings.TrimSuffix(base, ext) + "-"
	at := r.now().UTC()
	for {
		name := filepath.Join(dir, prefix+at.Format(summaryfile.BackupTimeFormat)+ext)
		_, err := os.Lstat(name)
		_, gzErr := os.Lstat(name + summaryfile.GzipSuffix)
		if errors.Is(err, fs.ErrNotExist) && errors.Is(gzErr, fs.ErrNotExist) {
			return name
		}
		at = at.Add(time.Millisecond)
	}
}

// mill removes the oldest backups beyond maxBackups and compresses the rest. Failures are
// logged: the records are in the backups either way.
func (r *rotator) mill() {
	defer r.milling.Done()
	r.millMu.Lock()
	defer r.millMu.Unlock()
	backups, err := summaryfile.Backups(r.path)
	if err != nil {
		r.logger.Warn("list summary backups", zap.Error(err))
		return
	}
	// A backup being compressed is listed twice (name and name.gz): count it once.
	var rotations []string
	seen := map[string]bool{}
	for i := len(backups) - 1; i >= 0; i-- {
		base := strings.TrimSuffix(backups[i], summaryfile.GzipSuffix)
		if seen[base] {
			continue
		}
		seen[base] = true
		rotations = append(rotations, base) // newest first
	}
	for i, base := range rotations {
		if r.maxBackups > 0 && i >= r.maxBackups {
			for _, name := range []string{base, base + summaryfile.GzipSuffix} {
				if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
					r.logger.Warn("remove old summary backup", zap.String("summary.backup", name), zap.Error(err))
				}
			}
			continue
		}
		if r.compress {
			if err := compressBackup(base); err != nil {
				r.logger.Warn("compress summary backup", zap.String("summary.backup", base), zap.Error(err))
			}
		}
	}
}

// compressBackup gzips src into src.gz (0600) and removes src. A missing src is already
// compressed; a src.gz left by an interrupted compression is replaced (removing a link
// there removes the link, not its target).
func compressBackup(src string) (err error) {
	in, err := openRegular(src, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	dst := src + summaryfile.GzipSuffix
	if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove a stale compressed backup: %w", err)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY|oNoFollow, fileMode)
	if err != nil {
		return fmt.Errorf("create compressed backup: %w", err)
	}
	defer func() {
		if err != nil {
			_ = out.Close()
			_ = os.Remove(dst)
		}
	}()
	gz := gzip.NewWriter(out)
	if _, err := io.Copy(gz, in); err != nil {
		return fmt.Errorf("compress backup: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("compress backup: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("close compressed backup: %w", err)
	}
	return os.Remove(src)
}

// Close closes the current file; the next Write opens the file at path again.
func (r *rotator) Close() error {
	if r.file == nil {
		return nil
	}
	err := r.file.Close()
	r.file = nil
	return err
}

// stop closes the file and waits for a running mill, so no goroutine outlives Shutdown.
func (r *rotator) stop() error {
	err := r.Close()
	r.milling.Wait()
	return err
}
