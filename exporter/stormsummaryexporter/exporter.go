package stormsummaryexporter // import "github.com/retrystorm/retrystorm/exporter/stormsummaryexporter"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/stormreport/summaryfile"
)

// summaryExporter writes the summary records the retry_storm processor leaves on last
// attempts; it does no analysis of its own.
type summaryExporter struct {
	cfg       *Config
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder
	// wrapWriter is a test seam wrapping the rotating file writer.
	wrapWriter func(io.Writer) io.Writer

	// mu serialises appends: the sending queue runs several consumers.
	mu   sync.Mutex
	file *summaryFile
	// written remembers, per record id written, the completeness of the line written: a
	// more complete record of the same id is written again, anything else is a duplicate.
	written *lru.Cache[string, stormrecord.Completeness]
	// warnUnsealed logs the first batch with unsealed records, once: the metric counts them.
	warnUnsealed sync.Once
}

type exporterOption func(*summaryExporter)

// withWriterWrapper wraps the rotating file writer, so tests can make writes fail.
func withWriterWrapper(wrap func(io.Writer) io.Writer) exporterOption {
	return func(e *summaryExporter) { e.wrapWriter = wrap }
}

func newSummaryExporter(cfg *Config, set exporter.Settings, opts ...exporterOption) (*summaryExporter, error) {
	telemetry, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("create storm_summary telemetry: %w", err)
	}
	written, err := lru.New[string, stormrecord.Completeness](cfg.Dedup.RememberedIDs)
	if err != nil {
		return nil, fmt.Errorf("create record id memory: %w", err)
	}
	e := &summaryExporter{cfg: cfg, logger: set.Logger, telemetry: telemetry, written: written}
	for _, opt := range opts {
		opt(e)
	}
	return e, nil
}

func (e *summaryExporter) start(_ context.Context, _ component.Host) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	file, err := openSummaryFile(e.cfg.Path, e.cfg.Rotation, e.logger, e.wrapWriter)
	if err != nil {
		return err
	}
	preloaded, err := preloadIDs(e.cfg.Path, e.cfg.Dedup.PreloadBytes)
	if err != nil {
		_ = file.close()
		return fmt.Errorf("preload record id memory: %w", err)
	}
	for _, line := range preloaded {
		e.remember(line.id, line.complete)
	}
	e.file = file
	e.logger.Info("storm summary file open", zap.String("summary.path", e.cfg.Path), zap.Int("summary.preloaded_ids", len(preloaded)))
	return nil
}

func (e *summaryExporter) shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.telemetry.Shutdown()
	if e.file == nil {
		return nil
	}
	err := e.file.close()
	e.file = nil
	return err
}

// pushTraces appends the batch's selected records whole, or returns an error so the
// exporterhelper retry and queue bring the batch back; ids already written are skipped.
func (e *summaryExporter) pushTraces(ctx context.Context, td ptrace.Traces) error {
	records := e.selectRecords(ctx, td)
	if len(records) == 0 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.file == nil {
		return errors.New("append storm summaries: summary file is not open")
	}
	fresh, duplicates := e.unwritten(records)
	superseding := make([]bool, len(fresh))
	for i, record := range fresh {
		_, superseding[i] = e.written.Peek(record.id)
	}
	lines, err := encodeRecords(fresh)
	if err != nil {
		return consumererror.NewPermanent(err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("append storm summaries: %w", err)
	}
	committed, err := e.file.appendLines(lines)
	var superseded []summary
	for i, record := range fresh[:committed] {
		e.written.Add(record.id, record.complete)
		if superseding[i] {
			superseded = append(superseded, record)
		}
	}
	e.countBySchema(ctx, e.telemetry.ExporterStormSummaryRecordsWritten, fresh[:committed])
	e.countBySchema(ctx, e.telemetry.ExporterStormSummaryRecordsSuperseding, superseded)
	if err != nil {
		e.telemetry.ExporterStormSummaryWriteErrors.Add(ctx, 1)
		if errors.Is(err, errRecordTooLarge) {
			return consumererror.NewPermanent(err)
		}
		return err
	}
	e.countBySchema(ctx, e.telemetry.ExporterStormSummaryRecordsDeduplicated, duplicates)
	return nil
}

// countBySchema adds the records to counter, one data point per schema, so storm and
// finding records can be told apart.
func (e *summaryExporter) countBySchema(ctx context.Context, counter metric.Int64Counter, records []summary) {
	counts := map[string]int64{}
	for _, record := range records {
		counts[record.schema]++
	}
	for schema, n := range counts {
		counter.Add(ctx, n, metric.WithAttributeSet(attribute.NewSet(attribute.String(metadata.AttrSchema, schema))))
	}
}

// unwritten splits records into those to write — the most complete of the batch for each
// id, unless the line written for it before is at least as complete — and the rest.
func (e *summaryExporter) unwritten(records []summary) (fresh, duplicates []summary) {
	fresh = make([]summary, 0, len(records))
	inBatch := make(map[string]int, len(records))
	for _, record := range records {
		if i, ok := inBatch[record.id]; ok {
			if record.complete.Beats(fresh[i].complete) {
				duplicates = append(duplicates, fresh[i])
				fresh[i] = record
			} else {
				duplicates = append(duplicates, record)
			}
			continue
		}
		if old, ok := e.written.Peek(record.id); ok && !record.complete.Beats(old) {
			duplicates = append(duplicates, record)
			continue
		}
		inBatch[record.id] = len(fresh)
		fresh = append(fresh, record)
	}
	return fresh, duplicates
}

// remember notes a line read at start, keeping the most complete of an id's lines.
func (e *summaryExporter) remember(id string, complete stormrecord.Completeness) {
	if old, ok := e.written.Peek(id); ok && !complete.Beats(old) {
		e.written.Add(id, old) // still the most recently written of the memory
		return
	}
	e.written.Add(id, complete)
}

func encodeRecords(records []summary) ([][]byte, error) {
	lines := make([][]byte, 0, len(records))
	for _, record := range records {
		line, err := json.Marshal(record.record)
		if err != nil {
			return nil, fmt.Errorf("encode storm summary record %s: %w", record.id, err)
		}
		lines = append(lines, append(line, '\n'))
	}
	return lines, nil
}

// preloadedLine is a record line read at start: its id and how complete it is.
type preloadedLine struct {
	id       string
	complete stormrecord.Completeness
}

// preloadIDs reads the ids of the records at the end of the summary file, with each line's
// completeness, topped up from the newest backup when the current file is short (a restart
// right after a rotation), oldest first so the most recent ids are the last forgotten.
func preloadIDs(path string, budget int64) ([]preloadedLine, error) {
	current, err := summaryfile.Tail(path, budget)
	if err != nil {
		return nil, err
	}
	var previous []byte
	if remaining := budget - int64(len(current)); remaining > 0 {
		backups, err := summaryfile.Backups(path)
		if err != nil {
			return nil, err
		}
		if len(backups) > 0 {
			newest := backups[len(backups)-1]
			// A link or FIFO under a backup's name is not the exporter's: reading through it
			// could block the start or preload ids from someone else's file.
			if info, err := os.Lstat(newest); err == nil && info.Mode().IsRegular() {
				previous, err = summaryfile.Tail(newest, remaining)
				if err != nil {
					return nil, err
				}
			}
		}
	}
	return append(recordIDs(previous), recordIDs(current)...), nil
}

// recordIDs reads each line's id and completeness. A line whose completeness fields do not
// decode (a hand edit) still counts by its id, as least complete.
func recordIDs(lines []byte) []preloadedLine {
	var out []preloadedLine
	for line := range bytes.Lines(lines) {
		var head struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(line, &head) != nil || head.ID == "" {
			continue
		}
		var c stormrecord.LineCompleteness
		complete := stormrecord.Completeness{}
		if json.Unmarshal(line, &c) == nil {
			complete = c.Completeness()
		}
		out = append(out, preloadedLine{id: head.ID, complete: complete})
	}
	return out
}
