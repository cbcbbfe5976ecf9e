// Command stormbench measures retry_storm side by side with tail_sampling and a floor on the
// same agent traffic, in one process (and retry_storm without redaction, to show what
// redaction costs, and tail_sampling followed by the retry_storm policy and processor or by
// the contrib redaction processor), and prints markdown tables followed by one
// machine-readable ratio line per target. See BENCHMARKS.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"

	"github.com/retrystorm/retrystorm/internal/benchharness"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "e2e" && os.Args[1] != "scan" {
		steadyHeap()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "e2e" {
		return runE2E(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "scan" {
		return runScan(ctx, args[1:], stdout, stderr)
	}
	o, profiles, err := parseOptions(args, stderr)
	if err == flag.ErrHelp {
		return 0
	}
	if err != nil {
		return 2
	}
	o.Progress = stderr
	if profiles.cpu != "" {
		f, err := os.Create(profiles.cpu)
		if err != nil {
			fmt.Fprintf(stderr, "stormbench: %v\n", err)
			return 1
		}
		defer f.Close()
		o.CPUProfile = f
	}
	res, err := benchharness.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "stormbench: %v\n", err)
		return 1
	}
	if profiles.allocs != "" {
		if err := writeAllocs(profiles.allocs); err != nil {
			fmt.Fprintf(stderr, "stormbench: %v\n", err)
			return 1
		}
	}
	if err := res.WriteReport(stdout); err != nil {
		fmt.Fprintf(stderr, "stormbench: write report: %v\n", err)
		return 1
	}
	return 0
}

// steadyHeap re-executes stormbench with GODEBUG=madvdontneed=0 unless GODEBUG already
// says how freed memory goes back to the OS. The runtime then returns it with MADV_FREE,
// which the OS takes back only under memory pressure, so each measured run reuses the
// pages earlier runs touched instead of faulting in its whole heap again: a collector
// that has been running a while pays no such faults, and they cost both variants about a
// third of their measured CPU (BENCHMARKS.md, "Page faults"). It returns only when it did
// not re-execute; the report names the setting it ran under.
func steadyHeap() {
	godebug, set := os.LookupEnv("GODEBUG")
	if strings.Contains(godebug, "madvdontneed=") {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	if set && godebug != "" {
		godebug += ","
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") })
	env = append(env, "GODEBUG="+godebug+"madvdontneed=0")
	_ = syscall.Exec(exe, os.Args, env) // returns only when it failed
}

// profilePaths are where profiles go; empty for none.
type profilePaths struct{ cpu, allocs string }

// parseOptions reads the command line; errors are already written to stderr.
func parseOptions(args []string, stderr io.Writer) (benchharness.Options, profilePaths, error) {
	var o benchharness.Options
	var prof profilePaths
	var buffered, checks, variants, shapes string
	fs := flag.NewFlagSet("stormbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Uint64Var(&o.Seed, "seed", 1, "traffic generator seed")
	fs.StringVar(&shapes, "shapes", "", "instrumentation shapes the workloads draw from, comma-separated (agentsim --shapes names them); empty: every shape")
	fs.IntVar(&o.Traces, "traces", 6000, "traces in the comparison workload")
	fs.IntVar(&o.LatencyTraces, "latency-traces", 5000, "traces in the paced latency run")
	fs.Float64Var(&o.LatencyRate, "latency-rate", 50000, "offered load of the latency run, spans per second")
	fs.IntVar(&o.BatchSpans, "batch-spans", 512, "most spans per request")
	fs.IntVar(&o.Repeats, "repeats", 5, "repeats of each measurement (medians are reported)")
	fs.IntVar(&o.HeapSpans, "heap-spans", 200000, "spans buffered by the heap measurement")
	fs.StringVar(&buffered, "buffered", "1000,100000,1000000", "held-span levels of the scaling check")
	fs.IntVar(&o.RoundTraces, "round-traces", 1500, "traces per measured round of the scaling check")
	fs.IntVar(&o.BufferedRepeats, "buffered-repeats", 7, "repeats of the scaling check at each level")
	fs.DurationVar(&o.HeldAge, "held-age", 6*time.Second, "how long the scaling check lets held spans wait before measuring (retry_storm packs spans waiting for their root after 5s)")
	fs.IntVar(&o.CoresTraces, "cores-traces", 5000, "traces per run of the one- versus two-core check")
	fs.IntVar(&o.CoresRepeats, "cores-repeats", 5, "repeats of the one- and two-core runs")
	fs.StringVar(&checks, "checks", strings.Join(benchharness.AllChecks, ","), "checks to run")
	fs.StringVar(&variants, "variants", strings.Join(benchharness.Variants, ","), "variants of the compare and heap checks")
	fs.StringVar(&prof.cpu, "cpuprofile", "", "write a CPU profile of the first measured comparison run (or, without the comparison, of the first latency run) to this file")
	fs.StringVar(&prof.allocs, "memprofile", "", "write an allocation profile of the whole run to this file")
	if err := fs.Parse(args); err != nil {
		return o, prof, err
	}
	levels, err := parseLevels(buffered)
	if err != nil {
		fmt.Fprintf(stderr, "stormbench: --buffered: %v\n", err)
		return o, prof, err
	}
	o.Buffered = levels
	o.Checks = splitList(checks)
	o.Variants = splitList(variants)
	for _, sh := range splitList(shapes) {
		o.Shapes = append(o.Shapes, agenttraffic.Shape(sh))
	}
	return o, prof, nil
}

func parseLevels(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive span count", part)
		}
		out = append(out, n)
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create allocation profile: %w", err)
	}
	// The profile is as of the last completed collection: run one so the allocations of
	// the final decisions (at shutdown) are in it.
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("write allocation profile: %w", err)
	}
	return f.Close()
}
