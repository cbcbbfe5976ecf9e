package stormreport // import "github.com/retrystorm/retrystorm/internal/stormreport"

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

const usage = `usage: stormreport [--json] [--html FILE] [--top N] [--truth FILE] SUMMARY_FILE|GLOB...
       stormreport scan [flags] [FILE...|-]   (stormreport scan -h)

Reads storm summary files written by the storm_summary exporter (a summary file brings
its rotated and compressed backups along) and prints the top storms, totals by class,
finding kind and tool, and the trace-level findings. --json prints the report as JSON;
--html FILE also writes a self-contained page with a timeline per storm; --truth FILE
holds the records to agentsim's ground truth and ends the report with one line saying
where they differ.
`

// defaultTop is how many storms each ranking and the page show.
const defaultTop = 20

type options struct {
	json  bool
	html  string
	top   int
	truth string
	files []string
}

// Run is the stormreport command: it returns the process exit code.
func Run(args []string, stdout, stderr io.Writer) int {
	opts, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "stormreport: %v\n\n%s", err, usage)
		return 2
	}
	if err := run(opts, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "stormreport: %v\n", err)
		return 1
	}
	return 0
}

// parseArgs accepts flags before, between and after the file arguments.
func parseArgs(args []string, stderr io.Writer) (options, error) {
	opts := options{top: defaultTop}
	fs := flag.NewFlagSet("stormreport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	fs.BoolVar(&opts.json, "json", false, "print the report as JSON")
	fs.StringVar(&opts.html, "html", "", "write a self-contained HTML page to this file")
	fs.IntVar(&opts.top, "top", defaultTop, "storms per ranking and on the page (0 = all)")
	fs.StringVar(&opts.truth, "truth", "", "agentsim's ground truth (--truth output) to hold the records to")
	var err error
	if opts.files, err = ParseInterleaved(fs, args); err != nil {
		return opts, err
	}
	if len(opts.files) == 0 {
		return opts, errors.New("no summary files given")
	}
	if opts.top < 0 {
		return opts, errors.New("--top must not be negative")
	}
	return opts, nil
}

// ParseInterleaved parses args with fs, flags before, between and after the other
// arguments, which it returns in order.
func ParseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return rest, err
		}
		if fs.NArg() == 0 {
			return rest, nil
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// Load reads the summary files args name (globs, rotated backups brought along) and builds
// their report.
func Load(args []string, top int) (*Input, Report, error) {
	files, err := ResolveFiles(args)
	if err != nil {
		return nil, Report{}, err
	}
	input, err := Read(files)
	if err != nil {
		return nil, Report{}, err
	}
	return input, BuildFrom(input, top), nil
}

func run(opts options, stdout, stderr io.Writer) error {
	input, report, err := Load(opts.files, opts.top)
	if err != nil {
		return err
	}
	if opts.truth != "" {
		truth, err := ReadTruth(opts.truth)
		if err != nil {
			return err
		}
		report.Truth = CompareTruth(truth, input)
	}
	if input.SkippedLines > 0 {
		fmt.Fprintf(stderr, "stormreport: skipped %d lines that are not storm summary records\n", input.SkippedLines)
	}
	return Output(stdout, input, report, opts.json, opts.html)
}

// Output writes the report: the page to htmlPath when it is not empty, then JSON or text
// to stdout.
func Output(stdout io.Writer, input *Input, report Report, asJSON bool, htmlPath string) error {
	if htmlPath != "" {
		if err := writeHTMLFile(htmlPath, input, report); err != nil {
			return err
		}
	}
	if asJSON {
		return WriteJSON(stdout, report)
	}
	return WriteText(stdout, input, report)
}

// writeHTMLFile renders the page fully before replacing the target, so a failure never
// leaves half a page; the page is 0600 like the summaries it is made from.
func writeHTMLFile(path string, input *Input, report Report) error {
	var page bytes.Buffer
	if err := WriteHTML(&page, input, report); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".stormreport-*.html")
	if err != nil {
		return fmt.Errorf("create HTML report: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(page.Bytes()); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write HTML report: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write HTML report: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("move HTML report into place: %w", err)
	}
	return nil
}
