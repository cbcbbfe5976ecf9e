package sample

import (
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
)

// FuzzTraceState feeds arbitrary tracestate to the decision and to Stamp: neither may panic,
// a kept probabilistic decision never goes below an incoming consistent threshold, and a
// stamped tracestate parses and carries a threshold no lower than the one asked for.
func FuzzTraceState(f *testing.F) {
	for _, seed := range []string{"", "ot=th:8", "ot=th:fc;rv:ffffffffffffff", "vendor=a,ot=th:0", "ot=th:", "ot=rv:zz", "a=b,c=d,ot=th:fff"} {
		f.Add(seed, uint64(0x90000000000000))
	}
	policy, err := NewPolicy(DefaultConfig())
	if err != nil {
		f.Fatal(err)
	}
	five, _ := PercentToThreshold(5)
	f.Fuzz(func(t *testing.T, ts string, rnd uint64) {
		var id [16]byte
		for i := range 8 {
			id[15-i] = byte(rnd >> (8 * i))
		}
		d := policy.Decide(Input{TraceID: id, TraceState: ts})
		if d.Keep && sampling.ThresholdLessThan(d.Threshold, five) {
			t.Fatalf("clean trace kept below the configured threshold: %v", d.Threshold.TValue())
		}
		out, err := Stamp(ts, five)
		if err != nil {
			if out != ts {
				t.Fatalf("failed stamp changed the tracestate: %q -> %q", ts, out)
			}
			return
		}
		parsed, err := sampling.NewW3CTraceState(out)
		if err != nil {
			t.Fatalf("stamped tracestate %q does not parse: %v", out, err)
		}
		got, ok := parsed.OTelValue().TValueThreshold()
		if !ok || sampling.ThresholdLessThan(got, five) {
			t.Fatalf("stamped tracestate %q lowers the threshold", out)
		}
	})
}
