package benchharness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

// Options configures a harness run. The zero value of a field means its default.
type Options struct {
	// Seed of the traffic generator; default 1.
	Seed uint64
	// Shapes are the instrumentation shapes the workloads draw from; empty: agenttraffic's
	// default (every shape, the unlisted framework's included).
	Shapes []agenttraffic.Shape
	// Traces in the comparison workload; default 6000 (about 350k spans). The comparison
	// feeds them as fast as each variant takes them.
	Traces int
	// LatencyTraces are fed at LatencyRate spans per second to measure decision latency;
	// defaults 3000 and 50000.
	LatencyTraces int
	LatencyRate   float64
	// BatchSpans is the most spans per request; default 512 (an SDK's export batch).
	BatchSpans int
	// Repeats of each measurement; default 5, medians are reported.
	Repeats int
	// HeapSpans is how many spans the heap measurement buffers; default 200000.
	HeapSpans int
	// Buffered are the held-span levels of the scaling check; default 1k, 100k, 1M.
	Buffered []int
	// RoundTraces is the traces measured per round of the scaling check; default 1500.
	RoundTraces int
	// BufferedRepeats of the scaling check's pair of rounds at each level; default 7.
	BufferedRepeats int
	// HeldAge is how long the scaling check lets the held spans wait before it measures;
	// default 6s. A buffer in steady state holds mostly spans that have waited a while,
	// and retry_storm packs the spans of a trace still waiting for its root after 5s.
	HeldAge time.Duration
	// CoresTraces is the traces fed per run of the cores check; default 5000.
	CoresTraces int
	// CoresRepeats of the one- and two-core runs, alternating; default 5.
	CoresRepeats int
	// Checks selects what to run among AllChecks; default all of them.
	Checks []string
	// Variants selects the variants of the comparison, latency and heap checks; default
	// Variants.
	Variants []string
	// CPUProfile, when set, receives a CPU profile of the first measured comparison run
	// (feed and shutdown only), or of the first latency run when the comparison is not
	// among the checks: pprof's format.
	CPUProfile io.Writer
	// Progress receives one line per step; nil for none.
	Progress io.Writer
}

// Checks.
const (
	CheckCompare  = "compare"
	CheckLatency  = "latency"
	CheckHeap     = "heap"
	CheckBuffered = "buffered"
	CheckCores    = "cores"
)

// AllChecks lists every check in run order.
var AllChecks = []string{CheckCompare, CheckLatency, CheckHeap, CheckBuffered, CheckCores}

func (o Options) withDefaults() Options {
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Traces <= 0 {
		o.Traces = 6000
	}
	if o.LatencyTraces <= 0 {
		o.LatencyTraces = 5000
	}
	if o.LatencyRate <= 0 {
		o.LatencyRate = 50000
	}
	if o.BatchSpans <= 0 {
		o.BatchSpans = 512
	}
	if o.Repeats <= 0 {
		o.Repeats = 5
	}
	if o.HeapSpans <= 0 {
		o.HeapSpans = 200_000
	}
	if len(o.Buffered) == 0 {
		o.Buffered = []int{1_000, 100_000, 1_000_000}
	}
	if o.RoundTraces <= 0 {
		o.RoundTraces = 1500
	}
	if o.BufferedRepeats <= 0 {
		o.BufferedRepeats = 7
	}
	if o.HeldAge <= 0 {
		o.HeldAge = 6 * time.Second
	}
	if o.CoresTraces <= 0 {
		o.CoresTraces = 5000
	}
	if o.CoresRepeats <= 0 {
		o.CoresRepeats = 5
	}
	if len(o.Checks) == 0 {
		o.Checks = AllChecks
	}
	if len(o.Variants) == 0 {
		o.Variants = Variants
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o
}

// Validate reports unknown checks and variants.
func (o Options) Validate() error {
	var errs []error
	for _, c := range o.Checks {
		if !slices.Contains(AllChecks, c) {
			errs = append(errs, fmt.Errorf("unknown check %q (known: %v)", c, AllChecks))
		}
	}
	for _, v := range o.Variants {
		if !slices.Contains(Variants, v) {
			errs = append(errs, fmt.Errorf("unknown variant %q (known: %v)", v, Variants))
		}
	}
	return errors.Join(errs...)
}

// Results are every measurement of a run, repeats included.
type Results struct {
	Options  Options
	Machine  Machine
	Workload WorkloadStats
	Compare  map[string][]CompareSample
	// Latency holds one paced run per buffering variant.
	Latency  map[string]CompareSample
	Heap     map[string][]HeapSample
	Buffered map[int][]BufferedSample
	Cores    map[int][]CoresSample
	Elapsed  time.Duration
}

// WorkloadStats describes the comparison workload.
type WorkloadStats struct {
	Traces, Spans, Requests int
	EncodedBytes            int
}

// Run performs every measurement: the comparison and heap per variant, the scaling check
// over buffered spans and the one- versus two-core check.
func Run(ctx context.Context, o Options) (*Results, error) {
	o = o.withDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	began := time.Now()
	r := &Results{Options: o, Machine: DescribeMachine(), Compare: map[string][]CompareSample{}, Latency: map[string]CompareSample{},
		Heap: map[string][]HeapSample{}, Buffered: map[int][]BufferedSample{}, Cores: map[int][]CoresSample{}}
	steps := map[string]func(context.Context, Options, *Results) error{
		CheckCompare: runComparison, CheckLatency: runLatency, CheckHeap: runHeaps, CheckBuffered: runScaling, CheckCores: runCoresCheck,
	}
	for _, c := range AllChecks {
		if !slices.Contains(o.Checks, c) {
			continue
		}
		if err := steps[c](ctx, o, r); err != nil {
			return nil, fmt.Errorf("%s: %w", c, err)
		}
	}
	r.Elapsed = time.Since(began)
	return r, nil
}

func logf(o Options, format string, args ...any) {
	fmt.Fprintf(o.Progress, "stormbench: "+format+"\n", args...)
}

// runComparison runs every variant Repeats times over one workload, interleaved, forward
// then backward, so drift of a shared machine spreads over all of them.
func runComparison(ctx context.Context, o Options, r *Results) error {
	w, err := NewWorkload(WorkloadConfig{Seed: o.Seed, Shapes: o.Shapes, Traces: o.Traces, BatchSpans: o.BatchSpans})
	if err != nil {
		return err
	}
	defer w.Close()
	r.Workload = WorkloadStats{Traces: w.Traces(), Spans: w.Spans(), Requests: w.Len(), EncodedBytes: w.EncodedBytes()}
	decBytes, decAllocs, err := decodeAllocs(w, 0, w.Len())
	if err != nil {
		return err
	}
	logf(o, "comparison workload: %d traces, %d spans, %d requests, %.1f MB OTLP",
		w.Traces(), w.Spans(), w.Len(), float64(w.EncodedBytes())/1e6)
	for rep := range o.Repeats {
		for _, v := range alternate(o.Variants, rep) {
			s, err := runCompare(ctx, w, v, 0, decBytes, decAllocs, o.CPUProfile)
			o.CPUProfile = nil
			if err != nil {
				return err
			}
			r.Compare[v] = append(r.Compare[v], s)
			logf(o, "compare %d/%d %-25s %7.0f ns/span CPU, %6.0f B/span, %5.1f allocs/span, kept %d traces; kernel %.0f ms, %d page faults",
				rep+1, o.Repeats, v, s.CPUPerSpan(), s.AllocBytesPerSpan(), s.AllocsPerSpan(), s.KeptTraces, float64(s.SysCPU)/1e6, s.PageFaults)
		}
	}
	return nil
}

// runLatency feeds the latency workload at LatencyRate to each buffering variant once.
func runLatency(ctx context.Context, o Options, r *Results) error {
	w, err := NewWorkload(WorkloadConfig{Seed: o.Seed, Shapes: o.Shapes, Traces: o.LatencyTraces, BatchSpans: o.BatchSpans})
	if err != nil {
		return err
	}
	defer w.Close()
	decBytes, decAllocs, err := decodeAllocs(w, 0, w.Len())
	if err != nil {
		return err
	}
	// Without a comparison run, the profile covers the first latency run instead.
	var profile io.Writer
	if !slices.Contains(o.Checks, CheckCompare) {
		profile = o.CPUProfile
	}
	for _, v := range o.Variants {
		if isFloor(v) || v == VariantRetryStormUnredacted || v == VariantRetryStormUnfollowed {
			continue
		}
		s, err := runCompare(ctx, w, v, o.LatencyRate, decBytes, decAllocs, profile)
		profile = nil
		if err != nil {
			return err
		}
		r.Latency[v] = s
		logf(o, "latency %-25s at %.0f spans/s: p50 %s, p99 %s over %d kept traces (%d more decided at shutdown); %.0f ns/span CPU",
			v, o.LatencyRate, percentile(s.Latencies, 0.5), percentile(s.Latencies, 0.99), len(s.Latencies), s.DecidedAtShutdown, s.CPUPerSpan())
	}
	return nil
}

func runHeaps(ctx context.Context, o Options, r *Results) error {
	traces := max(o.HeapSpans/55, 1)
	w, err := NewWorkload(WorkloadConfig{Seed: o.Seed + 1, Shapes: o.Shapes, Traces: traces, BatchSpans: o.BatchSpans})
	if err != nil {
		return err
	}
	defer w.Close()
	for rep := range o.Repeats {
		for _, v := range o.Variants {
			if !holdsOwnHeap(v) {
				continue
			}
			h, err := runHeap(ctx, w, v)
			if err != nil {
				return err
			}
			r.Heap[v] = append(r.Heap[v], h)
			logf(o, "heap %d/%d %-25s %d spans held: %.0f B/span (in use %.0f)", rep+1, o.Repeats, v,
				h.Spans, h.PerSpan(), float64(h.HeapInuse)/float64(h.Spans))
		}
	}
	return nil
}

func runScaling(ctx context.Context, o Options, r *Results) error {
	most := 0
	for _, b := range o.Buffered {
		most = max(most, b)
	}
	held, err := NewWorkload(WorkloadConfig{Seed: o.Seed + 2, Shapes: o.Shapes, Traces: most/50 + 1, BatchSpans: o.BatchSpans, Rootless: true})
	if err != nil {
		return err
	}
	defer held.Close()
	// Two rounds per repeat (the collector on, then off), each with traces new to the
	// processor; every level starts a fresh processor, so the levels reuse the same rounds.
	measured, err := NewWorkload(WorkloadConfig{Seed: o.Seed + 3, Shapes: o.Shapes, Traces: 2 * o.BufferedRepeats * o.RoundTraces, BatchSpans: o.BatchSpans})
	if err != nil {
		return err
	}
	defer measured.Close()
	per := measured.Len() / (2 * o.BufferedRepeats)
	rounds := make([][2]int, 2*o.BufferedRepeats)
	for i := range rounds {
		rounds[i] = [2]int{i * per, (i + 1) * per}
	}
	// Each repeat holds every level afresh for one pair of rounds, the levels in turn forward
	// and backward: on this kind of machine whichever level runs later in the process tends
	// to measure slower, and a fixed order charged that drift to the largest level.
	for rep := range o.BufferedRepeats {
		for _, level := range alternate(o.Buffered, rep) {
			samples, err := runBuffered(ctx, held, measured, level, o.HeldAge, rounds[2*rep:2*rep+2])
			if err != nil {
				return err
			}
			r.Buffered[level] = append(r.Buffered[level], samples...)
			for _, s := range samples {
				logf(o, "buffered %d/%d %8d held: %6.0f ns/span (%5.0f work + %5.0f collector share; measured with the collector on: %5.0f); live heap %d MB, a cycle %s",
					rep+1, o.BufferedRepeats, s.Held, s.CPUPerSpan(), s.MutatorPerSpan(), s.GCPerSpan(), s.MeasuredPerSpan(), s.LiveHeap>>20, s.Cycle.Round(time.Millisecond))
			}
		}
	}
	return nil
}

// holdsOwnHeap reports whether the heap check measures v: the variants whose buffer is
// another's are left out. Redaction runs on decided traces and holds nothing, and the
// tail_sampling stacks hold what tail_sampling holds: the processors after it see a trace
// only once it is decided.
func holdsOwnHeap(v string) bool {
	return v != VariantRetryStormUnredacted && v != VariantRetryStormUnfollowed && v != VariantTailSamplingRetryStorm && v != VariantTailSamplingRedaction
}

// alternate is xs in order for even repeats and reversed for odd ones, so drift over a run
// falls on every element alike.
func alternate[T any](xs []T, rep int) []T {
	out := slices.Clone(xs)
	if rep%2 == 1 {
		slices.Reverse(out)
	}
	return out
}

func runCoresCheck(ctx context.Context, o Options, r *Results) error {
	w, err := NewWorkload(WorkloadConfig{Seed: o.Seed + 4, Shapes: o.Shapes, Traces: o.CoresTraces, BatchSpans: o.BatchSpans})
	if err != nil {
		return err
	}
	defer w.Close()
	procs := []int{1, 2}
	if runtime.NumCPU() < 2 {
		logf(o, "one CPU: the two-core run shares it")
	}
	for rep := range o.CoresRepeats {
		for _, p := range alternate(procs, rep) {
			c, err := runCores(ctx, w, p)
			if err != nil {
				return err
			}
			r.Cores[p] = append(r.Cores[p], c)
			logf(o, "cores %d/%d GOMAXPROCS=%d: %.0f spans/s (hashing reference %.0f blocks/s)", rep+1, o.CoresRepeats, p, c.SpansPerSecond(), c.Reference)
		}
	}
	return nil
}
