package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

// Protocols the exporter speaks.
const (
	protocolGRPC = "grpc"
	protocolHTTP = "http"
)

// defaultCount bounds a run that sets neither --count nor --duration.
const defaultCount = 100

// options is the parsed command line.
type options struct {
	endpoint  string
	protocol  string
	insecure  bool
	rate      float64
	duration  time.Duration
	count     int
	timeout   time.Duration
	truthPath string
	traffic   agenttraffic.Config
	// pieces and pieceGap send each trace as a batch exporter sends a long run (flood.go).
	pieces   int
	pieceGap time.Duration
	// floodRate and floodService are the second tenant: clean traces, whole (flood.go).
	floodRate    float64
	floodService string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	var shapes, scenarios string
	fs := flag.NewFlagSet("agentsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.endpoint, "endpoint", "", "OTLP endpoint host:port or URL (default 127.0.0.1:4317 for grpc, 127.0.0.1:4318 for http)")
	fs.StringVar(&o.protocol, "protocol", protocolGRPC, "OTLP protocol: grpc or http")
	fs.BoolVar(&o.insecure, "insecure", true, "plaintext connection (no TLS)")
	fs.Float64Var(&o.rate, "rate", 10, "traces per second; 0 sends as fast as the exporter takes them")
	fs.DurationVar(&o.duration, "duration", 0, "stop after this long (0: no time bound)")
	fs.IntVar(&o.count, "count", 0, fmt.Sprintf("stop after this many traces (0: no count bound; %d when --duration is 0 too)", defaultCount))
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "bound for one export (retries included) and for the final flush")
	fs.StringVar(&o.truthPath, "truth", "", "write the ground truth as JSONL to this file")
	fs.Uint64Var(&o.traffic.Seed, "seed", 1, "random seed: one seed, one run")
	fs.StringVar(&shapes, "shapes", "mix", "instrumentation shapes, comma-separated, or mix: "+joinShapes()+" (seed_record: deprecated name of attempt_record)")
	fs.StringVar(&scenarios, "scenarios", "mix", "scenario weights name=weight,… or mix (90% clean): "+joinScenarios())
	fs.BoolVar(&o.traffic.EveryScenario, "every-scenario", false, "send every scenario once before the weighted mix")
	fs.IntVar(&o.traffic.ToolsPerTrace, "tools-per-trace", 24, "logical tool calls per trace")
	fs.IntVar(&o.traffic.StalePairs, "stale-pairs", 1, fmt.Sprintf("pairs (stale read, trace it copied) per stale_cache draw, 1 to %d; several are sent interleaved", agenttraffic.MaxStalePairs))
	fs.StringVar(&o.traffic.Service, "service", "checkout-agent", "resource service.name")
	fs.IntVar(&o.pieces, "pieces", 1, "send each trace in this many requests, spans in end order, the root in the last (1: whole)")
	fs.DurationVar(&o.pieceGap, "piece-gap", 2500*time.Millisecond, "time between two pieces of one trace (with --pieces above 1)")
	fs.Float64Var(&o.floodRate, "flood-rate", 0, "a second tenant: clean traces per second from --flood-service, sent whole while the run lasts (0: none)")
	fs.StringVar(&o.floodService, "flood-service", "bulk-agent", "service.name of the --flood-rate tenant")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	var err error
	if o.traffic.Shapes, err = agenttraffic.ParseShapes(shapes); err != nil {
		return o, fmt.Errorf("--shapes: %w", err)
	}
	// "mix" stays unset so the library fits the default mix to the chosen shapes.
	if scenarios != "mix" {
		if o.traffic.Scenarios, err = agenttraffic.ParseScenarioWeights(scenarios); err != nil {
			return o, fmt.Errorf("--scenarios: %w", err)
		}
	}
	return o, o.complete()
}

// complete fills the defaults that depend on other flags and checks the combination.
func (o *options) complete() error {
	var errs []error
	switch o.protocol {
	case protocolGRPC, protocolHTTP:
	default:
		errs = append(errs, fmt.Errorf("--protocol must be grpc or http, not %q", o.protocol))
	}
	if o.endpoint == "" {
		o.endpoint = map[string]string{protocolGRPC: "127.0.0.1:4317", protocolHTTP: "127.0.0.1:4318"}[o.protocol]
	}
	if o.traffic.StalePairs < 1 {
		errs = append(errs, fmt.Errorf("--stale-pairs must be at least 1, got %d", o.traffic.StalePairs))
	}
	if o.rate < 0 || o.count < 0 || o.duration < 0 {
		errs = append(errs, errors.New("--rate, --count and --duration must not be negative"))
	}
	if o.pieces < 1 || o.pieceGap < 0 || o.floodRate < 0 {
		errs = append(errs, errors.New("--pieces must be at least 1, --piece-gap and --flood-rate must not be negative"))
	}
	if o.floodRate > 0 && o.floodService == o.traffic.Service {
		errs = append(errs, fmt.Errorf("--flood-service must differ from --service (%q)", o.floodService))
	}
	if o.timeout <= 0 {
		errs = append(errs, errors.New("--timeout must be positive"))
	}
	if o.count == 0 && o.duration == 0 {
		o.count = defaultCount
	}
	if o.traffic.EveryScenario && o.count > 0 && o.count < len(agenttraffic.AllScenarios()) {
		errs = append(errs, fmt.Errorf("--every-scenario needs --count of at least %d", len(agenttraffic.AllScenarios())))
	}
	o.traffic.Interval = 10 * time.Millisecond
	if o.rate > 0 {
		o.traffic.Interval = time.Duration(float64(time.Second) / o.rate)
	}
	if err := o.traffic.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func joinShapes() string {
	var names []string
	for _, s := range agenttraffic.AllShapes() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

func joinScenarios() string {
	var names []string
	for _, s := range agenttraffic.AllScenarios() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}
