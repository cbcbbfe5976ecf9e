package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"github.com/retrystorm/retrystorm/internal/benchharness"
)

// runE2E is `stormbench e2e`: both collectors driven by agentsim at the same offered rates.
func runE2E(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o benchharness.E2EOptions
	var retryStorm, tailSampling, configs, rates string
	fs := flag.NewFlagSet("stormbench e2e", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&retryStorm, "retry-storm-bin", "_build/otelcol-retrystorm", "otelcol-retrystorm binary")
	fs.StringVar(&tailSampling, "tail-sampling-bin", "_build/otelcol-tailsampling", "otelcol-tailsampling binary")
	fs.StringVar(&o.Agentsim, "agentsim-bin", "bin/agentsim", "agentsim binary")
	fs.StringVar(&configs, "configs", "bench", "directory of retry_storm.yaml and tail_sampling.yaml")
	fs.StringVar(&rates, "rates", "100,200,400,600", "offered loads, traces per second")
	fs.DurationVar(&o.Duration, "duration", 0, "how long each rate is offered (default 10s)")
	fs.StringVar(&o.Driver, "driver", benchharness.DriverAgentsim, "agentsim (SDK-built spans) or replay (pre-encoded requests, a cheap driver that can saturate a collector)")
	fs.IntVar(&o.Drivers, "drivers", 0, "agentsim processes, or concurrent replay exporters, sharing each rate (default 2 or 4)")
	fs.DurationVar(&o.Settle, "settle", 0, "wait after driving, for decisions (default 5s)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the first driver")
	fs.StringVar(&o.LogDir, "log-dir", "", "where collector and driver logs go (default a temporary directory)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if o.Driver != benchharness.DriverAgentsim && o.Driver != benchharness.DriverReplay {
		fmt.Fprintf(stderr, "stormbench e2e: --driver must be agentsim or replay, not %q\n", o.Driver)
		return 2
	}
	for _, part := range splitList(rates) {
		r, err := strconv.ParseFloat(part, 64)
		if err != nil || r <= 0 {
			fmt.Fprintf(stderr, "stormbench e2e: --rates: %q is not a positive rate\n", part)
			return 2
		}
		o.Rates = append(o.Rates, r)
	}
	o.Collectors = []benchharness.E2ECollector{
		{Name: benchharness.VariantRetryStorm, Binary: retryStorm, Config: filepath.Join(configs, "retry_storm.yaml")},
		{Name: benchharness.VariantTailSampling, Binary: tailSampling, Config: filepath.Join(configs, "tail_sampling.yaml")},
	}
	o.Progress = stderr
	res, err := benchharness.RunE2E(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "stormbench e2e: %v\n", err)
		return 1
	}
	if err := res.WriteReport(stdout); err != nil {
		fmt.Fprintf(stderr, "stormbench e2e: write report: %v\n", err)
		return 1
	}
	return 0
}
