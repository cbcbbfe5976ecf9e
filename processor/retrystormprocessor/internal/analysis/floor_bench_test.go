package analysis

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// BenchmarkFloorTouchEveryAttribute is the cost of reading the trace at all, the peer the
// analysis is measured against in the same run.
func BenchmarkFloorTouchEveryAttribute(b *testing.B) {
	tb := agentTrace(1)
	spans := tb.Traces.SpanCount()
	sink := 0
	b.ReportAllocs()
	for b.Loop() {
		for _, rs := range tb.Traces.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, s := range ss.Spans().All() {
					sink += len(s.Name()) + int(s.SpanID()[0])
					for k, v := range s.Attributes().All() {
						sink += len(k)
						if v.Type() == pcommon.ValueTypeStr {
							sink += len(v.Str())
						}
					}
				}
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans), "ns/span")
	_ = sink
}
