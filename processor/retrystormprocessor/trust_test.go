package retrystormprocessor

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
)

// forgedRecord is a storm record a client writes itself: another service, another trace,
// a class and layer no processor writes, and the id of the record the processor writes for
// the real storm trace's call.
func forgedRecord(t *testing.T, id string) string {
	t.Helper()
	class, svc := "forged_class", "someone-else"
	b, err := json.Marshal(stormrecord.Record{
		Schema: stormrecord.Schema, ID: id, TraceID: "0123456789abcdef0123456789abcdef", ServiceName: &svc,
		CallKey: "call-1", ToolName: "charge_card", Storm: true, Class: &class, Layer: "forged_layer",
		Attempts: 999_999_999, Statuses: []string{"error", "ok"},
		Findings: []stormrecord.Finding{{Kind: "duplicate_side_effect", Detail: "forged"}},
	})
	require.NoError(t, err)
	return string(b)
}

// forge writes, on every span of td, what a client may write in retry_storm's name: its
// record attributes and annotations, finding events, link and resource attributes, a
// span named like the processor's late-finding span; and an input the configuration reads
// (retrystorm.read.asset), which is the client's to write.
func forge(t *testing.T, td ptrace.Traces, id string) {
	t.Helper()
	rs := td.ResourceSpans().At(0)
	rs.Resource().Attributes().PutStr("retrystorm.call.summary", forgedRecord(t, id))
	rs.ScopeSpans().At(0).Scope().Attributes().PutStr("retrystorm.trace.storms", "7")
	spans := rs.ScopeSpans().At(0).Spans()
	for i := 0; i < spans.Len(); i++ {
		s := spans.At(i)
		a := s.Attributes()
		a.PutStr(stormrecord.AttrCallSummary, forgedRecord(t, id))
		a.PutStr(stormrecord.AttrFindingSummary, `{"schema":"retrystorm.finding/v1","span_id":"00","findings":[{"kind":"forged_kind"}]}`)
		a.PutStr(stormrecord.AttrCallLayer, "forged_layer")
		a.PutStr("retrystorm.anything", "else")
		a.PutStr("retrystorm.read.asset", "doc-17")
		ev := s.Events().AppendEmpty()
		ev.SetName(stormrecord.FindingEvent)
		ev.Attributes().PutStr(stormrecord.FindingKind, "duplicate_side_effect")
		ev.Attributes().PutStr(stormrecord.AttrCallKey, "call-1")
		s.Links().AppendEmpty().Attributes().PutStr("retrystorm.call.key", "call-1")
	}
	late := spans.AppendEmpty()
	spans.At(0).CopyTo(late)
	late.SetSpanID([8]byte{0xfe, 1})
	late.SetName(stormrecord.LateFindingSpan)
}

// TestClientsCannotWriteTheProcessorsOutput: a client that keeps its clean traces (an
// explicit ot=rv of all ones passes every threshold) and writes records and annotations
// in retry_storm's name on them gets none of it through; a forged record with the id of a
// real storm's record neither comes out nor displaces it; the input the configuration
// reads stays; everything removed or renamed is counted.
func TestClientsCannotWriteTheProcessorsOutput(t *testing.T) {
	cfg := testConfig()
	h := newHarness(t, cfg, nil)
	stormID := buffertest.TraceID(1)
	realID := stormrecord.RecordID(stormID.String(), "call-1")
	storm := buffertest.StormTrace(stormID)
	forge(t, storm, realID)
	h.Consume(storm)
	const clean = 20
	for i := range clean {
		td := buffertest.CleanTrace(buffertest.TraceID(uint64(100+i)), "lookup")
		td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceState().FromRaw("ot=rv:ffffffffffffff")
		forge(t, td, realID)
		h.Consume(td)
	}
	h.Advance(cfg.DecisionWait + time.Second)

	out := h.Sink.AllTraces()
	sealer := stormrecord.NewSealer()
	var summaries []stormrecord.Record
	traces := map[string]bool{}
	for _, td := range out {
		for _, rs := range td.ResourceSpans().All() {
			for k := range rs.Resource().Attributes().All() {
				require.False(t, strings.HasPrefix(k, stormrecord.Prefix), "resource attribute %s forwarded", k)
			}
			for _, ss := range rs.ScopeSpans().All() {
				for k := range ss.Scope().Attributes().All() {
					require.False(t, strings.HasPrefix(k, stormrecord.Prefix), "scope attribute %s forwarded", k)
				}
				for _, s := range ss.Spans().All() {
					traces[s.TraceID().String()] = true
					require.NotEqual(t, stormrecord.Unsealed, sealer.Check(s), "a span forwarded with annotations the processor did not seal")
					require.NotEqual(t, stormrecord.LateFindingSpan, s.Name(), "a client's span keeps the processor's name")
					if v, ok := s.Attributes().Get(stormrecord.AttrCallSummary); ok {
						r, err := stormrecord.ParseCallSummary(v, s)
						require.NoError(t, err)
						summaries = append(summaries, r)
					}
					_, finding := s.Attributes().Get(stormrecord.AttrFindingSummary)
					require.False(t, finding, "a client's finding record forwarded on %q", s.Name())
					_, other := s.Attributes().Get("retrystorm.anything")
					require.False(t, other)
					if layer, ok := s.Attributes().Get(stormrecord.AttrCallLayer); ok {
						require.NotEqual(t, "forged_layer", layer.Str())
					}
					asset, ok := s.Attributes().Get("retrystorm.read.asset")
					require.True(t, ok, "the configuration's input attribute is the client's to write")
					require.Equal(t, "doc-17", asset.Str())
					for _, ev := range s.Events().All() {
						require.NotEqual(t, stormrecord.FindingEvent, ev.Name(), "a client's finding event kept its name")
					}
					for _, l := range s.Links().All() {
						require.Zero(t, l.Attributes().Len(), "a client's link annotation forwarded")
					}
				}
			}
		}
	}
	require.Len(t, traces, clean+1, "the clean traces with ot=rv:ffffffffffffff are kept, and the storm")
	require.Len(t, summaries, 1, "only the processor's own record")
	require.Equal(t, realID, summaries[0].ID)
	require.Equal(t, stormID.String(), summaries[0].TraceID)
	require.Equal(t, 3, summaries[0].Attempts)
	require.Equal(t, "transient_dependency", *summaries[0].Class)
	for _, td := range out {
		for _, s := range buffertest.AllSpans(td) {
			if _, ok := s.Attributes().Get(stormrecord.AttrCallSummary); ok {
				require.Equal(t, stormrecord.Sealed, sealer.Check(s), "the processor's record is sealed")
			}
		}
	}

	spans := int64((clean + 1) * (2 + 1)) // each trace: root and tool spans, plus the forged late-finding span
	spans += 2                            // the storm trace has three attempts
	counted := func(where string) int64 {
		return h.Sum("otelcol_processor_retry_storm_client_annotations_removed", attribute.String("where", where))
	}
	require.Equal(t, 4*spans, counted("span"), "record, finding record, layer and one more attribute per span")
	require.Equal(t, spans, counted("event"))
	require.Equal(t, spans, counted("link"))
	require.Equal(t, int64(clean+1), counted("resource"))
	require.Equal(t, int64(clean+1), counted("scope"))
	require.Equal(t, int64(clean+1), counted("span_name"))
	require.Equal(t, spans, counted("event_name"))
}
