package buffer

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

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/spanset"
)

// agentTraffic generates agent traces shaped like an OTel GenAI SDK's: an invoke_agent root,
// and per step a chat span, an execute_tool span with JSON arguments and result, and the
// tool's HTTP client span; one trace in ten holds a retried call (error, error, ok).
type agentTraffic struct {
	rnd   *rand.Rand
	next  uint64
	steps int
	// messages makes each chat span carry the conversation so far, tool calls and
	// responses included, in gen_ai.input.messages / gen_ai.output.messages, as the
	// Vercel AI SDK v7 records it.
	messages bool
}

var benchTools = []string{"search_docs", "lookup_order", "charge_card", "send_email", "get_weather", "create_ticket", "query_db", "fetch_url"}

func newAgentTraffic(seed uint64) *agentTraffic {
	return &agentTraffic{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), steps: 20}
}

// trace returns one trace of 61 spans (65 with a storm); without a root when rootless.
func (g *agentTraffic) trace(rootless bool) ptrace.Traces {
	g.next++
	b := buffertest.NewSpanBuilder(buffertest.TraceID(g.next))
	root := b.Root()
	root.Attributes().PutStr("gen_ai.conversation.id", fmt.Sprintf("conv-%d", g.next))
	storm := g.rnd.IntN(10) == 0
	at := int64(50)
	history := `{"role":"user","parts":[{"type":"text","content":"where is my order?"}]}`
	for step := range g.steps {
		chat := b.Span("chat gpt-5", root.SpanID(), at, at+400, map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-5",
			"gen_ai.usage.input_tokens": 800 + g.rnd.IntN(400), "gen_ai.usage.output_tokens": 40 + g.rnd.IntN(80),
		})
		chat.SetKind(ptrace.SpanKindClient)
		at += 420
		tool := benchTools[g.rnd.IntN(len(benchTools))]
		callID := fmt.Sprintf("call_%d_%d", g.next, step)
		tries := 1
		if storm && step == 3 {
			tries = 3
		}
		var args, result string
		for try := range tries {
			args, result = g.toolCall(b, root.SpanID(), tool, callID, at, try < tries-1)
			at += 250
		}
		if g.messages {
			call := `{"role":"assistant","parts":[{"type":"tool_call","id":"` + callID + `","name":"` + tool + `","arguments":` + args + `}]}`
			chat.Attributes().PutStr("gen_ai.input.messages", "["+history+"]")
			chat.Attributes().PutStr("gen_ai.output.messages", "["+call+"]")
			history += "," + call + `,{"role":"tool","parts":[{"type":"tool_call_response","id":"` + callID + `","response":` + result + `}]}`
		}
	}
	if rootless {
		buffertest.WithoutRoot(b.Traces)
	}
	return b.Traces
}

// toolCall adds one attempt and its HTTP send, and returns its arguments and result.
func (g *agentTraffic) toolCall(b *buffertest.SpanBuilder, parent pcommon.SpanID, tool, callID string, at int64, failed bool) (args, result string) {
	span := b.Tool(parent, tool, callID, at, failed)
	args = fmt.Sprintf(`{"query":"order %d status","limit":%d,"locale":"en-US"}`, g.rnd.IntN(1e6), 1+g.rnd.IntN(20))
	span.Attributes().PutStr("gen_ai.tool.call.arguments", args)
	result = `"failed"`
	if !failed {
		result = fmt.Sprintf(`{"items":[{"id":%d,"status":"shipped","eta":"2026-12-03"}],"total":%d}`, g.rnd.IntN(1e6), g.rnd.IntN(50))
		span.Attributes().PutStr("gen_ai.tool.call.result", result)
	}
	http := b.Span("GET", span.SpanID(), at+10, at+190, map[string]any{
		"http.request.method": "GET", "url.full": "https://api.internal/v1/" + tool, "http.response.status_code": 200,
		"server.address": "api.internal",
	})
	http.SetKind(ptrace.SpanKindClient)
	return args, result
}

func (g *agentTraffic) batch(n int, rootless bool) []ptrace.Traces {
	out := make([]ptrace.Traces, n)
	for i := range out {
		out[i] = g.trace(rootless)
	}
	return out
}

func newBenchBuffer(b *testing.B, shards int, opts ...Option) *testBuffer {
	return newBenchBufferWith(b, shards, func(*testSetup) {}, opts...)
}

// newBenchBufferWith is newBenchBuffer with configure applied to its configuration.
func newBenchBufferWith(b *testing.B, shards int, configure func(*testSetup), opts ...Option) *testBuffer {
	cfg := testConfig()
	configure(cfg)
	cfg.NumShards = shards
	cfg.DecisionWait = 24 * time.Hour // held traces stay held
	cfg.RootGrace = 0                 // a measured trace is decided when its root arrives
	cfg.MaxBufferedBytes = 16 << 30
	fixed := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	opts = append([]Option{WithClock(func() time.Time { return fixed })}, opts...)
	p := newTestBuffer(b, componenttest.NewNopTelemetrySettings(), cfg, consumertest.NewNop(), opts...)
	if err := p.Start(nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p
}

// hold buffers at least spans spans in rootless traces that stay undecided.
func hold(b *testing.B, p *testBuffer, g *agentTraffic, spans int) {
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
			p := newBenchBuffer(b, 1, WithSynchronous())
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

// BenchmarkKeptTraceRedaction measures a kept agent trace (every trace is kept here, at
// clean_percent 100) from ConsumeTraces to its decision with redaction off and on; the
// chat spans carry the conversation, tool calls and responses included, as the Vercel AI
// SDK v7 records it. The difference in ns/span is what redaction costs a kept span;
// dropped traces never reach it.
func BenchmarkKeptTraceRedaction(b *testing.B) {
	simTraces := agentsimTraces(b, 7, 512)
	for _, traffic := range []string{"conversation", "agentsim"} {
		for _, redact := range []bool{false, true} {
			b.Run(fmt.Sprintf("traffic=%s/redact=%v", traffic, redact), func(b *testing.B) {
				p := newBenchBufferWith(b, 1, func(cfg *testSetup) {
					cfg.Sampling.CleanPercent = 100
					cfg.Hashing.RedactPayloads = redact
				}, WithSynchronous())
				consume := func(td ptrace.Traces) {
					if err := p.ConsumeTraces(context.Background(), td); err != nil {
						b.Fatal(err)
					}
				}
				if traffic == "agentsim" {
					measureEach(b, simTraces, consume)
					return
				}
				g := newAgentTraffic(7)
				g.messages = true
				measure(b, g, consume)
			})
		}
	}
}

// measureEach feeds copies of traces round and round, the copy outside the timer, and
// reports ns per span.
func measureEach(b *testing.B, traces []ptrace.Traces, consume func(ptrace.Traces)) {
	var spans uint64
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		td := ptrace.NewTraces()
		traces[i%len(traces)].CopyTo(td)
		i++
		id := buffertest.TraceID(uint64(i) + 1<<40) // a new trace each time, never a late piece of an old one
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, s := range ss.Spans().All() {
					s.SetTraceID(id)
				}
			}
		}
		spans += uint64(td.SpanCount())
		b.StartTimer()
		consume(td)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(spans), "ns/span")
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
	p := newBenchBuffer(b, 0)
	g := newAgentTraffic(7)
	hold(b, p, g, 100_000)
	n := 0
	measure(b, g, func(td ptrace.Traces) {
		if err := p.ConsumeTraces(context.Background(), td); err != nil {
			b.Fatal(err)
		}
		if n++; n%64 == 0 {
			if err := p.CatchUp(context.Background()); err != nil {
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

// BenchmarkPackUnpack measures what holding a waiting trace compactly costs per span:
// pack (move into one request, encode as OTLP, compress) and unpack (decompress, decode,
// note every span again), on agentsim traces; B/span held is what pack leaves on the heap.
func BenchmarkPackUnpack(b *testing.B) {
	traces := agentsimTraces(b, 11, 64)
	sh := newBenchBuffer(b, 1, WithSynchronous()).shards[0]
	var spans, held int
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		td := ptrace.NewTraces()
		traces[i%len(traces)].CopyTo(td)
		i++
		pt := &testTrace{set: spanset.FromTraces(td)}
		spans += pt.set.Len()
		b.StartTimer()
		sh.pack(pt)
		held += len(pt.packed)
		sh.unpack(pt)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(spans), "ns/span")
	b.ReportMetric(float64(held)/float64(spans), "B/span-held")
}

// agentsimTraces is n traces of agentsim's default mix drawn with seed, as pdata.
func agentsimTraces(b *testing.B, seed uint64, n int) []ptrace.Traces {
	sim, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: seed})
	if err != nil {
		b.Fatal(err)
	}
	traces := make([]ptrace.Traces, n)
	for i := range traces {
		t := sim.Next()
		traces[i] = agenttraffic.TraceToPdata(&t)
	}
	return traces
}
