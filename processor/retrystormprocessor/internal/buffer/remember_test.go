package buffer

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// cardNumber is a payload value the storm trace's tool is given and its late spans copy.
const cardNumber = "4111111111111111"

// cardStorm is a root and a charge_card call given cardNumber, failed then retried.
func cardStorm(id pcommon.TraceID) ptrace.Traces {
	td := buffertest.ChargeCardTrace(id, true, false)
	for _, s := range buffertest.AllSpans(td) {
		if _, ok := s.Attributes().Get("gen_ai.tool.call.arguments"); ok {
			s.Attributes().PutStr("gen_ai.tool.call.arguments", `{"card":"`+cardNumber+`","amount":42}`)
		}
	}
	return td
}

// copyingStragglers are late spans of trace id that copy cardNumber outside any tool span:
// an HTTP send's name and URL, a model's answer.
func copyingStragglers(id pcommon.TraceID, from uint64) ptrace.Traces {
	b := buffertest.Straggler(id)
	b.Numbered = from
	b.Span("POST /charge?card="+cardNumber, pcommon.SpanID{1}, 150, 250, map[string]any{
		"http.request.method": "POST", "url.full": "https://pay.example/charge?card=" + cardNumber,
	})
	b.Span("chat gpt-x", pcommon.SpanID{1}, 900, 950, map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.output.messages": `[{"role":"assistant","content":"charged ` + cardNumber + `"}]`,
	})
	return b.Traces
}

// forcedKeeps are n one-span clean traces whose client keeps them for itself (rv at its
// maximum), with an error status when withError.
func forcedKeeps(from, n uint64, withError bool) ptrace.Traces {
	td := ptrace.NewTraces()
	for i := from; i < from+n; i++ {
		b := buffertest.NewSpanBuilder(buffertest.TraceID(i))
		s := b.Span("GET /health", pcommon.SpanID{}, 0, 1, nil)
		s.TraceState().FromRaw("ot=rv:ffffffffffffff")
		if withError {
			s.Status().SetCode(ptrace.StatusCodeError)
		}
		b.Traces.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	}
	return td
}

// floodHarness is one shard remembering 10 kept decisions, logging to an observer.
func floodHarness(t *testing.T) (*harness, *observer.ObservedLogs) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.DecisionCache.KeptTraces = 10
	core, logs := observer.New(zap.WarnLevel)
	return newLoggedHarness(t, cfg, nil, zap.New(core), WithSynchronous()), logs
}

// A flood of clean traces their client keeps for itself forgets clean decisions only: the
// storm's late spans still find its decision and are scrubbed of its payload values.
func TestACleanFloodForgetsNoSignalDecision(t *testing.T) {
	h, logs := floodHarness(t)
	storm := buffertest.TraceID(1)
	h.Consume(cardStorm(storm))
	h.Advance(3 * time.Second)
	h.Consume(forcedKeeps(100, 50, false))
	h.Advance(3 * time.Second)
	assert.EqualValues(t, 50-9, h.Sum(metadata.MetricCacheEvictions, attribute.String("decision", "kept")))
	assert.Zero(t, h.Sum(metadata.MetricSignalEvictions))

	h.Consume(copyingStragglers(storm, 50))
	h.CatchUp()
	assert.EqualValues(t, 2, h.Sum(metadata.MetricLateSpans, attribute.String("decision", "kept")))
	assert.NotContains(t, buffertest.AllStrings(h.Sink.AllTraces()), cardNumber)
	assert.Zero(t, logs.Len())
	h.Conservation()
}

// Signal decisions pushed out all the same are counted and logged, and the later spans of
// their traces are dropped, not started over: a new trace would know none of the values to
// scrub and would record the call again.
func TestLateSpansOfAForgottenDecisionAreDropped(t *testing.T) {
	h, logs := floodHarness(t)
	storm := buffertest.TraceID(1)
	h.Consume(cardStorm(storm))
	h.Advance(3 * time.Second)
	h.Consume(forcedKeeps(100, 20, true))
	h.Advance(3 * time.Second)
	assert.EqualValues(t, 1, h.Sum(metadata.MetricSignalEvictions, attribute.String("reason", "storm")))
	assert.EqualValues(t, 10, h.Sum(metadata.MetricSignalEvictions, attribute.String("reason", "span_error")))
	spans := h.Sink.SpanCount()

	h.Consume(copyingStragglers(storm, 50))
	h.Consume(buffertest.LateAttempt(storm, "charge_card", "call-1", 2000))
	h.Advance(time.Minute)
	assert.Equal(t, spans, h.Sink.SpanCount(), "no late span of the forgotten trace is forwarded")
	assert.EqualValues(t, 3, h.Sum(metadata.MetricLateSpans, attribute.String("decision", "forgotten")))
	assert.EqualValues(t, 3, h.Sum(metadata.MetricSpansDropped, causeAttr(DropForgotten)))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricCalls), "the late attempt does not count the call again")
	assert.NotContains(t, buffertest.AllStrings(h.Sink.AllTraces()), cardNumber)

	lines := logs.FilterMessageSnippet("a kept signal decision was evicted").All()
	require.Len(t, lines, 1, "one line a second across shards")
	fields := lines[0].ContextMap()
	assert.Equal(t, storm.String(), fields["trace.id"])
	assert.Equal(t, "storm", fields["decision.reason"])
	h.Conservation()
}

// The cache is bounded in bytes too: a trace whose tool returned many values makes a large
// decision, and such decisions push out clean ones, then older signal ones, never past
// decision_cache.kept_bytes. One larger than its shard's bound per decision keeps its
// place without its values, and its late spans are dropped.
func TestKeptDecisionsAreBoundedInBytes(t *testing.T) {
	result := func(n int) string {
		var rows []string
		for i := range n {
			rows = append(rows, fmt.Sprintf("%q", fmt.Sprintf("entry %04d of the ledger", i)))
		}
		return "[" + strings.Join(rows, ",") + "]"
	}
	manyValues := func(id pcommon.TraceID, values int) ptrace.Traces {
		b := buffertest.NewSpanBuilder(id)
		root := b.Root()
		root.TraceState().FromRaw("ot=rv:ffffffffffffff")
		b.Tool(root.SpanID(), "read_ledger", "call-1", 100, false).Attributes().PutStr("gen_ai.tool.call.result", result(values))
		return b.Traces
	}
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.DecisionCache.KeptBytes = 512 << 10
	h := newHarness(t, cfg, nil, WithSynchronous())
	for i := range uint64(40) {
		h.Consume(manyValues(buffertest.TraceID(100+i), 256)) // about 18 kB of fingerprints each
	}
	h.Advance(3 * time.Second)
	s := h.buffer.shards[0]
	kept, _ := s.cache.Len()
	assert.LessOrEqual(t, s.cache.KeptBytes(), cfg.DecisionCache.KeptBytes)
	assert.Greater(t, s.cache.KeptBytes(), cfg.DecisionCache.KeptBytes*3/4)
	assert.Less(t, kept, 40)
	assert.EqualValues(t, 40-kept, h.Sum(metadata.MetricCacheEvictions, attribute.String("decision", "kept")))

	// 2,048 values in three forms: about 147 kB, over a quarter of the 512 KiB share.
	big := buffertest.TraceID(1)
	h.Consume(manyValues(big, 2048))
	h.Advance(3 * time.Second)
	kd, ok := s.cache.Kept(big)
	require.True(t, ok, "the decision keeps its place")
	assert.True(t, s.valuesForgotten(&kd))
	assert.True(t, kd.verdict.Payloads == nil, "the values are not remembered")
	h.Consume(buffertest.LateAttempt(big, "read_ledger", "call-2", 2000))
	h.CatchUp()
	assert.EqualValues(t, 1, h.Sum(metadata.MetricLateSpans, attribute.String("decision", "forgotten")))
	h.Conservation()
}
