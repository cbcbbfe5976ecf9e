package stormsummaryexporter // import "github.com/retrystorm/retrystorm/exporter/stormsummaryexporter"

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"go.uber.org/zap"
)

const (
	fileMode = 0o600
	dirMode  = 0o700
	// megabyte is the unit of rotation.max_megabytes.
	megabyte = 1024 * 1024
)

// errRecordTooLarge marks a record that can never fit in one summary file: retrying it is
// pointless.
var errRecordTooLarge = errors.New("record larger than rotation.max_megabytes")

// summaryFile appends whole batches of JSONL records to the rotated summary file. Each
// batch is one Write, and the rotator rotates before a Write that would overflow the file,
// so a batch never spans two files; a failed Write is rolled back by truncating the file
// to where it ended before, so no partial line survives. No file at path is followed if
// it is a symbolic link. Not safe for concurrent use.
type summaryFile struct {
	path     string
	maxBytes int64
	rotator  *rotator
	writer   io.Writer
	// tornTail is set when a rollback could not truncate: the file may end in a partial
	// line, and nothing may be appended until it is repaired.
	tornTail bool
	// written identifies the file the last successful write went to, to notice when the
	// file at path was removed or replaced behind the rotator's open handle.
	written os.FileInfo
	logger  *zap.Logger
}

// openSummaryFile prepares the directory (0700 when created) and the file (0600), repairs
// a line torn by a crash, and sets up rotation. wrap, when set, wraps the rotating writer
// (a test seam for failing writes).
func openSummaryFile(path string, rotation RotationConfig, logger *zap.Logger, wrap func(io.Writer) io.Writer) (*summaryFile, error) {
	if err := ensureDir(filepath.Dir(path), logger); err != nil {
		return nil, err
	}
	if err := ensureFile(path); err != nil {
		return nil, err
	}
	f := &summaryFile{
		path:     path,
		maxBytes: int64(rotation.MaxMegabytes) * megabyte,
		rotator:  newRotator(path, rotation, logger),
		logger:   logger,
	}
	f.writer = f.rotator
	if wrap != nil {
		f.writer = wrap(f.rotator)
	}
	if err := f.repairTail(); err != nil {
		return nil, err
	}
	return f, nil
}

func ensureDir(dir string, logger *zap.Logger) error {
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return fmt.Errorf("create summary directory: %w", err)
		}
		// MkdirAll's mode is filtered by the umask; set it exactly.
		if err := os.Chmod(dir, dirMode); err != nil {
			return fmt.Errorf("set summary directory mode: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat summary directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("summary directory %s is not a directory", dir)
	}
	// An existing directory may be shared (the working directory): leave its mode, say so.
	if info.Mode().Perm()&0o077 != 0 {
		logger.Warn("summary directory is accessible to other users; records reveal tool names and argument hashes",
			zap.String("summary.dir", dir), zap.String("summary.dir_mode", info.Mode().Perm().String()))
	}
	return nil
}

// ensureFile creates the file or tightens an existing one's mode, through a descriptor
// opened without following a symbolic link, so nothing else's mode is changed.
func ensureFile(path string) error {
	file, err := openRegular(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, fileMode)
	if err != nil {
		return fmt.Errorf("open summary file: %w", err)
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return fmt.Errorf("stat summary file: %w", err)
	}
	if info.Mode().Perm() != fileMode {
		if err := file.Chmod(fileMode); err != nil {
			return fmt.Errorf("set summary file mode: %w", err)
		}
	}
	return nil
}

// appendLines appends encoded lines (each ending in a newline) in as few whole Writes as
// the file size allows, usually one. It returns how many lines were committed before an
// error, so their ids can be remembered and a retry writes only the rest.
func (f *summaryFile) appendLines(lines [][]byte) (int, error) {
	for _, line := range lines {
		if int64(len(line)) > f.maxBytes {
			return 0, fmt.Errorf("append %d-byte record to summary file: %w", len(line), errRecordTooLarge)
		}
	}
	committed := 0
	for len(lines) > committed {
		var chunk []byte
		count := 0
		for _, line := range lines[committed:] {
			if count > 0 && int64(len(chunk)+len(line)) > f.maxBytes {
				break
			}
			chunk = append(chunk, line...)
			count++
		}
		if err := f.appendWhole(chunk); err != nil {
			return committed, err
		}
		committed += count
	}
	return committed, nil
}

// appendWhole writes chunk in one Write and undoes any part of it on failure.
func (f *summaryFile) appendWhole(chunk []byte) error {
	if f.tornTail {
		if err := f.repairTail(); err != nil {
			return fmt.Errorf("repair summary file before appending: %w", err)
		}
	}
	before, err := f.currentFile()
	if err != nil {
		return err
	}
	n, err := f.writer.Write(chunk)
	if err == nil && n == len(chunk) {
		f.written, _ = os.Lstat(f.path)
		return nil
	}
	if err == nil {
		err = io.ErrShortWrite
	}
	return errors.Join(
		fmt.Errorf("append %d bytes to summary file: %w", len(chunk), err),
		f.rollback(before),
	)
}

// currentFile stats the file at path before a write. When it was removed (cleanup by
// hand, a log rotation tool) it is recreated with the exporter's modes; when it was replaced,
// the rotating writer is closed so the write goes to the file at path, not to the old handle;
// when it was replaced by a symbolic link, the write fails.
func (f *summaryFile) currentFile() (os.FileInfo, error) {
	info, err := os.Lstat(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		f.logger.Warn("summary file disappeared; creating it again", zap.String("summary.path", f.path))
		if err := f.rotator.Close(); err != nil {
			return nil, fmt.Errorf("close the removed summary file: %w", err)
		}
		if err := ensureDir(filepath.Dir(f.path), f.logger); err != nil {
			return nil, err
		}
		if err := ensureFile(f.path); err != nil {
			return nil, err
		}
		info, err = os.Lstat(f.path)
	}
	if err != nil {
		return nil, fmt.Errorf("stat summary file before appending: %w", err)
	}
	if err := checkRegular(f.path, info); err != nil {
		_ = f.rotator.Close()
		return nil, fmt.Errorf("append to summary file: %w", err)
	}
	if f.written != nil && !os.SameFile(f.written, info) {
		if err := f.rotator.Close(); err != nil {
			return nil, fmt.Errorf("close the replaced summary file: %w", err)
		}
	}
	return info, nil
}

// rollback truncates the summary file to where it ended before a failed write. When the
// failed write rotated first, the file at path is new and held only the partial write.
func (f *summaryFile) rollback(before os.FileInfo) error {
	// Closing makes the next write reopen the file in append mode at its real size.
	closeErr := f.rotator.Close()
	file, err := openRegular(f.path, os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return closeErr
	}
	if err != nil {
		f.tornTail = true
		return errors.Join(closeErr, fmt.Errorf("open summary file to roll back a failed write: %w", err))
	}
	defer file.Close()
	after, err := file.Stat()
	if err != nil {
		f.tornTail = true
		return errors.Join(closeErr, fmt.Errorf("stat summary file to roll back a failed write: %w", err))
	}
	var keep int64
	if before != nil && os.SameFile(before, after) {
		keep = before.Size()
	}
	if after.Size() <= keep {
		return closeErr
	}
	if err := file.Truncate(keep); err != nil {
		f.tornTail = true
		return errors.Join(closeErr, fmt.Errorf("truncate summary file to roll back a failed write: %w", err))
	}
	return closeErr
}

// repairTail drops a trailing partial line (left by a crash mid-write or a rollback that
// could not truncate) so the next record starts on its own line.
func (f *summaryFile) repairTail() error {
	file, err := openRegular(f.path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		f.tornTail = false
		return nil
	}
	if err != nil {
		return fmt.Errorf("open summary file to check its end: %w", err)
	}
	defer file.Close()
	keep, size, err := lastLineEnd(file)
	if err != nil {
		return err
	}
	if keep < size {
		if err := truncateFile(f.path, file, keep); err != nil {
			return fmt.Errorf("truncate partial line at the end of the summary file: %w", err)
		}
		f.logger.Warn("dropped a partial line at the end of the summary file",
			zap.String("summary.path", f.path), zap.Int64("summary.dropped_bytes", size-keep))
		if err := f.rotator.Close(); err != nil {
			return fmt.Errorf("reopen summary file after repair: %w", err)
		}
	}
	f.tornTail = false
	return nil
}

// truncateFile truncates the file read, opened again for writing without following a link;
// a file put at path since it was read is left alone.
func truncateFile(path string, read *os.File, size int64) error {
	file, err := openRegular(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer file.Close()
	readInfo, err := read.Stat()
	if err != nil {
		return err
	}
	info, err := file.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(readInfo, info) {
		return fmt.Errorf("%s was replaced while it was being repaired", path)
	}
	return file.Truncate(size)
}

// lastLineEnd returns the offset just after the file's last newline (0 when it has none)
// and the file size.
func lastLineEnd(file *os.File) (int64, int64, error) {
	info, err := file.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("stat summary file to check its end: %w", err)
	}
	const window = 64 * 1024
	buf := make([]byte, window)
	for end := info.Size(); end > 0; {
		start := max(end-window, 0)
		chunk := buf[:end-start]
		if _, err := file.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, fmt.Errorf("read the end of the summary file: %w", err)
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			return start + int64(i) + 1, info.Size(), nil
		}
		end = start
	}
	return 0, info.Size(), nil
}

// close closes the current file and waits for a backup compression in progress; the
// rotator reopens the file if anything writes again.
func (f *summaryFile) close() error {
	if err := f.rotator.stop(); err != nil {
		return fmt.Errorf("close summary file: %w", err)
	}
	return nil
}
