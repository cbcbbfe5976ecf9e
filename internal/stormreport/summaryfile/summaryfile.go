// Package summaryfile finds and opens storm summary files: the current file written by the
// storm_summary exporter and the backups its size-based rotation leaves beside it.
package summaryfile // import "github.com/retrystorm/retrystorm/internal/stormreport/summaryfile"

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// BackupTimeFormat is the timestamp lumberjack puts between a file's name and its
// extension when it rotates the file (storms.jsonl → storms-2026-01-02T15-04-05.000.jsonl).
const BackupTimeFormat = "2006-01-02T15-04-05.000"

// GzipSuffix marks a compressed backup.
const GzipSuffix = ".gz"

// Backups lists the rotated backups of the summary file at path, compressed or not, oldest
// first. A missing directory yields no backups.
func Backups(path string) ([]string, error) {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list summary backups in %s: %w", dir, err)
	}
	base := filepath.Base(path)
	ext := filepath.Ext(base)
	prefix := strings.TrimSuffix(base, ext) + "-"
	type backup struct {
		name    string
		rotated time.Time
	}
	var backups []backup
	for _, entry := range entries {
		if entry.IsDir() {
			continue
		}
		rotated, ok := backupTime(entry.Name(), prefix, ext)
		if ok {
			backups = append(backups, backup{name: entry.Name(), rotated: rotated})
		}
	}
	sort.SliceStable(backups, func(i, j int) bool {
		if backups[i].rotated.Equal(backups[j].rotated) {
			return backups[i].name < backups[j].name
		}
		return backups[i].rotated.Before(backups[j].rotated)
	})
	paths := make([]string, len(backups))
	for i, b := range backups {
		paths[i] = filepath.Join(dir, b.name)
	}
	return paths, nil
}

// backupTime parses the rotation time out of a backup name, the way lumberjack does, so a
// file that merely shares the prefix is not mistaken for a backup.
func backupTime(name, prefix, ext string) (time.Time, bool) {
	name = strings.TrimSuffix(name, GzipSuffix)
	if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, ext) {
		return time.Time{}, false
	}
	stamp := name[len(prefix) : len(name)-len(ext)]
	rotated, err := time.Parse(BackupTimeFormat, stamp)
	return rotated, err == nil
}

// Open opens a summary file for reading, decompressing it when its name ends in .gz.
func Open(path string) (io.ReadCloser, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open summary file: %w", err)
	}
	if !strings.HasSuffix(path, GzipSuffix) {
		return file, nil
	}
	gz, err := gzip.NewReader(file)
	if err != nil {
		_ = file.Close()
		return nil, fmt.Errorf("open compressed summary file %s: %w", path, err)
	}
	return &gzipFile{Reader: gz, file: file}, nil
}

type gzipFile struct {
	*gzip.Reader
	file *os.File
}

func (g *gzipFile) Close() error {
	return errors.Join(g.Reader.Close(), g.file.Close())
}

// Tail returns the whole lines among the last budget bytes of the summary file at path
// (decompressed when it is a .gz backup). A line cut by the budget is dropped, and so is a
// trailing line without its newline: neither is a complete record.
func Tail(path string, budget int64) ([]byte, error) {
	if budget <= 0 {
		return nil, nil
	}
	var tail []byte
	var err error
	if strings.HasSuffix(path, GzipSuffix) {
		tail, err = tailStream(path, budget)
	} else {
		tail, err = tailFile(path, budget)
	}
	if err != nil {
		return nil, err
	}
	return wholeLines(tail), nil
}

// wholeLines trims a partial first line (unless the data starts at a line boundary, which
// the callers mark with a leading newline) and a partial last line.
func wholeLines(tail []byte) []byte {
	if first := bytes.IndexByte(tail, '\n'); first >= 0 {
		tail = tail[first+1:]
	} else {
		return nil
	}
	if last := bytes.LastIndexByte(tail, '\n'); last >= 0 {
		return tail[:last+1]
	}
	return nil
}

func tailFile(path string, budget int64) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open summary file for its tail: %w", err)
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat summary file: %w", err)
	}
	offset := max(info.Size()-budget, 0)
	// Read one byte before the window so a line starting exactly at the window is kept.
	start := max(offset-1, 0)
	data := make([]byte, info.Size()-start)
	if _, err := file.ReadAt(data, start); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read summary file tail: %w", err)
	}
	if start == 0 && offset == 0 {
		data = append([]byte{'\n'}, data...)
	}
	return data, nil
}

func tailStream(path string, budget int64) ([]byte, error) {
	reader, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	ring := &tailBuffer{limit: budget + 1, data: []byte{'\n'}}
	if _, err := io.Copy(ring, reader); err != nil {
		return nil, fmt.Errorf("read compressed summary file %s: %w", path, err)
	}
	return ring.last(), nil
}

// tailBuffer keeps at least the last limit bytes written to it; it compacts only when it
// holds twice that, so streaming a large file costs linear time.
type tailBuffer struct {
	limit int64
	data  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.data = append(t.data, p...)
	if int64(len(t.data)) > 2*t.limit {
		t.data = append(t.data[:0], t.last()...)
	}
	return len(p), nil
}

func (t *tailBuffer) last() []byte {
	if excess := int64(len(t.data)) - t.limit; excess > 0 {
		return t.data[excess:]
	}
	return t.data
}
