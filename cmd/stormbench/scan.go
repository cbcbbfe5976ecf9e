package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/retrystorm/retrystorm/internal/benchharness"
)

// runScan is `stormbench scan`: stormreport scan over a large per-attempt JSONL file beside
// the per-attempt Python scanner on the same file, and over OTLP/JSON (BENCHMARKS.md).
func runScan(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code, ok := parseScanArgs(args, stderr)
	if !ok {
		return code
	}
	if o.Stormreport == "" {
		dir, err := os.MkdirTemp("", "stormbench-bin-*")
		if err != nil {
			fmt.Fprintf(stderr, "stormbench scan: %v\n", err)
			return 1
		}
		defer os.RemoveAll(dir)
		o.Stormreport = filepath.Join(dir, "stormreport")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", o.Stormreport, "./cmd/stormreport").CombinedOutput(); err != nil {
			fmt.Fprintf(stderr, "stormbench scan: build stormreport: %v\n%s", err, out)
			return 1
		}
	}
	res, err := benchharness.RunScan(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "stormbench scan: %v\n", err)
		return 1
	}
	benchharness.ScanReport(stdout, res)
	return 0
}

// parseScanArgs reads the flags of `stormbench scan`; when ok is false the command ends
// with code (0 for -h).
func parseScanArgs(args []string, stderr io.Writer) (o benchharness.ScanOptions, code int, ok bool) {
	o = benchharness.ScanOptions{Progress: stderr}
	var attemptLogMiB, otlpMiB int64
	var scanArgs string
	fs := flag.NewFlagSet("stormbench scan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Stormreport, "stormreport-bin", "", "stormreport binary (default: built from ./cmd/stormreport)")
	fs.StringVar(&o.Python, "python", "python3", "Python interpreter for the per-attempt scanner")
	fs.StringVar(&o.Script, "script", filepath.Join("internal", "attemptlog", "testdata", "retry_storm.py"), "the per-attempt retry storm scanner")
	fs.Int64Var(&attemptLogMiB, "attempt-log-mib", 1024, "size of the per-attempt JSONL input, MiB")
	fs.Int64Var(&attemptLogMiB, "seed-mib", 1024, "deprecated: the old name of --attempt-log-mib")
	fs.Int64Var(&otlpMiB, "otlp-mib", 1024, "size of the OTLP/JSON input, MiB")
	fs.IntVar(&o.Repeats, "repeats", 3, "runs of each command, interleaved")
	fs.StringVar(&o.Dir, "dir", "", "where the inputs are generated and kept (default a temporary directory, removed)")
	fs.Uint64Var(&o.Seed, "seed", 1, "generator seed")
	fs.StringVar(&scanArgs, "scan-args", "", "extra flags of every stormreport scan run, space-separated")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return o, 0, false
		}
		return o, 2, false
	}
	o.AttemptLogBytes, o.OTLPBytes = attemptLogMiB<<20, otlpMiB<<20
	o.ScanArgs = strings.Fields(scanArgs)
	return o, 0, true
}
