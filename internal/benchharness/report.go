package benchharness

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// heapRelease says how the runtime gives freed memory back to the OS in this process,
// which decides whether each run pays page faults for its heap (cmd/stormbench sets
// madvdontneed=0 unless told otherwise).
func heapRelease() string {
	if strings.Contains(os.Getenv("GODEBUG"), "madvdontneed=0") {
		return "Freed memory returns to the OS with MADV_FREE (GODEBUG=madvdontneed=0): runs reuse pages earlier runs touched, as a collector running a while does."
	}
	return "Freed memory returns to the OS with MADV_DONTNEED (the Go default): each run pays page faults for its heap."
}

// Machine is what BENCHMARKS.md records of the machine: no host name, no path.
type Machine struct {
	CPUs  int
	Model string
	Go    string
}

// DescribeMachine reads the CPU count, the CPU model and the Go version.
func DescribeMachine() Machine {
	return Machine{CPUs: runtime.NumCPU(), Model: cpuModel(), Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
}

func (m Machine) String() string { return fmt.Sprintf("%d CPU, %s, %s", m.CPUs, m.Model, m.Go) }

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianOf[T any](xs []T, f func(T) float64) float64 {
	vals := make([]float64, len(xs))
	for i, x := range xs {
		vals[i] = f(x)
	}
	return median(vals)
}

func rangeOf[T any](xs []T, f func(T) float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		v := f(x)
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// percentile returns the p-th percentile (0–1) of sorted durations by nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Ratio is one machine-readable ratio line.
type Ratio struct {
	Metric, Pair string
	Value        float64
}

func (r Ratio) String() string { return fmt.Sprintf("ratio %s %s=%.2f", r.Metric, r.Pair, r.Value) }

// Ratios are the five ratios the issue asks for, in its order, then the ones added beside
// them.
func (r *Results) Ratios() []Ratio {
	cpu := func(v string) float64 { return medianOf(r.Compare[v], CompareSample.CPUPerSpan) }
	heap := func(v string) float64 { return medianOf(r.Heap[v], HeapSample.PerSpan) }
	levels := slices.Sorted(maps.Keys(r.Buffered))
	scale := math.NaN()
	if len(levels) >= 2 {
		first, last := r.Buffered[levels[0]], r.Buffered[levels[len(levels)-1]]
		scale = medianOf(last, BufferedSample.CPUPerSpan) / medianOf(first, BufferedSample.CPUPerSpan)
	}
	thr := func(p int) float64 { return medianOf(r.Cores[p], CoresSample.SpansPerSecond) }
	return []Ratio{
		{"cpu_per_span", VariantRetryStorm + "/" + VariantTailSampling, cpu(VariantRetryStorm) / cpu(VariantTailSampling)},
		{"cpu_per_span", VariantRetryStorm + "/" + VariantFloor, cpu(VariantRetryStorm) / cpu(VariantFloor)},
		{"heap_per_buffered_span", VariantRetryStorm + "/" + VariantTailSampling, heap(VariantRetryStorm) / heap(VariantTailSampling)},
		{"cost_per_span", levelName(levels, len(levels)-1) + "/" + levelName(levels, 0) + "_buffered", scale},
		{"throughput", "2cores/1core", thr(2) / thr(1)},
		// Redaction's share, beside the five: the first ratio without it.
		{"cpu_per_span", VariantRetryStormUnredacted + "/" + VariantTailSampling, cpu(VariantRetryStormUnredacted) / cpu(VariantTailSampling)},
		// The physical limits: what holding every request costs, decoded and encoded.
		{"cpu_per_span", VariantRetryStorm + "/" + VariantFloorHold, cpu(VariantRetryStorm) / cpu(VariantFloorHold)},
		{"cpu_per_span", VariantRetryStorm + "/" + VariantFloorPack, cpu(VariantRetryStorm) / cpu(VariantFloorPack)},
		// For teams that keep tail_sampling: what the retry_storm policy and the verdict
		// after it add to tail_sampling, and retry_storm against the contrib stack a user
		// would assemble for the same protection.
		{"cpu_per_span", VariantTailSamplingRetryStorm + "/" + VariantTailSampling, cpu(VariantTailSamplingRetryStorm) / cpu(VariantTailSampling)},
		{"cpu_per_span", VariantRetryStorm + "/" + VariantTailSamplingRedaction, cpu(VariantRetryStorm) / cpu(VariantTailSamplingRedaction)},
		// What following the model costs: the first ratio without redaction, against the
		// same without following.
		{"cpu_per_span", VariantRetryStormUnredacted + "/" + VariantRetryStormUnfollowed, cpu(VariantRetryStormUnredacted) / cpu(VariantRetryStormUnfollowed)},
	}
}

// redactionCost is what redaction costs in the comparison run, from retry_storm less
// retry_storm_unredacted: CPU ns per kept span and per span of all traffic (NaN without
// both variants).
func (r *Results) redactionCost() (perKept, perSpan float64) {
	on, off := r.Compare[VariantRetryStorm], r.Compare[VariantRetryStormUnredacted]
	if len(on) == 0 || len(off) == 0 {
		return math.NaN(), math.NaN()
	}
	perSpan = medianOf(on, CompareSample.CPUPerSpan) - medianOf(off, CompareSample.CPUPerSpan)
	kept := medianOf(on, func(s CompareSample) float64 { return float64(s.KeptSpans) })
	return perSpan * float64(r.Workload.Spans) / kept, perSpan
}

func levelName(levels []int, i int) string {
	if i < 0 || i >= len(levels) {
		return "?"
	}
	return humanCount(levels[i])
}

// humanCount writes 1000 as 1k and 1000000 as 1M.
func humanCount(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1_000 && n%1_000 == 0:
		return fmt.Sprintf("%dk", n/1_000)
	}
	return fmt.Sprint(n)
}

// WriteReport writes the markdown tables and, last, the ratio lines.
func (r *Results) WriteReport(out io.Writer) error {
	bw := bufio.NewWriter(out)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	r.writeComparison(p)
	r.writeRedaction(p)
	r.writeBuffered(p)
	r.writeCores(p)
	p("\n")
	for _, ratio := range r.Ratios() {
		p("%s\n", ratio)
	}
	return bw.Flush()
}

type printer func(format string, args ...any)

func (r *Results) writeComparison(p printer) {
	o := r.Options
	p("Machine: %s. Run took %s. %s\n\n", r.Machine, r.Elapsed.Round(time.Second), heapRelease())
	shapes := "every shape"
	if len(o.Shapes) > 0 {
		shapes = fmt.Sprintf("shapes %v", o.Shapes)
	}
	p("Comparison workload: seed %d, %s, %d traces, %d spans (%.1f spans/trace), %d requests of up to %d spans, %.0f B/span OTLP, fed as fast as each variant takes them; %d repeats, medians (range). Latency: %d traces offered at %.0f spans/s, one run.\n\n",
		o.Seed, shapes, r.Workload.Traces, r.Workload.Spans, float64(r.Workload.Spans)/float64(max(r.Workload.Traces, 1)),
		r.Workload.Requests, o.BatchSpans, float64(r.Workload.EncodedBytes)/float64(max(r.Workload.Spans, 1)), o.Repeats,
		o.LatencyTraces, o.LatencyRate)
	p("| variant | CPU ns/span | B/span | allocs/span | heap B/buffered span | decision latency p50 / p99 | CPU ns/span at %.0fk spans/s | kept traces | page faults per run (kernel ms) |\n", o.LatencyRate/1000)
	p("|---|---|---|---|---|---|---|---|---|\n")
	for _, v := range Variants {
		cs := r.Compare[v]
		if len(cs) == 0 {
			continue
		}
		lo, hi := rangeOf(cs, CompareSample.CPUPerSpan)
		heap := "—"
		if hs := r.Heap[v]; len(hs) > 0 {
			heap = fmt.Sprintf("%.0f", medianOf(hs, HeapSample.PerSpan))
		}
		lat, paced := "—", "—"
		if l, ok := r.Latency[v]; ok {
			lat = fmt.Sprintf("%s / %s", fmtDur(float64(percentile(l.Latencies, 0.5))), fmtDur(float64(percentile(l.Latencies, 0.99))))
			paced = fmt.Sprintf("%.0f", l.CPUPerSpan())
		}
		kept := "—"
		if !isFloor(v) {
			kept = fmt.Sprintf("%.1f%%", 100*medianOf(cs, func(s CompareSample) float64 { return float64(s.KeptTraces) })/float64(max(r.Workload.Traces, 1)))
		}
		faults := fmt.Sprintf("%.0f (%.0f)", medianOf(cs, func(s CompareSample) float64 { return float64(s.PageFaults) }),
			medianOf(cs, func(s CompareSample) float64 { return float64(s.SysCPU) / 1e6 }))
		p("| %s | %.0f (%.0f–%.0f) | %.0f | %.1f | %s | %s | %s | %s | %s |\n", v, medianOf(cs, CompareSample.CPUPerSpan), lo, hi,
			medianOf(cs, CompareSample.AllocBytesPerSpan), medianOf(cs, CompareSample.AllocsPerSpan), heap, lat, paced, kept, faults)
	}
}

func (r *Results) writeRedaction(p printer) {
	perKept, perSpan := r.redactionCost()
	if math.IsNaN(perKept) {
		return
	}
	p("\nRedaction (retry_storm less retry_storm_unredacted, this run): %.0f ns CPU per kept span, %.0f ns per span of all traffic.\n", perKept, perSpan)
}

func (r *Results) writeBuffered(p printer) {
	if len(r.Buffered) == 0 {
		return
	}
	p("\nScaling: retry_storm holding traces that wait for their root (decision_wait 1h), for %s before each level is measured; %d repeats, medians (range).\n", r.Options.HeldAge, r.Options.BufferedRepeats)
	p("\n| buffered spans | CPU ns/span: work + collector share (range) | work, collector off | collector share | measured with the collector on (range) |\n|---|---|---|---|---|\n")
	for _, level := range slices.Sorted(maps.Keys(r.Buffered)) {
		bs := r.Buffered[level]
		lo, hi := rangeOf(bs, BufferedSample.CPUPerSpan)
		mlo, mhi := rangeOf(bs, BufferedSample.MeasuredPerSpan)
		p("| %s | %.0f (%.0f–%.0f) | %.0f | %.0f | %.0f (%.0f–%.0f) |\n", humanCount(level), medianOf(bs, BufferedSample.CPUPerSpan), lo, hi,
			medianOf(bs, BufferedSample.MutatorPerSpan), medianOf(bs, BufferedSample.GCPerSpan),
			medianOf(bs, BufferedSample.MeasuredPerSpan), mlo, mhi)
	}
}

func (r *Results) writeCores(p printer) {
	reference := func(c CoresSample) float64 { return c.Reference }
	p("\n| GOMAXPROCS | retry_storm spans/s (range) | hashing reference, blocks/s (range) |\n|---|---|---|\n")
	for _, procs := range slices.Sorted(maps.Keys(r.Cores)) {
		cs := r.Cores[procs]
		lo, hi := rangeOf(cs, CoresSample.SpansPerSecond)
		rlo, rhi := rangeOf(cs, reference)
		p("| %d | %.0f (%.0f–%.0f) | %.0f (%.0f–%.0f) |\n", procs, medianOf(cs, CoresSample.SpansPerSecond), lo, hi,
			medianOf(cs, reference), rlo, rhi)
	}
	pairs := r.corePairs()
	if len(pairs) == 0 {
		return
	}
	var all, free []float64
	p("\nPer repeat, two cores over one: ")
	for i, pr := range pairs {
		if i > 0 {
			p(", ")
		}
		p("%.2f× (reference %.2f×)", pr[0], pr[1])
		all = append(all, pr[0])
		if pr[1] >= 1.8 {
			free = append(free, pr[0])
		}
	}
	p(". Median %.2f×", median(all))
	if len(free) > 0 {
		p("; %.2f× over the %d repeat(s) where the machine gave both cores (reference ≥ 1.8×)", median(free), len(free))
	}
	p(".\n")
}

// corePairs pairs the one- and two-core runs of each repeat: retry_storm's speed-up and
// the hashing reference's, measured right after each run.
func (r *Results) corePairs() [][2]float64 {
	one, two := r.Cores[1], r.Cores[2]
	var out [][2]float64
	for i := range min(len(one), len(two)) {
		out = append(out, [2]float64{two[i].SpansPerSecond() / one[i].SpansPerSecond(), two[i].Reference / one[i].Reference})
	}
	return out
}

func fmtDur(ns float64) string {
	if math.IsNaN(ns) || ns == 0 {
		return "—"
	}
	return time.Duration(ns).Round(time.Millisecond).String()
}
