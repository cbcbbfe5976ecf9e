package buffer

import (
	"cmp"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
)

// TestLateSpansAreMarkedAsInTime runs every real SDK capture twice: whole, and cut in two
// by the order its spans ended (the order an SDK exports them), the trace decided on the
// first half so that the second arrives late (a long run's later spans after its
// decision_wait). A late tool span carries the payload hashes
// the trace would have given it in time, and each late span carries the markers it would
// have carried in time: a late span's copy of a payload, of a late tool span's or of an
// earlier one's, joins its tool span the same way.
func TestLateSpansAreMarkedAsInTime(t *testing.T) {
	marker := regexp.MustCompile(`\[redacted:([0-9a-f]{64})\]`)
	hashKeys := []string{stormrecord.AttrArgsHash, stormrecord.AttrResultHash, stormrecord.AttrIdemHash}
	// run sends pieces, all but the last before the decision when late, and returns each
	// output span's hashes and markers by span id.
	type marks struct {
		hashes  map[string]string
		markers []string
		// followed is what following the model supplied (retrystorm.call.followed).
		followed map[string]bool
	}
	followedField := map[string]string{stormrecord.AttrArgsHash: "arguments", stormrecord.AttrResultHash: "result"}
	run := func(t *testing.T, pieces []ptrace.Traces, late bool) map[pcommon.SpanID]marks {
		cfg := testConfig()
		cfg.Sampling.CleanPercent = 100
		h := newHarness(t, cfg, nil)
		for i, td := range pieces {
			if late && i == len(pieces)-1 {
				h.Advance(cfg.DecisionWait + time.Second)
				require.Positive(t, h.Sink.SpanCount(), "the first pieces were not decided and kept")
			}
			sent := ptrace.NewTraces() // the processor redacts what it is sent in place
			td.CopyTo(sent)
			h.Consume(sent)
		}
		h.Advance(cfg.DecisionWait + time.Second)
		require.NoError(t, h.Shutdown(t.Context()))
		if late {
			require.Equal(t, int64(pieces[len(pieces)-1].SpanCount()), h.Sum("otelcol_processor_retry_storm_late_spans"))
		}
		out := map[pcommon.SpanID]marks{}
		for _, s := range buffertest.AllSpans(mergeTraces(h.Sink.AllTraces())) {
			m := marks{hashes: map[string]string{}, followed: map[string]bool{}}
			if v, ok := s.Attributes().Get(stormrecord.AttrFollowed); ok {
				for _, f := range v.Slice().All() {
					m.followed[f.Str()] = true
				}
			}
			for _, k := range hashKeys {
				if v, ok := s.Attributes().Get(k); ok {
					m.hashes[k] = v.Str()
				}
			}
			one := ptrace.NewTraces()
			s.CopyTo(one.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
			for _, mk := range marker.FindAllStringSubmatch(buffertest.AllStrings([]ptrace.Traces{one}), -1) {
				m.markers = append(m.markers, mk[1])
			}
			slices.Sort(m.markers)
			out[s.SpanID()] = m
		}
		return out
	}
	for _, name := range fixtures.CaptureNames() {
		t.Run(name, func(t *testing.T) {
			requests, _ := fixtures.LoadCapture(t, name)
			pieces := halvesByEnd(requests)
			whole := run(t, pieces, false)
			late := run(t, pieces, true)
			var lateIDs []pcommon.SpanID
			for _, s := range buffertest.AllSpans(pieces[len(pieces)-1]) {
				lateIDs = append(lateIDs, s.SpanID())
			}
			hashed, marked, followedOnly := 0, 0, 0
			for _, id := range lateIDs {
				w, l := whole[id], late[id]
				for k, v := range w.hashes {
					if w.followed[followedField[k]] {
						followedOnly++
						continue // late spans are not followed (README, "Late spans")
					}
					hashed++
					assert.Equal(t, v, l.hashes[k], "late span %s: %s", id, k)
				}
				marked += len(w.markers)
				assert.Equal(t, w.markers, l.markers, "late span %s: its markers", id)
			}
			t.Logf("%d late spans: %d hashes, %d markers compared", len(lateIDs), hashed, marked)
			if hashed+marked == 0 {
				// VoltAgent and the MCP Python SDK copy no payload into other spans, and their
				// tool spans' hashes come from following the model, which late spans are not:
				// in the trace sent whole, the late half carries nothing else to compare.
				t.Logf("%d hashes following supplied; nothing else to compare", followedOnly)
				return
			}
			require.Positive(t, hashed+marked, "no late span carries a hash or a marker: nothing was compared")
		})
	}
}

// halvesByEnd returns the spans of requests in two requests: those that ended first, half
// of them, and the rest, each under a copy of its resource and scope.
func halvesByEnd(requests []ptrace.Traces) []ptrace.Traces {
	type placed struct {
		rs   ptrace.ResourceSpans
		ss   ptrace.ScopeSpans
		span ptrace.Span
	}
	var all []placed
	for _, td := range requests {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, span := range ss.Spans().All() {
					all = append(all, placed{rs, ss, span})
				}
			}
		}
	}
	slices.SortStableFunc(all, func(a, b placed) int { return cmp.Compare(a.span.EndTimestamp(), b.span.EndTimestamp()) })
	halves := []ptrace.Traces{ptrace.NewTraces(), ptrace.NewTraces()}
	for i, p := range all {
		out := halves[i*2/len(all)].ResourceSpans().AppendEmpty()
		p.rs.Resource().CopyTo(out.Resource())
		oss := out.ScopeSpans().AppendEmpty()
		p.ss.Scope().CopyTo(oss.Scope())
		p.span.CopyTo(oss.Spans().AppendEmpty())
	}
	return halves
}
