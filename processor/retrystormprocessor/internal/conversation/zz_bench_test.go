package conversation

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
)

func BenchmarkZZSkim(b *testing.B) {
	gen, _ := agenttraffic.NewGenerator(agenttraffic.Config{Seed: 1})
	traces := gen.Generate(300)
	var trees []*grouping.Tree
	spans, jsonBytes, outBytes := 0, 0, 0
	for i := range traces {
		t := grouping.NewTree(agenttraffic.TraceToPdata(&traces[i]))
		trees = append(trees, t)
		spans += len(t.Nodes)
		for _, n := range t.Nodes {
			for k, v := range n.Span.Attributes().All() {
				if v.Type() == pcommon.ValueTypeStr && jsonContainer(v) {
					jsonBytes += len(v.Str())
					if !isInputKey(k) {
						outBytes += len(v.Str())
					}
				}
			}
		}
	}
	b.Logf("spans %d, json bytes/span %d, output json bytes/span %d", spans, jsonBytes/spans, outBytes/spans)
	rd := NewReader()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		for _, t := range trees {
			rd.Read(t, nil, Skim)
		}
		n++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*spans), "ns/span")
}
