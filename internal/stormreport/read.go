// Package stormreport reads storm summary files (current, rotated and compressed) and
// aggregates them into the report stormreport prints as text, JSON or an HTML page.
package stormreport // import "github.com/retrystorm/retrystorm/internal/stormreport"

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/stormreport/summaryfile"
)

// Input is what was read from the summary files.
type Input struct {
	Files   []string
	Records []stormrecord.Record
	// Findings are the finding records: trace-level findings, which belong to no call.
	Findings []stormrecord.FindingRecord
	// SkippedLines counts lines that are neither storm nor finding records (broken JSON,
	// another schema, no id).
	SkippedLines int
	// Duplicates counts lines whose id was read from another line too: every line of an id
	// but the one kept, the most complete (stormrecord.Completeness).
	Duplicates int
}

// seenID is a record id read so far: where its kept record sits in its list of Input
// (Records or Findings) and how complete that record is.
type seenID struct {
	at       int
	complete stormrecord.Completeness
}

// ResolveFiles expands the arguments (paths or globs) into the files to read. A summary
// file brings its rotated backups along, oldest first, so pointing the tool at the file
// the exporter writes reads its whole history. When a backup exists both plain and
// compressed, compression is still running and the plain one is read.
func ResolveFiles(args []string) ([]string, error) {
	var files []string
	for _, arg := range args {
		matches := []string{arg}
		if strings.ContainsAny(arg, "*?[") {
			var err error
			matches, err = filepath.Glob(arg)
			if err != nil {
				return nil, fmt.Errorf("expand %q: %w", arg, err)
			}
			if len(matches) == 0 {
				return nil, fmt.Errorf("no summary files match %q", arg)
			}
		}
		for _, path := range matches {
			info, err := os.Stat(path)
			if err != nil {
				return nil, fmt.Errorf("find summary file: %w", err)
			}
			if info.IsDir() {
				return nil, fmt.Errorf("summary file %s is a directory", path)
			}
			if !strings.HasSuffix(path, summaryfile.GzipSuffix) {
				backups, err := summaryfile.Backups(path)
				if err != nil {
					return nil, err
				}
				files = append(files, backups...)
			}
			files = append(files, path)
		}
	}
	return distinctFiles(files), nil
}

func distinctFiles(files []string) []string {
	present := make(map[string]bool, len(files))
	for _, f := range files {
		present[filepath.Clean(f)] = true
	}
	seen := make(map[string]bool, len(files))
	out := make([]string, 0, len(files))
	for _, f := range files {
		f = filepath.Clean(f)
		plain, compressed := strings.CutSuffix(f, summaryfile.GzipSuffix)
		if seen[f] || (compressed && present[plain]) {
			continue
		}
		seen[f] = true
		out = append(out, f)
	}
	return out
}

// Read reads every record of the files in order, keeping for each id its most complete
// record (stormrecord.Completeness: more attempts of the call, then a later revision, then
// more findings; the first line among equals), where the id was first read.
func Read(files []string) (*Input, error) {
	input := &Input{Files: files}
	seen := make(map[string]seenID)
	for _, path := range files {
		if err := readFile(path, input, seen); err != nil {
			return nil, err
		}
	}
	return input, nil
}

func readFile(path string, input *Input, seen map[string]seenID) error {
	file, err := summaryfile.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	reader := bufio.NewReaderSize(file, 64*1024)
	for {
		line, err := reader.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			addLine(line, input, seen)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read summary file %s: %w", path, err)
		}
	}
}

func addLine(line []byte, input *Input, seen map[string]seenID) {
	var head struct {
		Schema string `json:"schema"`
	}
	if json.Unmarshal(line, &head) != nil {
		input.SkippedLines++
		return
	}
	switch head.Schema {
	case stormrecord.Schema:
		var record stormrecord.Record
		if json.Unmarshal(line, &record) != nil {
			input.SkippedLines++
		} else if at, keep := place(head.Schema, record.ID, record.Completeness(), len(input.Records), input, seen); keep && at == len(input.Records) {
			input.Records = append(input.Records, record)
		} else if keep {
			input.Records[at] = record
		}
	case stormrecord.FindingSchema:
		var record stormrecord.FindingRecord
		if json.Unmarshal(line, &record) != nil {
			input.SkippedLines++
		} else if at, keep := place(head.Schema, record.ID, record.Completeness(), len(input.Findings), input, seen); keep && at == len(input.Findings) {
			input.Findings = append(input.Findings, record)
		} else if keep {
			input.Findings[at] = record
		}
	default:
		input.SkippedLines++
	}
}

// place reports whether a decoded record is to be kept and where: at next (the end of its
// list) for an id not read before, or in the place of the record of its id read before,
// which it beats. A record without an id is a skipped line; of two lines of an id, the
// one not kept is a duplicate.
func place(schema, id string, complete stormrecord.Completeness, next int, input *Input, seen map[string]seenID) (int, bool) {
	if id == "" {
		input.SkippedLines++
		return 0, false
	}
	// Each schema has its list: an id is looked up among the records of its own schema.
	key := schema + "\x00" + id
	prev, ok := seen[key]
	if !ok {
		seen[key] = seenID{at: next, complete: complete}
		return next, true
	}
	input.Duplicates++
	if !complete.Beats(prev.complete) {
		return 0, false
	}
	seen[key] = seenID{at: prev.at, complete: complete}
	return prev.at, true
}
