package analysis

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
)

func benchN(b *testing.B, count int) {
	gen, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: 5})
	require.NoError(b, err)
	traces := gen.Generate(count)
	tds := make([]ptrace.Traces, len(traces))
	spans := 0
	for i := range traces {
		tds[i] = agenttraffic.TraceToPdata(&traces[i])
		spans += tds[i].SpanCount()
	}
	an := New(DefaultConfig(), stalecache.New(100000))
	n := 0
	for b.Loop() {
		for _, td := range tds {
			q := an.Triage(td)
			if q.Clean {
				an.RememberClean(q)
			}
			an.Recycle(q)
		}
		n++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*spans), "ns/span")
}
func BenchmarkTriageHot10(b *testing.B)   { benchN(b, 10) }
func BenchmarkTriageCold3000(b *testing.B) { benchN(b, 3000) }
