//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// checkSummaries holds the storm summary file to the truth: one record per expected record
// (storms, failed calls, calls with findings: the exporter's include [storm, failure,
// finding]) with the expected content, nothing for clean calls, each id once, no secret.
func checkSummaries(t *testing.T, truth []agenttraffic.Truth, records []stormrecord.Record, raw []byte) {
	byTrace := map[string][]*stormrecord.Record{}
	ids := map[string]bool{}
	for i := range records {
		r := &records[i]
		if ids[r.ID] {
			t.Errorf("record id %s written twice (trace %s, call %s)", r.ID, r.TraceID, r.CallKey)
		}
		ids[r.ID] = true
		if r.Schema != stormrecord.Schema {
			t.Errorf("record %s: schema %q, want %q", r.ID, r.Schema, stormrecord.Schema)
		}
		if want := stormrecord.RecordID(r.TraceID, r.CallKey); r.ID != want {
			t.Errorf("record %s: id is not derived from trace id and call key (want %s)", r.ID, want)
		}
		if r.ServiceName == nil || *r.ServiceName != agentService {
			t.Errorf("record %s: service_name %v, want %s", r.ID, deref(r.ServiceName), agentService)
		}
		byTrace[r.TraceID] = append(byTrace[r.TraceID], r)
	}
	matched := map[*stormrecord.Record]bool{}
	expected := 0
	for _, tr := range truth {
		for _, want := range tr.Records {
			expected++
			got := findRecord(byTrace[tr.TraceID], want, matched)
			if got == nil {
				t.Errorf("trace %s (%s, %s): no summary record for call %s",
					tr.TraceID, tr.Scenario, tr.Shape, callName(want))
				continue
			}
			matched[got] = true
			for _, d := range recordDiffs(got, want) {
				t.Errorf("trace %s (%s, %s), call %s: %s", tr.TraceID, tr.Scenario, tr.Shape, callName(want), d)
			}
		}
	}
	for _, hit := range findSecrets(truth, raw) {
		t.Errorf("trace %s (%s): the summary file holds the raw payload %q", hit.tr.TraceID, hit.tr.Scenario, hit.secret)
	}
	for i := range records {
		if r := &records[i]; !matched[r] {
			t.Errorf("record %s (trace %s, call %s, tool %s, storm %v) matches no call of the truth: a clean call was reported",
				r.ID, r.TraceID, r.CallKey, r.ToolName, r.Storm)
		}
	}
	t.Logf("%d summary records, %d expected", len(records), expected)
}

// checkFindingRecords holds the finding records to the truth: every injected
// unbacked_citation is in the finding record of its trace's root span (agentsim's answer
// span), with the stable id, and no trace without one has a finding record. sent, the
// traces as sent, may be nil: the span is then not checked.
func checkFindingRecords(t *testing.T, truth []agenttraffic.Truth, records []stormrecord.FindingRecord, sent map[string]*agenttraffic.Trace) {
	byTrace := map[string][]*stormrecord.FindingRecord{}
	ids := map[string]bool{}
	for i := range records {
		r := &records[i]
		if ids[r.ID] {
			t.Errorf("finding record id %s written twice (trace %s, span %s)", r.ID, r.TraceID, r.SpanID)
		}
		ids[r.ID] = true
		if want := stormrecord.FindingRecordID(r.TraceID, r.SpanID); r.ID != want {
			t.Errorf("finding record %s: id is not derived from trace id and span id (want %s)", r.ID, want)
		}
		if r.ServiceName == nil || *r.ServiceName != agentService {
			t.Errorf("finding record %s: service_name %v, want %s", r.ID, deref(r.ServiceName), agentService)
		}
		byTrace[r.TraceID] = append(byTrace[r.TraceID], r)
	}
	injected := 0
	for i := range truth {
		tr := &truth[i]
		want := unbackedCitations(tr)
		injected += want
		got := byTrace[tr.TraceID]
		delete(byTrace, tr.TraceID)
		if want == 0 {
			if len(got) > 0 {
				t.Errorf("trace %s (%s): %d finding records, the truth injected no unbacked citation", tr.TraceID, tr.Scenario, len(got))
			}
			continue
		}
		if len(got) != 1 {
			t.Errorf("trace %s (%s): %d finding records, want 1 for its %d unbacked citations", tr.TraceID, tr.Scenario, len(got), want)
			continue
		}
		r := got[0]
		if sent != nil {
			if root := sent[tr.TraceID].Root(); root == nil || root.ID.String() != r.SpanID {
				t.Errorf("trace %s (%s): finding record on span %s (%s), want the answer (root) span", tr.TraceID, tr.Scenario, r.SpanID, r.SpanName)
			}
		}
		kinds := 0
		for _, f := range r.Findings {
			if f.Kind == string(agenttraffic.FindingUnbackedCitation) {
				kinds++
			} else {
				t.Errorf("trace %s: finding record holds a %s finding, which belongs to a call", tr.TraceID, f.Kind)
			}
		}
		if kinds != want {
			t.Errorf("trace %s (%s): %d unbacked_citation findings recorded, %d injected", tr.TraceID, tr.Scenario, kinds, want)
		}
	}
	for id, rs := range byTrace {
		t.Errorf("trace %s: %d finding records, but agentsim sent no such trace", id, len(rs))
	}
	t.Logf("%d finding records for %d injected unbacked citations", len(records), injected)
}

// findRecord picks the unmatched record of the call: by call key, or for shapes without
// call ids (the processor then derives a fallback key) by its attempt span ids.
func findRecord(candidates []*stormrecord.Record, want agenttraffic.ExpectedRecord, matched map[*stormrecord.Record]bool) *stormrecord.Record {
	for _, r := range candidates {
		if matched[r] {
			continue
		}
		if want.CallKey != "" && r.CallKey == want.CallKey ||
			want.CallKey == "" && sameSet(r.AttemptSpanIDs, want.AttemptSpanIDs) {
			return r
		}
	}
	return nil
}

// recordDiffs lists how a record departs from the expected one.
func recordDiffs(got *stormrecord.Record, want agenttraffic.ExpectedRecord) []string {
	var out []string
	check := func(field string, g, w any) {
		if fmt.Sprint(g) != fmt.Sprint(w) {
			out = append(out, fmt.Sprintf("%s is %v, want %v", field, g, w))
		}
	}
	check("tool_name", got.ToolName, want.Tool)
	check("storm", got.Storm, want.Storm)
	check("class", deref(got.Class), string(want.Class))
	check("layer", got.Layer, string(want.Layer))
	check("layers", got.Layers, want.Layers)
	check("attempts", got.Attempts, want.Attempts)
	check("statuses", got.Statuses, want.Statuses)
	check("incomplete_attempts", got.IncompleteAttempts, want.IncompleteAttempts)
	check("attempt_span_ids", got.AttemptSpanIDs, want.AttemptSpanIDs)
	var kinds []string
	for _, f := range got.Findings {
		kinds = append(kinds, f.Kind)
	}
	var wantKinds []string
	for _, f := range want.Findings {
		wantKinds = append(wantKinds, string(f))
	}
	slices.Sort(kinds)
	slices.Sort(wantKinds)
	check("finding kinds", kinds, wantKinds)
	return out
}

// checkBackend holds what the backend received to the truth: exactly the traces a correct
// retry_storm keeps (every signal trace, and the clean traces the consistent-sampling rule
// selects), each whole and annotated, failed-result attempts remapped, no raw payload. It returns
// the number of remapped spans it saw.
func checkBackend(t *testing.T, truth []agenttraffic.Truth, want expectation, sent map[string]*agenttraffic.Trace,
	backend map[string]*backendTrace, th sampling.Threshold) int {
	remapped, wantRemapped := 0, 0
	for _, tr := range truth {
		bt := backend[tr.TraceID]
		if !want.kept[tr.TraceID] {
			if bt != nil {
				t.Errorf("trace %s (%s, reason %s) reached the backend; the consistent rule drops it", tr.TraceID, tr.Scenario, tr.Reason)
			}
			continue
		}
		if bt == nil {
			t.Errorf("trace %s (%s, %s, reason %s) never reached the backend", tr.TraceID, tr.Scenario, tr.Shape, tr.Reason)
			continue
		}
		checkKeptTrace(t, &tr, bt, th)
		r, w := checkRemaps(t, &tr, bt, sent[tr.TraceID])
		remapped += r
		wantRemapped += w
		checkNoSecrets(t, &tr, bt)
	}
	for id := range backend {
		if _, ok := sent[id]; !ok {
			t.Errorf("the backend received trace %s, which agentsim never sent", id)
		}
	}
	if wantRemapped == 0 {
		t.Error("no kept attempt carried a failed result over a non-error status: the remap went untested")
	}
	t.Logf("backend: %d traces, %d failed-result attempts remapped (%d expected)", len(backend), remapped, wantRemapped)
	return remapped
}

// checkKeptTrace: the trace is whole, its root carries the sampling reason and trace
// totals, clean traces carry their threshold in tracestate, and every attempt of a storm
// carries its call key.
func checkKeptTrace(t *testing.T, tr *agenttraffic.Truth, bt *backendTrace, th sampling.Threshold) {
	t.Helper()
	where := fmt.Sprintf("trace %s (%s, %s)", tr.TraceID, tr.Scenario, tr.Shape)
	if len(bt.spans) != tr.Spans {
		t.Errorf("%s: the backend has %d spans, agentsim sent %d", where, len(bt.spans), tr.Spans)
	}
	if !bt.hasRoot {
		t.Errorf("%s: the backend has no root span", where)
		return
	}
	if got := strAttr(bt.root, stormrecord.AttrSampling); got != string(tr.Reason) {
		t.Errorf("%s: root %s = %q, want %q", where, stormrecord.AttrSampling, got, tr.Reason)
	}
	if got, ok := bt.root.Attributes().Get(stormrecord.AttrTraceStorms); !ok || got.Int() != int64(tr.Storms) {
		t.Errorf("%s: root %s = %v, want %d", where, stormrecord.AttrTraceStorms, got.AsRaw(), tr.Storms)
	}
	// Probabilistic keeps carry their threshold; traces kept for a signal at 100% do not.
	wantTh := ""
	if tr.Reason == agenttraffic.ReasonClean {
		wantTh = th.TValue()
	}
	for _, span := range bt.spans {
		if got := otelThreshold(span.TraceState().AsRaw()); got != wantTh {
			t.Errorf("%s: span %s tracestate %q, want threshold %q", where, span.SpanID(), span.TraceState().AsRaw(), wantTh)
			break
		}
	}
	for _, rec := range tr.Records {
		if !rec.Storm {
			continue
		}
		key := ""
		for _, id := range rec.AttemptSpanIDs {
			span, ok := bt.spans[id]
			if !ok {
				t.Errorf("%s: attempt %s of storm %s is missing", where, id, callName(rec))
				continue
			}
			got := strAttr(span, stormrecord.AttrCallKey)
			switch {
			case got == "":
				t.Errorf("%s: attempt %s of storm %s has no %s", where, id, callName(rec), stormrecord.AttrCallKey)
			case rec.CallKey != "" && got != rec.CallKey:
				t.Errorf("%s: attempt %s has %s %q, want %q", where, id, stormrecord.AttrCallKey, got, rec.CallKey)
			case key != "" && got != key:
				t.Errorf("%s: attempts of storm %s carry two call keys, %q and %q", where, callName(rec), key, got)
			}
			key = got
			if v, ok := span.Attributes().Get(stormrecord.AttrCallStorm); !ok || !v.Bool() {
				t.Errorf("%s: attempt %s of storm %s lacks %s=true", where, id, callName(rec), stormrecord.AttrCallStorm)
			}
		}
	}
}

// checkRemaps: an attempt sent with a failure in its result (an MCP isError result, or a
// tool_status failure value such as Strands' gen_ai.tool.status "error": sentIsError) over
// a status that was not ERROR arrives with status ERROR and retrystorm.status.remapped=true;
// no other span is marked remapped. It returns the remapped spans seen and expected.
func checkRemaps(t *testing.T, tr *agenttraffic.Truth, bt *backendTrace, sent *agenttraffic.Trace) (seen, expected int) {
	t.Helper()
	attempts := map[string]bool{}
	for _, rec := range tr.Records {
		for _, id := range rec.AttemptSpanIDs {
			attempts[id] = true
		}
	}
	for _, s := range sent.Spans {
		id := s.ID.String()
		span, ok := bt.spans[id]
		if !ok {
			continue
		}
		flagged := sentIsError(&s)
		v, marked := span.Attributes().Get(stormrecord.AttrStatusRemap)
		marked = marked && v.Bool()
		if marked {
			seen++
		}
		switch {
		case attempts[id] && flagged && s.Status.Code != agenttraffic.StatusError:
			expected++
			if !marked || span.Status().Code() != ptrace.StatusCodeError {
				t.Errorf("trace %s (%s, %s): attempt %s reported a failure in its result: status %s, %s=%v; want ERROR, true",
					tr.TraceID, tr.Scenario, tr.Shape, id, span.Status().Code(), stormrecord.AttrStatusRemap, marked)
			}
		case marked && !flagged:
			t.Errorf("trace %s (%s, %s): span %s %q is marked remapped but its result never reported a failure",
				tr.TraceID, tr.Scenario, tr.Shape, id, s.Name)
		}
	}
	return seen, expected
}

// checkNoSecrets: no raw payload string the trace carried survives anywhere in what the
// backend received of it.
func checkNoSecrets(t *testing.T, tr *agenttraffic.Truth, bt *backendTrace) {
	t.Helper()
	if len(tr.Secrets) == 0 {
		return
	}
	check := func(span *ptrace.Span, where, s string) {
		for _, secret := range tr.Secrets {
			if !strings.Contains(s, secret) {
				continue
			}
			name := "the resource"
			if span != nil {
				name = fmt.Sprintf("span %s %q", span.SpanID(), span.Name())
			}
			t.Errorf("trace %s (%s, %s): %s %s holds the raw payload %q", tr.TraceID, tr.Scenario, tr.Shape, name, where, secret)
		}
	}
	for _, span := range bt.spans {
		for _, l := range spanLocated(span) {
			check(&span, l.where, l.text)
		}
	}
	for _, l := range bt.resource {
		check(nil, l.where, l.text)
	}
}

// secretHit is a truth's raw payload value found in a text.
type secretHit struct {
	secret string
	tr     *agenttraffic.Truth
}

// findSecrets finds every raw payload value of truth in raw, once each, in one pass: the
// values are indexed by their first 8 bytes, so the pass costs a map lookup a byte rather
// than a search of the whole text a value (an overload run's file and thousands of values).
func findSecrets(truth []agenttraffic.Truth, raw []byte) []secretHit {
	const k = 8
	index := map[string][]secretHit{}
	var hits []secretHit
	for i := range truth {
		for _, secret := range truth[i].Secrets {
			if len(secret) < k {
				if bytes.Contains(raw, []byte(secret)) {
					hits = append(hits, secretHit{secret, &truth[i]})
				}
				continue
			}
			index[secret[:k]] = append(index[secret[:k]], secretHit{secret, &truth[i]})
		}
	}
	found := map[secretHit]bool{}
	for i := 0; i+k <= len(raw); i++ {
		for _, c := range index[string(raw[i:i+k])] {
			if !found[c] && bytes.HasPrefix(raw[i:], []byte(c.secret)) {
				found[c] = true
				hits = append(hits, c)
			}
		}
	}
	return hits
}

// otelThreshold returns the th value of the `ot` entry of a W3C tracestate, or "".
func otelThreshold(tracestate string) string {
	for _, member := range strings.Split(tracestate, ",") {
		ot, ok := strings.CutPrefix(strings.TrimSpace(member), "ot=")
		if !ok {
			continue
		}
		for _, field := range strings.Split(ot, ";") {
			if th, ok := strings.CutPrefix(field, "th:"); ok {
				return th
			}
		}
	}
	return ""
}

func strAttr(span ptrace.Span, key string) string {
	v, ok := span.Attributes().Get(key)
	if !ok {
		return ""
	}
	return v.AsString()
}

func callName(rec agenttraffic.ExpectedRecord) string {
	if rec.CallKey != "" {
		return fmt.Sprintf("%s (%s)", rec.CallKey, rec.Tool)
	}
	return fmt.Sprintf("%v (%s, no call id)", rec.AttemptSpanIDs, rec.Tool)
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func deref[T any](p *T) any {
	if p == nil {
		return ""
	}
	return *p
}

// findSecrets finds each value wherever it sits (first, last, overlapping another), once,
// and nothing that only shares a prefix with one.
func TestFindSecrets(t *testing.T) {
	truth := []agenttraffic.Truth{
		{TraceID: "a", Secrets: []string{"4111111111111111", "DE89370400440532013000", "short"}},
		{TraceID: "b", Secrets: []string{"41111111-not-here", "jane.doe@example.com"}},
	}
	raw := []byte("4111111111111111 x DE8937040044053201300 jane.doe@example.com jane.doe@example.com shor")
	var got []string
	for _, h := range findSecrets(truth, raw) {
		got = append(got, h.tr.TraceID+":"+h.secret)
	}
	want := []string{"a:4111111111111111", "b:jane.doe@example.com"}
	if !sameSet(got, want) {
		t.Fatalf("found %v, want %v", got, want)
	}
}
