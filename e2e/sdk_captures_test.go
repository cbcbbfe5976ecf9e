//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/tracespans"
)

// captureDelivery is one capture sent to the collector one way.
type captureDelivery struct {
	name, how string
	traceID   string
	requests  []ptrace.Traces
	truth     fixtures.CaptureTruth
}

// TestRealSDKCapturesThroughTheCollector sends every trace captured from a real agent SDK
// (testdata/sdk) through the built distribution with its default retry_storm settings,
// twice: as the SDK exported it, and again under another trace id in pieces, one span per
// request with the root last, as exporters that send each span when it ends do. For each
// capture with a ground truth, both deliveries must give what the ground truth implies:
// the storm_summary records (tool, storm, layer, class, attempts, statuses, findings), the
// sampling reason on the root, the spans remapped to ERROR. For every capture, no raw
// tool argument or result reaches the backend or the summary file.
func TestRealSDKCapturesThroughTheCollector(t *testing.T) {
	s := startOneShot(t, func(c *stormConfig) { c.CleanPercent = 100 })
	var deliveries []captureDelivery
	seen := map[string]string{}
	for _, name := range fixtures.CaptureNames() {
		requests, truth := fixtures.LoadCapture(t, name)
		whole := captureDelivery{name: name, how: "as sent", requests: requests, truth: truth, traceID: onlyTraceID(t, name, requests)}
		pieces := captureDelivery{name: name, how: "in pieces", truth: truth}
		pieces.requests, pieces.traceID = inPiecesRootLast(requests)
		for _, d := range []captureDelivery{whole, pieces} {
			if other, dup := seen[d.traceID]; dup {
				t.Fatalf("%s %s and %s share trace id %s", d.name, d.how, other, d.traceID)
			}
			seen[d.traceID] = d.name + " " + d.how
			deliveries = append(deliveries, d)
		}
	}
	require.GreaterOrEqual(t, len(deliveries), 2*15, "captures")

	var all []ptrace.Traces
	for _, d := range deliveries {
		all = append(all, d.requests...)
	}
	m := s.send(t, all...)
	require.Zero(t, m.sum(metricSpansDropped, nil), "spans dropped")

	backend := backendTraces(s.sink)
	wantRecords := 0
	for _, d := range deliveries {
		if want := d.truth.Reportable(d.name); want != nil {
			units, err := d.truth.Units(*want)
			require.NoError(t, err, d.name)
			for _, u := range units {
				if u.Recorded() {
					wantRecords++
				}
			}
		}
	}
	var summary summaryFile
	eventually(t, 10*time.Second, "every record in the summary file", func() (bool, string) {
		summary = readSummaryFile(t, s.cfg.SummaryPath)
		n := len(summary.latest(t))
		return n >= wantRecords, fmt.Sprintf("%d of %d records", n, wantRecords)
	})
	records := summary.latest(t)

	for _, d := range deliveries {
		t.Run(d.name+"/"+strings.ReplaceAll(d.how, " ", "_"), func(t *testing.T) {
			bt := backend[d.traceID]
			require.NotNil(t, bt, "the trace did not reach the backend (clean traces are kept at 100%%)")
			sent := 0
			for _, r := range d.requests {
				sent += r.SpanCount()
			}
			assert.Len(t, bt.spans, sent, "spans at the backend")
			checkNoRawPayload(t, d, bt, summary.raw)
			want := d.truth.Reportable(d.name)
			if want == nil {
				return
			}
			units, err := d.truth.Units(*want)
			require.NoError(t, err)
			assert.ElementsMatch(t, expectedRecordViews(*want, units), recordViews(d.traceID, records), "records")
			require.True(t, bt.hasRoot, "root at the backend")
			reason, _ := bt.root.Attributes().Get(stormrecord.AttrSampling)
			assert.Equal(t, want.SamplingReason(units), reason.AsString(), "sampling reason on the root")
			remapped := 0
			for _, span := range bt.spans {
				if v, ok := span.Attributes().Get(stormrecord.AttrStatusRemap); ok && v.Bool() {
					assert.Equal(t, ptrace.StatusCodeError, span.Status().Code(), "remapped span %s", span.Name())
					remapped++
				}
			}
			assert.Equal(t, want.Remaps(), remapped, "spans remapped to ERROR")
		})
	}
}

// onlyTraceID is the one trace id of a capture's requests.
func onlyTraceID(t *testing.T, name string, requests []ptrace.Traces) string {
	t.Helper()
	ids := map[string]bool{}
	for _, r := range requests {
		for _, span := range tracespans.All(r) {
			ids[span.TraceID().String()] = true
		}
	}
	require.Len(t, ids, 1, "capture %s holds one trace", name)
	for id := range ids {
		return id
	}
	return ""
}

// inPiecesRootLast is the capture's spans under a new trace id, one span per request,
// children in the order the SDK sent them and the root last.
func inPiecesRootLast(requests []ptrace.Traces) ([]ptrace.Traces, string) {
	var children, roots []ptrace.Traces
	var id pcommon.TraceID
	for _, r := range requests {
		for _, one := range tracespans.OnePerRequest(r) {
			for _, span := range tracespans.All(one) {
				id = span.TraceID()
				id[0] ^= 0xff
				span.SetTraceID(id)
				if span.ParentSpanID().IsEmpty() {
					roots = append(roots, one)
				} else {
					children = append(children, one)
				}
			}
		}
	}
	return append(children, roots...), id.String()
}

// checkNoRawPayload searches everything the backend shows of the trace, and the summary
// file, for every raw tool argument and result value of the capture.
func checkNoRawPayload(t *testing.T, d captureDelivery, bt *backendTrace, summary []byte) {
	t.Helper()
	require.NotEmpty(t, d.truth.RawValues, "the capture lists its raw values")
	var where []located
	for _, span := range bt.spans {
		for _, l := range spanLocated(span) {
			where = append(where, located{span.Name() + " " + l.where, l.text})
		}
	}
	for _, span := range bt.late {
		where = append(where, spanLocated(span)...)
	}
	where = append(where, bt.resource...)
	for _, v := range d.truth.RawValues {
		for _, l := range where {
			if strings.Contains(l.text, v) {
				t.Errorf("raw tool payload %q reached the backend in %s", v, l.where)
			}
		}
		if strings.Contains(string(summary), v) {
			t.Errorf("raw tool payload %q reached the summary file", v)
		}
	}
}

// recordView is what a storm record says about one unit, without ids and timings.
type recordView struct {
	Tool     string
	Storm    bool
	Layer    stormrecord.Layer
	Class    string
	Attempts int
	Statuses []string
	Findings []string
}

func (v recordView) String() string {
	b, _ := json.Marshal(v)
	return string(b)
}

func recordViews(traceID string, records []stormrecord.Record) []string {
	var out []string
	for _, r := range records {
		if r.TraceID != traceID {
			continue
		}
		v := recordView{Tool: r.ToolName, Storm: r.Storm, Layer: r.Layer, Attempts: r.Attempts}
		if r.Class != nil {
			v.Class = *r.Class
		}
		for _, s := range r.Statuses {
			v.Statuses = append(v.Statuses, fixtures.TruthStatus(s))
		}
		for _, f := range r.Findings {
			v.Findings = append(v.Findings, f.Kind)
		}
		out = append(out, v.String())
	}
	return out
}

func expectedRecordViews(want fixtures.CaptureExpect, units []fixtures.ExpectedUnit) []string {
	var out []string
	for _, u := range units {
		if !u.Recorded() {
			continue
		}
		out = append(out, recordView{
			Tool: want.ToolName(u.Calls[len(u.Calls)-1]), Storm: u.Storm(), Layer: u.Layer(), Class: u.Class(),
			Attempts: len(u.Statuses), Statuses: slices.Clone(u.Statuses), Findings: u.Findings(),
		}.String())
	}
	return out
}
