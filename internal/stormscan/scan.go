// Package stormscan is `stormreport scan`: the retry_storm analysis over trace files and
// per-attempt JSONL, offline. It runs the processor the collector runs (in its offline
// mode: traces are decided when the input ends or the memory bound is reached, never
// because time passed) in front of the storm_summary exporter, so the records of a trace
// are the ones a collector with the same retry_storm settings writes; then it prints the
// report stormreport prints for those records, or, with --attempt-report, the report of the
// per-attempt scanner (internal/attemptlog).
package stormscan // import "github.com/retrystorm/retrystorm/internal/stormscan"

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/attemptlog"
	"github.com/retrystorm/retrystorm/internal/stormreport"
	"github.com/retrystorm/retrystorm/internal/stormreport/summaryfile"
)

const usage = `usage: stormreport scan [flags] [FILE...|-]

Runs the retry_storm analysis over trace files: OTLP/JSON (the collector file exporter's
output, one request per line, or one document), the file exporter's protobuf format, or
per-attempt per-attempt JSONL ("event":"tool_attempt" lines); .gz and .zst files are read
compressed; no file or - reads stdin. Writes the storm and finding records (-o) and prints
the stormreport report of them (text, --json, --html FILE), or with --attempt-report the
per-attempt scanner's JSON report of the per-attempt lines.

flags:
`

// defaultMaxBufferedBytes is the scan's memory bound: OTLP-encoded bytes of spans held
// while their traces are assembled (the processor's max_buffered_bytes).
const defaultMaxBufferedBytes = 16 << 20

// minBufferedBytes is retry_storm's lower bound of max_buffered_bytes, checked here so the
// error names the flag.
const minBufferedBytes = 64 << 10

// maxBadLinesShown bounds the bad lines named on stderr; the rest are counted.
const maxBadLinesShown = 100

type options struct {
	format      Format
	config      string
	processor   string
	keyFile     string
	keyEnv      string
	maxBuffered int64
	// maxBufferedSet: --max-buffered-bytes was given.
	maxBufferedSet bool
	// maxMessage bounds one line, document or protobuf message.
	maxMessage    int
	out           string
	include       string
	json          bool
	html          string
	top           int
	attemptReport bool
	files         []string
}

// Run is `stormreport scan ARGS`: it returns the exit status, 0 when the scan ran, 1 when
// no input could be read or the records could not be written, 2 for a usage or
// configuration error.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opts, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "stormreport scan: %v\n", err)
		return 2
	}
	ec, err := opts.engineConfig()
	if err != nil {
		fmt.Fprintf(stderr, "stormreport scan: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return run(ctx, opts, ec, stdin, stdout, stderr)
}

func parseArgs(args []string, stderr io.Writer) (options, error) {
	opts := options{format: FormatAuto, top: 20, maxBuffered: defaultMaxBufferedBytes, maxMessage: defaultMaxMessageBytes}
	fs := flag.NewFlagSet("stormreport scan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	format := fs.String("format", string(FormatAuto), "input format: auto, otlp-json, otlp-proto or attempt-log (seed: deprecated name of attempt-log)")
	fs.StringVar(&opts.config, "config", "", "collector configuration whose retry_storm section (and storm_summary include and trace_url) the scan uses; defaults otherwise")
	fs.StringVar(&opts.processor, "processor", "", "which retry_storm processor of --config, when it has several (retry_storm/NAME or NAME)")
	fs.StringVar(&opts.keyFile, "key-file", "", "file holding the HMAC key for argument and result hashes (hashing.key_file)")
	fs.StringVar(&opts.keyEnv, "key-env", "", "environment variable holding the HMAC key (hashing.key_env)")
	fs.Int64Var(&opts.maxBuffered, "max-buffered-bytes", defaultMaxBufferedBytes, "OTLP-encoded bytes of spans held while traces are assembled; past it the oldest traces are decided early")
	fs.IntVar(&opts.maxMessage, "max-message-bytes", defaultMaxMessageBytes, "largest line, OTLP/JSON document or protobuf message (decompressed) read; a larger one is skipped and counted")
	fs.StringVar(&opts.out, "o", "", "write the storm and finding records to this file (replaced, with its rotated parts)")
	fs.StringVar(&opts.include, "include", "", "records written, comma-separated: storm, failure, finding (default: storm_summary's include in --config, else storm,finding)")
	fs.BoolVar(&opts.json, "json", false, "print the report as JSON")
	fs.StringVar(&opts.html, "html", "", "also write the report as a self-contained HTML page to this file")
	fs.IntVar(&opts.top, "top", 20, "storms per ranking and on the page (0 = all)")
	fs.BoolVar(&opts.attemptReport, "attempt-report", false, "print the per-attempt scanner's JSON report of the per-attempt lines instead of the report")
	fs.BoolVar(&opts.attemptReport, "seed-report", false, "deprecated: the old name of --attempt-report")
	var err error
	if opts.files, err = stormreport.ParseInterleaved(fs, args); err != nil {
		return opts, err
	}
	fs.Visit(func(f *flag.Flag) { opts.maxBufferedSet = opts.maxBufferedSet || f.Name == "max-buffered-bytes" })
	if i := slices.Index(opts.files, "-"); i >= 0 && slices.Contains(opts.files[i+1:], "-") {
		return opts, errors.New("stdin (-) is given twice: it can be read once")
	}
	if opts.out != "" {
		if info, err := os.Lstat(opts.out); err == nil && !info.Mode().IsRegular() {
			return opts, fmt.Errorf("-o %s is not a regular file", opts.out)
		}
	}
	if opts.format, err = parseFormat(*format); err != nil {
		return opts, err
	}
	if opts.top < 0 {
		return opts, errors.New("--top must not be negative")
	}
	if opts.maxBuffered < minBufferedBytes {
		return opts, fmt.Errorf("--max-buffered-bytes must be at least %d (64 KiB)", minBufferedBytes)
	}
	if opts.maxMessage <= 0 {
		return opts, errors.New("--max-message-bytes must be greater than 0")
	}
	if opts.attemptReport && opts.json {
		return opts, errors.New("--attempt-report and --json both choose what is printed: give one")
	}
	if len(opts.files) == 0 {
		opts.files = []string{"-"}
	}
	return opts, nil
}

// engineConfig is the configuration the flags and --config make.
func (o options) engineConfig() (engineConfig, error) {
	ec := defaultEngineConfig()
	if o.config != "" {
		var err error
		if ec, err = loadEngineConfig(o.config, o.processor); err != nil {
			return ec, err
		}
	} else if o.processor != "" {
		return ec, errors.New("--processor names a section of --config, and no --config was given")
	}
	if o.keyFile != "" || o.keyEnv != "" {
		ec.processor.Hashing.KeyFile, ec.processor.Hashing.KeyEnv = o.keyFile, o.keyEnv
	}
	// The bound: the flag's; else the configuration's when it sets one; else the scan's
	// default, raised to hold two traces of the configuration's max_trace_bytes.
	switch {
	case o.maxBufferedSet:
		ec.processor.MaxBufferedBytes = o.maxBuffered
		if tb := ec.processor.MaxTraceBytes; tb > o.maxBuffered {
			return ec, fmt.Errorf("--max-buffered-bytes %d is below the configuration's max_trace_bytes %d", o.maxBuffered, tb)
		}
	case !ec.maxBufferedSet:
		ec.processor.MaxBufferedBytes = max(o.maxBuffered, 2*ec.processor.MaxTraceBytes)
	}
	if o.include != "" {
		ec.include = nil
		for part := range strings.SplitSeq(o.include, ",") {
			ec.include = append(ec.include, strings.TrimSpace(part))
		}
	}
	return ec, nil
}

// scan is one run: what it feeds the engine and what it counts on the way.
type scan struct {
	ctx    context.Context
	engine *engine
	format Format
	// maxMessage bounds one line, document or protobuf message.
	maxMessage     int
	attempts       *attemptSpans
	attemptScanner *attemptlog.Scanner // nil without --attempt-report
	stderr         io.Writer
	summary        stormreport.ScanSummary
	progress       *progress
	// stopped is why the scan stopped reading before the end of its inputs.
	stopped error
}

func run(ctx context.Context, opts options, ec engineConfig, stdin io.Reader, stdout, stderr io.Writer) int {
	s := &scan{ctx: ctx, format: opts.format, maxMessage: opts.maxMessage, attempts: newAttemptSpans(), stderr: stderr,
		summary: stormreport.ScanSummary{MaxBufferedBytes: ec.processor.MaxBufferedBytes, MaxMessageBytes: int64(opts.maxMessage)}}
	if opts.attemptReport {
		s.attemptScanner = attemptlog.NewScanner(ec.processor.StormThreshold)
	}
	// The attempt report alone needs no records: the analysis runs when they are written or
	// reported. They are written beside -o and moved into place at the end, so a scan that
	// reads nothing leaves an earlier scan's records as they were.
	var records string
	if !opts.attemptReport || opts.out != "" || opts.html != "" {
		parent, pattern := "", "stormscan-*" // the system's temporary directory
		if opts.out != "" {
			parent, pattern = filepath.Dir(opts.out), ".stormscan-*" // beside -o: one rename
		}
		dir, err := os.MkdirTemp(parent, pattern)
		if err != nil {
			fmt.Fprintf(stderr, "stormreport scan: %v\n", err)
			return 1
		}
		defer os.RemoveAll(dir)
		records = filepath.Join(dir, "records.jsonl")
		eng, err := newEngine(ctx, ec, records, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "stormreport scan: %v\n", err)
			if _, ok := errors.AsType[*recordsError](err); ok {
				return 1
			}
			return 2
		}
		defer eng.close(ctx)
		s.engine = eng
	}
	s.progress = newProgress(opts.files, stderr, s.engine)
	readable := s.readAll(opts.files, stdin)
	s.progress.stop()
	s.summary.Bytes = s.progress.read.Load()
	if s.engine != nil {
		if err := s.engine.finish(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(stderr, "stormreport scan: %v\n", err)
			return 1
		}
		if err := s.summarise(); err != nil {
			fmt.Fprintf(stderr, "stormreport scan: %v\n", err)
			return 1
		}
	}
	var attemptReport attemptlog.Report
	if s.attemptScanner != nil {
		attemptReport = s.attemptScanner.Report()
		// Attempts the per-attempt scanner would crash on only once their span is reported (a
		// first t_start or last t_end that is not an integer) are left out here.
		for _, d := range attemptReport.Dropped {
			s.bad(position{file: d.Origin.File, line: int(d.Origin.Line)}, d.Err)
		}
	}
	if hidden := s.summary.BadLines - maxBadLinesShown; hidden > 0 {
		fmt.Fprintf(stderr, "stormreport scan: %d more lines did not parse\n", hidden)
	}
	switch {
	case s.stopped != nil:
		fmt.Fprintf(stderr, "stormreport scan: stopped: %v\n", s.stopped)
		return 1
	case readable == 0:
		fmt.Fprintf(stderr, "stormreport scan: no input could be read\n")
		return 1
	}
	if s.attemptScanner != nil && s.summary.LoggedAttempts == 0 {
		fmt.Fprintf(stderr, "stormreport scan: no per-attempt tool_attempt line in the input\n")
	}
	if s.engine == nil {
		if err := attemptReport.WriteJSON(stdout); err != nil {
			fmt.Fprintf(stderr, "stormreport scan: %v\n", err)
			return 1
		}
		return 0
	}
	if opts.out != "" {
		if err := moveRecords(records, opts.out); err != nil {
			fmt.Fprintf(stderr, "stormreport scan: %v\n", err)
			return 1
		}
		records = opts.out
	}
	if err := s.output(opts, records, attemptReport, stdout); err != nil {
		fmt.Fprintf(stderr, "stormreport scan: %v\n", err)
		return 1
	}
	return 0
}

// moveRecords puts the scan's records file at path, in place of an earlier scan's records
// (rotated parts included).
func moveRecords(from, path string) error {
	backups, err := summaryfile.Backups(path)
	if err != nil {
		return err
	}
	for _, f := range backups {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("replace records file: %w", err)
		}
	}
	if err := os.Rename(from, path); err != nil {
		return fmt.Errorf("move records into place: %w", err)
	}
	return nil
}

// readAll reads every input and returns how many could be read. It stops early when the
// records cannot be written or the scan is interrupted.
func (s *scan) readAll(files []string, stdin io.Reader) int {
	readable := 0
	for _, name := range files {
		if err := s.ctx.Err(); err != nil {
			s.stopped = context.Cause(s.ctx)
			break
		}
		s.summary.Files++
		err := s.readOne(name, stdin)
		if _, stop := errors.AsType[*recordsError](err); stop || s.ctx.Err() != nil {
			s.stopped = cmp.Or(err, context.Cause(s.ctx))
			readable++
			break
		}
		if err != nil {
			s.summary.Unreadable++
			s.progress.clear()
			fmt.Fprintf(s.stderr, "stormreport scan: %s: %v\n", displayName(name), err)
			continue
		}
		readable++
	}
	return readable
}

func displayName(name string) string {
	if name == "-" {
		return "stdin"
	}
	return name
}

// readOne reads one input. An input that cannot be opened, is not a regular file or is in
// no known format is unreadable; one that ends early is reported at its end, what came
// before it analysed.
func (s *scan) readOne(name string, stdin io.Reader) (err error) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := openRegular(name)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	defer func() { err = cmp.Or(err, s.flushAttempts()) }()
	return readInput(displayName(name), &countingReader{r: r, progress: s.progress}, s.format, s.maxMessage, s)
}

func (s *scan) traces(td ptrace.Traces) error {
	if s.engine == nil {
		s.skipped() // the attempt report reads per-attempt lines only
		return nil
	}
	s.summary.Spans += int64(td.SpanCount())
	return s.consume(td)
}

func (s *scan) consume(td ptrace.Traces) error {
	if err := s.ctx.Err(); err != nil {
		return context.Cause(s.ctx)
	}
	if err := s.engine.consume(s.ctx, td); err != nil {
		if _, ok := errors.AsType[*recordsError](err); ok {
			return err
		}
		return &recordsError{fmt.Errorf("analysis: %w", err)}
	}
	return nil
}

func (s *scan) attemptLine(where position, line []byte) error {
	ev, ok, err := attemptlog.ParseLine(line)
	if err != nil {
		s.bad(where, err)
		return nil
	}
	if !ok {
		return nil
	}
	if !ev.IsToolAttempt() {
		s.skipped()
		return nil
	}
	if s.attemptScanner != nil {
		ev.Origin = attemptlog.Origin{File: where.file, Line: int64(where.line)}
		if err := s.attemptScanner.Add(ev); err != nil {
			s.bad(where, err)
		}
	}
	s.summary.LoggedAttempts++
	if s.engine == nil {
		return nil
	}
	s.summary.Spans++
	s.attempts.add(ev)
	if s.attempts.len() >= attemptBatchSpans {
		return s.flushAttempts()
	}
	return nil
}

func (s *scan) flushAttempts() error {
	if s.engine == nil || s.attempts.len() == 0 {
		return nil
	}
	return s.consume(s.attempts.take())
}

func (s *scan) bad(where position, err error) {
	s.summary.BadLines++
	if _, ok := errors.AsType[*oversizedError](err); ok {
		s.summary.Oversized++
	}
	if s.summary.BadLines <= maxBadLinesShown {
		s.progress.clear()
		fmt.Fprintf(s.stderr, "stormreport scan: %s: %v\n", where, err)
	}
}

func (s *scan) skipped() { s.summary.SkippedLines++ }

// summarise completes the summary from the processor's telemetry and says on stderr what
// a reader of the report must know: lines that did not parse, traces decided early.
func (s *scan) summarise() error {
	c, err := s.engine.counts(s.ctx)
	if err != nil {
		return err
	}
	s.summary.Traces, s.summary.EarlyDecisions, s.summary.LateSpans = c.traces, c.earlyDecisions, c.lateSpans
	if early := c.earlyDecisions["memory_pressure"] + c.earlyDecisions["trace_bytes"]; early > 0 {
		fmt.Fprintf(s.stderr, "stormreport scan: %d traces decided before the input ended (%d at the memory bound, --max-buffered-bytes %d; %d past max_trace_bytes): each was judged on the spans read by then\n",
			early, c.earlyDecisions["memory_pressure"], s.summary.MaxBufferedBytes, c.earlyDecisions["trace_bytes"])
	}
	if c.lateSpans > 0 {
		fmt.Fprintf(s.stderr, "stormreport scan: %d spans came after their trace was decided and were not analysed\n", c.lateSpans)
	}
	for cause, n := range c.droppedSpans {
		fmt.Fprintf(s.stderr, "stormreport scan: %d spans lost (%s)\n", n, cause)
	}
	return nil
}

// output prints the attempt report or the records' report.
func (s *scan) output(opts options, records string, attemptReport attemptlog.Report, stdout io.Writer) error {
	input, report, err := stormreport.Load([]string{records}, opts.top)
	if err != nil {
		return err
	}
	report.Scan = &s.summary
	if opts.attemptReport {
		if opts.html != "" {
			if err := stormreport.Output(io.Discard, input, report, false, opts.html); err != nil {
				return err
			}
		}
		return attemptReport.WriteJSON(stdout)
	}
	return stormreport.Output(stdout, input, report, opts.json, opts.html)
}
