package retrystormprocessor

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
)

// assetAttributes are where agentsim names an asset outside any payload.
var assetAttributes = []string{"retrystorm.answer.cited_assets", "retrystorm.read.asset"}

// TestSplitTracePartsRedactWhatEachHolds decides the two parts of one agentsim trace, cut
// as a tier-2 restart cuts it (spans go out by end time), in two processors, as the two
// processes of a restarted instance do. Neither part's records carry a payload value of the
// trace. The answer in the second part cites an asset only the first part read, so the
// second part is flagged unbacked_citation, and its detail names the asset in the clear:
// the first part's read took it as its argument, a payload, but the second part holds no
// span that says so (README.md, "Scaling out").
func TestSplitTracePartsRedactWhatEachHolds(t *testing.T) {
	tr, asset, first, rest := citedAssetSplit(t)
	require.True(t, slices.ContainsFunc(first, func(s agenttraffic.Span) bool {
		args, ok := s.Attr("gen_ai.tool.call.arguments")
		return ok && strings.Contains(args.Str, `"`+asset+`"`)
	}), "a tool span of the first part took %s as its argument", asset)
	require.NotEmpty(t, tr.Truth.Secrets)
	whole := decideRecords(t, &tr, tr.Spans)
	firstRecords := decideRecords(t, &tr, first)
	restRecords := decideRecords(t, &tr, rest)

	for what, records := range map[string]string{"whole": whole, "first part": firstRecords, "rest": restRecords} {
		for _, secret := range tr.Truth.Secrets {
			assert.NotContains(t, records, secret, "the records of the %s carry a payload value", what)
		}
	}
	assert.NotContains(t, firstRecords, asset, "the first part's records")
	assert.Contains(t, restRecords, `answer cites \"`+asset+`\" with no successful read in the trace`,
		"the rest's unbacked_citation names the asset its first part read")
}

// citedAssetSplit finds an OTel GenAI trace whose answer cites an asset a tool span took
// as its argument, and cuts it by end time after the last span that carries the asset
// other than as an asset name: the rest holds the answer and nothing else naming it.
func citedAssetSplit(t *testing.T) (tr agenttraffic.Trace, asset string, first, rest []agenttraffic.Span) {
	t.Helper()
	gen, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: 11, Shapes: []agenttraffic.Shape{agenttraffic.ShapeGenAI},
		Scenarios: agenttraffic.ScenarioWeights{agenttraffic.ScenarioClean: 1}})
	require.NoError(t, err)
	for _, tr := range gen.Generate(20) {
		root := tr.Root()
		if root == nil {
			continue
		}
		cited, ok := root.Attr("retrystorm.answer.cited_assets")
		if !ok || len(cited.Strs) == 0 {
			continue
		}
		asset := cited.Strs[0]
		spans := slices.Clone(tr.Spans)
		slices.SortStableFunc(spans, func(a, b agenttraffic.Span) int { return a.End.Compare(b.End) })
		last := -1
		for i := range spans {
			if carriesAsPayload(&spans[i], asset) {
				last = i
			}
		}
		if last >= 0 && last+1 < len(spans) && spans[last].End.Before(spans[last+1].End) {
			return tr, asset, spans[:last+1], spans[last+1:]
		}
	}
	t.Fatal("no trace in 20 whose answer cites an asset a tool span took as its argument")
	return agenttraffic.Trace{}, "", nil, nil
}

// carriesAsPayload reports a span holding v in an attribute or event other than those
// naming assets.
func carriesAsPayload(s *agenttraffic.Span, v string) bool {
	td := agenttraffic.TraceToPdata(&agenttraffic.Trace{Spans: []agenttraffic.Span{*s}})
	for _, span := range buffertest.AllSpans(td) {
		for _, k := range assetAttributes {
			span.Attributes().Remove(k)
		}
	}
	return strings.Contains(buffertest.AllStrings([]ptrace.Traces{td}), v)
}

// decideRecords sends spans of tr to a processor of its own, shuts it down (which decides
// what it holds, as SIGTERM does) and returns the records it handed on, as the exporter
// reads them.
func decideRecords(t *testing.T, tr *agenttraffic.Trace, spans []agenttraffic.Span) string {
	t.Helper()
	part := *tr
	part.Spans = spans
	h := newHarness(t, testConfig(), nil)
	h.Consume(agenttraffic.TraceToPdata(&part))
	h.Advance(time.Second)
	require.NoError(t, h.Shutdown(context.Background()))
	var records []string
	for _, td := range h.Sink.AllTraces() {
		for _, s := range buffertest.AllSpans(td) {
			for _, k := range []string{stormrecord.AttrCallSummary, stormrecord.AttrFindingSummary} {
				if v, ok := s.Attributes().Get(k); ok {
					records = append(records, v.Str())
				}
			}
		}
	}
	return strings.Join(records, "\n")
}
