package benchharness

import (
	"bytes"
	"context"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// A run small enough for a unit test goes through every check and ends with the five
// ratio lines, in the order and format, and the ones added beside them. Figures
// are not checked: no timing.
func TestRunEndsWithTheRatioLines(t *testing.T) {
	res, err := Run(context.Background(), Options{
		Traces: 40, LatencyTraces: 40, LatencyRate: 200000, HeapSpans: 2000, Buffered: []int{500, 2000},
		RoundTraces: 10, HeldAge: time.Millisecond, CoresTraces: 40, Repeats: 1, CoresRepeats: 1, BufferedRepeats: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range Variants {
		heaps := 1
		if !holdsOwnHeap(v) {
			heaps = 0 // its heap is retry_storm's or tail_sampling's
		}
		if len(res.Compare[v]) != 1 || len(res.Heap[v]) != heaps {
			t.Fatalf("%s: %d comparison and %d heap samples", v, len(res.Compare[v]), len(res.Heap[v]))
		}
	}
	if _, ok := res.Latency[VariantFloor]; ok || len(res.Latency) != 4 {
		t.Fatalf("latency runs: %v", res.Latency)
	}
	if kept := res.Compare[VariantRetryStorm][0].KeptTraces; kept == 0 || kept > res.Workload.Traces {
		t.Fatalf("retry_storm kept %d of %d traces", kept, res.Workload.Traces)
	}
	var out bytes.Buffer
	if err := res.WriteReport(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Redaction (retry_storm less retry_storm_unredacted, this run): ") {
		t.Fatalf("no redaction cost line:\n%s", out.String())
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	want := []string{
		`ratio cpu_per_span retry_storm/tail_sampling=`,
		`ratio cpu_per_span retry_storm/floor=`,
		`ratio heap_per_buffered_span retry_storm/tail_sampling=`,
		`ratio cost_per_span 2k/500_buffered=`,
		`ratio throughput 2cores/1core=`,
		`ratio cpu_per_span retry_storm_unredacted/tail_sampling=`,
		`ratio cpu_per_span retry_storm/floor_hold=`,
		`ratio cpu_per_span retry_storm/floor_pack=`,
		`ratio cpu_per_span tail_sampling_retry_storm/tail_sampling=`,
		`ratio cpu_per_span retry_storm/tail_sampling_redaction=`,
		`ratio cpu_per_span retry_storm_unredacted/retry_storm_unfollowed=`,
	}
	if len(lines) < len(want) {
		t.Fatalf("report too short:\n%s", out.String())
	}
	last := lines[len(lines)-len(want):]
	for i, prefix := range want {
		if !regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `[0-9]+\.[0-9]{2}$`).MatchString(last[i]) {
			t.Fatalf("line %d from the end is %q, want %s<x>", len(want)-i, last[i], prefix)
		}
	}
}

func TestRatioNamesTheDefaultLevels(t *testing.T) {
	r := &Results{Buffered: map[int][]BufferedSample{1_000: nil, 100_000: nil, 1_000_000: nil}}
	if got := r.Ratios()[3].String(); !strings.HasPrefix(got, "ratio cost_per_span 1M/1k_buffered=") {
		t.Fatalf("scaling ratio line %q", got)
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := (Options{Checks: []string{"compare", "bogus"}}).Validate(); err == nil {
		t.Fatal("unknown check accepted")
	}
	if err := (Options{Variants: []string{"retry_storm", "bogus"}}).Validate(); err == nil {
		t.Fatal("unknown variant accepted")
	}
	if err := (Options{}).withDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestMedianAndPercentile(t *testing.T) {
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Fatalf("median = %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Fatalf("median = %v", got)
	}
	if !math.IsNaN(median(nil)) {
		t.Fatal("median of nothing is a number")
	}
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if percentile(d, 0.5) != 5 || percentile(d, 0.99) != 10 || percentile(nil, 0.5) != 0 {
		t.Fatalf("percentiles %v %v", percentile(d, 0.5), percentile(d, 0.99))
	}
}

func TestGCShareFollowsThePacer(t *testing.T) {
	// A cycle of 10ms over a 100 MB heap; 1000 spans allocating 50 MB trigger half a cycle.
	b := BufferedSample{Mutator: 4 * time.Millisecond, MutatorSpans: 1000, Alloc: 50 << 20, LiveHeap: 100 << 20, Cycle: 10 * time.Millisecond}
	if got := b.GCPerSpan(); got != 5000 {
		t.Fatalf("collector share %v ns/span, want 5000", got)
	}
	if got := b.CPUPerSpan(); got != 9000 {
		t.Fatalf("cost %v ns/span, want 9000", got)
	}
}

func TestHumanCount(t *testing.T) {
	for n, want := range map[int]string{1000: "1k", 100_000: "100k", 1_000_000: "1M", 1500: "1500", 42: "42"} {
		if got := humanCount(n); got != want {
			t.Fatalf("humanCount(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestAlternateReversesOddRepeats(t *testing.T) {
	xs := []int{1000, 100000, 1000000}
	if got := alternate(xs, 0); !slices.Equal(got, []int{1000, 100000, 1000000}) {
		t.Errorf("repeat 0: %v", got)
	}
	if got := alternate(xs, 1); !slices.Equal(got, []int{1000000, 100000, 1000}) {
		t.Errorf("repeat 1: %v", got)
	}
	if !slices.Equal(xs, []int{1000, 100000, 1000000}) {
		t.Errorf("alternate changed its input: %v", xs)
	}
}
