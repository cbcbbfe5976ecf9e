package retrystormprocessor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// agentTraffic generates agent traces shaped like an OTel GenAI SDK's: an invoke_agent root,
// and per step a chat span, an execute_tool span with JSON arguments and result, and the
// tool's HTTP client span; one trace in ten holds a retried call (error, error, ok).
type agentTraffic struct {
	rnd   *rand.Rand
	next  uint64
	steps int
}

var benchTools = []string{"search_docs", "lookup_order", "charge_card", "send_email", "get_weather", "create_ticket", "query_db", "fetch_url"}

func newAgentTraffic(seed uint64) *agentTraffic {
	return &agentTraffic{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), steps: 20}
}

// trace returns one trace of 61 spans (65 with a storm); without a root when rootless.
func (g *agentTraffic) trace(rootless bool) ptrace.Traces {
	g.next++
	b := newSpanBuilder(traceID(g.next))
	root := b.root()
	root.Attributes().PutStr("gen_ai.conversation.id", fmt.Sprintf("conv-%d", g.next))
	storm := g.rnd.IntN(10) == 0
	at := int64(50)
	for step := range g.steps {
		chat := b.span("chat gpt-5", root.SpanID(), at, at+400, map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-5",
			"gen_ai.usage.input_tokens": 800 + g.rnd.IntN(400), "gen_ai.usage.output_tokens": 40 + g.rnd.IntN(80),
		})
		chat.SetKind(ptrace.SpanKindClient)
		at += 420
		tool := benchTools[g.rnd.IntN(len(benchTools))]
		tries := 1
		if storm && step == 3 {
			tries = 3
		}
		for try := range tries {
			g.toolCall(b, root.SpanID(), tool, fmt.Sprintf("call_%d_%d", g.next, step), at, try < tries-1)
			at += 250
		}
	}
	if rootless {
		withoutRoot(b.td)
	}
	return b.td
}

func (g *agentTraffic) toolCall(b *spanBuilder, parent pcommon.SpanID, tool, callID string, at int64, failed bool) {
	span := b.tool(parent, tool, callID, at, failed)
	span.Attributes().PutStr("gen_ai.tool.call.arguments", fmt.Sprintf(`{"query":"order %d status","limit":%d,"locale":"en-US"}`, g.rnd.IntN(1e6), 1+g.rnd.IntN(20)))
	if !failed {
		span.Attributes().PutStr("gen_ai.tool.call.result", fmt.Sprintf(`{"items":[{"id":%d,"status":"shipped","eta":"2026-12-03"}],"total":%d}`, g.rnd.IntN(1e6), g.rnd.IntN(50)))
	}
	http := b.span("GET", span.SpanID(), at+10, at+190, map[string]any{
		"http.request.method": "GET", "url.full": "https://api.internal/v1/" + tool, "http.response.status_code": 200,
		"server.address": "api.internal",
	})
	http.SetKind(ptrace.SpanKindClient)
}

func (g *agentTraffic) batch(n int, rootless bool) []ptrace.Traces {
	out := make([]ptrace.Traces, n)
	for i := range out {
		out[i] = g.trace(rootless)
	}
	return out
}

func newBenchProcessor(b *testing.B, shards int, opts ...option) *retryStormProcessor {
	cfg := createDefaultConfig().(*Config)
	cfg.NumShards = shards
	cfg.DecisionWait = 24 * time.Hour // held traces stay held
	cfg.RootGrace = 0                 // a measured trace is decided when its root arrives
	cfg.MaxBufferedBytes = 16 << 30
	fixed := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	opts = append([]option{withClock(func() time.Time { return fixed })}, opts...)
	p, err := newRetryStormProcessor(processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop(), opts...)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p
}

// hold buffers at least spans spans in rootless traces that stay undecided.
func hold(b *testing.B, p *retryStormProcessor, g *agentTraffic, spans int) {
	for held := 0; held < spans; {
		td := g.trace(true)
		held += td.SpanCount()
		if err := p.ConsumeTraces(context.Background(), td); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConsumeTracesToDecision measures one complete agent trace from ConsumeTraces to
// its decision (analysis, sampling, annotation, forwarding) on one synchronous shard, while
// other traces hold 1k, 100k or 1M spans in the buffer.
func BenchmarkConsumeTracesToDecision(b *testing.B) {
	for _, held := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("buffered=%d", held), func(b *testing.B) {
			p := newBenchProcessor(b, 1, withSynchronous())
			g := newAgentTraffic(uint64(held))
			hold(b, p, g, held)
			measure(b, g, func(td ptrace.Traces) {
				if err := p.ConsumeTraces(context.Background(), td); err != nil {
					b.Fatal(err)
				}
			})
			if _, traces, _ := p.buffered(); traces != int64(len(p.shards[0].traces)) || p.shards[0].spans < int64(held) {
				b.Fatalf("held traces were decided: %d spans left", p.shards[0].spans)
			}
		})
	}
}

// measure feeds pre-generated traces to consume and reports per-span figures; generation
// is excluded from both the timer and the allocation counts.
func measure(b *testing.B, g *agentTraffic, consume func(ptrace.Traces)) {
	var spans, genBytes, genAllocs uint64
	var before, after runtime.MemStats
	pool := g.batch(256, false)
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	runtime.ReadMemStats(&before)
	for b.Loop() {
		if len(pool) == 0 {
			b.StopTimer()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			pool = g.batch(256, false)
			runtime.ReadMemStats(&m1)
			genBytes += m1.TotalAlloc - m0.TotalAlloc
			genAllocs += m1.Mallocs - m0.Mallocs
			b.StartTimer()
		}
		td := pool[0]
		pool = pool[1:]
		spans += uint64(td.SpanCount())
		consume(td)
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(spans), "ns/span")
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc-genBytes)/float64(spans), "B/span")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs-genAllocs)/float64(spans), "allocs/span")
}

// BenchmarkConsumeTracesSharded runs the shard goroutines (GOMAXPROCS of them) with 100k
// spans held; the timed loop waits for the shards every 64 traces, so decisions are timed.
func BenchmarkConsumeTracesSharded(b *testing.B) {
	p := newBenchProcessor(b, 0)
	g := newAgentTraffic(7)
	hold(b, p, g, 100_000)
	n := 0
	measure(b, g, func(td ptrace.Traces) {
		if err := p.ConsumeTraces(context.Background(), td); err != nil {
			b.Fatal(err)
		}
		if n++; n%64 == 0 {
			if err := p.settle(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCompactAttributes measures what ingest spends compacting buffered spans'
// attributes (keyTable), per span.
func BenchmarkCompactAttributes(b *testing.B) {
	g := newAgentTraffic(13)
	kt := newKeyTable()
	gen := func() []ptrace.Traces { return g.batch(64, false) }
	pool := gen()
	spans := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if len(pool) == 0 {
			b.StopTimer()
			pool = gen()
			b.StartTimer()
		}
		td := pool[0]
		pool = pool[1:]
		for _, s := range tracespans.All(td) {
			spans++
			kt.compact(s.Attributes())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(spans), "ns/span")
}
