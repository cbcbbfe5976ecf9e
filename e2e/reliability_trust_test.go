//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// forgedClean is a clean trace a client keeps for itself (ot=rv of all ones passes every
// threshold) and writes in retry_storm's name: on its tool span a storm record (id, trace
// and service of its choosing, class, layer and finding kind of its own, 999,999,999
// attempts, a duplicate_side_effect finding), a finding record, an annotation; a
// retrystorm.finding event; and a span named like the processor's late-finding span.
func forgedClean(t *testing.T, name, id, traceID string, n int) *spanBuilder {
	t.Helper()
	class, svc := fmt.Sprintf("class_%d", n), "someone-else"
	record, err := json.Marshal(stormrecord.Record{
		Schema: stormrecord.Schema, ID: id, TraceID: traceID, ServiceName: &svc, CallKey: "call_x",
		ToolName: "charge_card", Storm: true, Class: &class, Layer: stormrecord.Layer(fmt.Sprintf("layer_%d", n)),
		Attempts: 999_999_999, Statuses: []string{"error", "ok"},
		Findings: []stormrecord.Finding{{Kind: "duplicate_side_effect", Detail: "forged"}, {Kind: fmt.Sprintf("kind_%d", n), Detail: "forged"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	finding := fmt.Sprintf(`{"schema":"retrystorm.finding/v1","id":"%s","trace_id":"%s","span_id":"00000000000000a1",`+
		`"findings":[{"kind":"kind_%d","detail":"forged"}]}`, id, traceID, n)
	b := newSpanBuilder(name)
	root := b.root(1000)
	tool := b.genai(root, "lookup", "call_"+name, `{"q":"weather"}`, 10, 100, map[string]any{
		"gen_ai.tool.call.result":            `{"ok":true}`,
		stormrecord.AttrCallSummary:          string(record),
		stormrecord.AttrFindingSummary:       finding,
		stormrecord.AttrCallLayer:            fmt.Sprintf("layer_%d", n),
		"retrystorm.anything.else":           "x",
		stormrecord.AttrSeal:                 "00112233445566778899aabbccddeeff",
		"retrystorm.answer.cited_assets.not": "x",
	})
	ev := b.last().Events().AppendEmpty()
	ev.SetName(stormrecord.FindingEvent)
	ev.Attributes().PutStr(stormrecord.FindingKind, "duplicate_side_effect")
	b.span(stormrecord.LateFindingSpan, tool, 100, 100, map[string]any{stormrecord.AttrCallSummary: string(record)})
	for i := 0; i < b.Spans.Len(); i++ {
		b.Spans.At(i).TraceState().FromRaw("ot=rv:ffffffffffffff")
	}
	return b
}

// forgedAnnotationsPerTrace are the attributes forgedClean writes under retrystorm.: six on
// the tool span, one on the late-finding span (and one span name, one event name).
const forgedAnnotationsPerTrace = 7

// TestReliabilityClientsCannotWriteRecords: the attack of issue 40 through the built
// collector. A client keeps clean traces of its own and writes records, annotations,
// finding events and a late-finding span on them; it sends first a forged record with
// the id of a real storm's record, then the storm. A second receiver feeds storm_summary
// and the storms connector without retry_storm, and gets the same forgeries. Nothing the
// client wrote becomes a summary line, a connector log record or a metric label; the real
// record is written, whole; what was taken out and what was not sealed is counted.
func TestReliabilityClientsCannotWriteRecords(t *testing.T) {
	const forged = 300
	dir := t.TempDir()
	cfg := newStormConfig(t, dir)
	logsPort := freePorts(t, 1)[0]
	logs := startLogsBackend(t, logsPort)
	withSignals(t, &cfg, logsPort)
	sink := startBackend(t, cfg.BackendPort)
	directPort := freePorts(t, 1)[0]
	directPath := filepath.Join(dir, "direct", "storms.jsonl")
	cc := cfg.collector()
	cc.Receivers["otlp/direct"] = otlpGRPCReceiver(directPort)
	cc.Exporters["storm_summary/direct"] = yamlMap{"path": directPath, "include": []string{"storm", "failure", "finding"}}
	cc.Service.Pipelines["traces/direct"] = pipeline{Receivers: []string{"otlp/direct"}, Exporters: []string{"storm_summary/direct", "storms"}}
	p := launchCollector(t, dir, "collector", cc, cfg.OTLPPort)
	p.waitListening(t, directPort)
	client, direct := dialOTLP(t, cfg.OTLPPort), dialOTLP(t, directPort)

	real := stormTrace("trust-real", "charge_card", `{"order":"A-17"}`)
	realID := stormrecord.RecordID(real.traceID(), "call_trust-real")
	spans := 0
	send := func(b *spanBuilder) {
		spans += b.Spans.Len()
		client.mustExport(t, b.Traces)
		other := ptrace.NewTraces()
		b.Traces.CopyTo(other)
		direct.mustExport(t, other)
	}
	send(forgedClean(t, "trust-preempt", realID, real.traceID(), 0))
	for i := 1; i < forged; i++ {
		send(forgedClean(t, fmt.Sprintf("trust-%d", i), stormrecord.RecordID(fmt.Sprintf("%032x", i), "call_x"), fmt.Sprintf("%032x", i), i))
	}
	time.Sleep(500 * time.Millisecond) // the forged record first, as the attack has it
	spans += real.Spans.Len()
	client.mustExport(t, real.Traces)

	waitSettled(t, p, cfg.MetricsPort, spans)
	m := waitBackendDrained(t, p, cfg.MetricsPort)
	waitForRecord(t, p, cfg.SummaryPath, real.traceID(), settleTimeout)
	time.Sleep(time.Second) // two flushes of the connector's metrics

	t.Run("summary files", func(t *testing.T) {
		f := readSummaryFileMust(t, cfg.SummaryPath)
		if len(f.records) != 1 || len(f.findings) != 0 {
			t.Fatalf("the summary file holds %d records and %d finding records, want the real storm's only:\n%s",
				len(f.records), len(f.findings), tail(string(f.raw), 5))
		}
		r := f.records[0]
		if r.ID != realID || r.TraceID != real.traceID() || r.Attempts != 2 || r.Class == nil || *r.Class != "transient_dependency" ||
			r.ServiceName == nil || *r.ServiceName != agentService {
			t.Errorf("the real record is not the processor's: %+v", r)
		}
		if d := readSummaryFile(t, directPath); d.count() != 0 {
			t.Errorf("storm_summary behind no retry_storm wrote %d forged records", d.count())
		}
	})
	t.Run("connector", func(t *testing.T) {
		lines := logRecords(t, logs)
		if len(lines) != 1 || lines[0].id != realID {
			t.Errorf("the connector sent %d log records, want the real storm's only: %v", len(lines), lines)
		}
		sm := waitMetrics(t, p, cfg.Signals.PrometheusPort, settleTimeout, "the connector counted the storm", func(m metrics) bool {
			return m.sum(metricStormsTotal, nil) == 1
		})
		for name, label := range map[string]string{metricStormsTotal: "class", metricFindingsTotal: "kind", "retrystorm_attempts_total": "layer"} {
			for v := range sm.by(name, label) {
				if strings.HasPrefix(v, "class_") || strings.HasPrefix(v, "kind_") || strings.HasPrefix(v, "layer_") {
					t.Errorf("%s has the client's %s %q", name, label, v)
				}
			}
		}
		if n := sm.sum(metricFindingsTotal, map[string]string{"kind": "duplicate_side_effect"}); n != 0 {
			t.Errorf("the alert's input, duplicate_side_effect findings, counts %v", n)
		}
	})
	t.Run("backend", func(t *testing.T) {
		kept, carrying := 0, map[string]string{}
		for id, bt := range backendTraces(sink) {
			kept++
			if len(bt.late) > 0 {
				carrying[id] = "a span named " + lateFindingSpan
			}
			for _, span := range bt.spans {
				for k := range span.Attributes().All() {
					client := k == stormrecord.AttrFindingSummary || k == "retrystorm.anything.else" || strings.HasPrefix(k, "retrystorm.answer.cited_assets.")
					if client || k == stormrecord.AttrCallSummary && id != real.traceID() {
						carrying[id] = "the client's " + k + " on " + span.Name()
					}
				}
			}
		}
		if kept != forged+1 {
			t.Errorf("%d traces reached the backend, want the %d the client kept and the storm", kept, forged+1)
		}
		for id, what := range carrying {
			t.Errorf("%d traces reached the backend with what the client wrote in retry_storm's name, e.g. %s with %s", len(carrying), id, what)
			break
		}
	})
	t.Run("counted", func(t *testing.T) {
		sum := func(name string) float64 { return m.sum(name, nil) }
		m = waitMetrics(t, p, cfg.MetricsPort, settleTimeout, "the direct pipeline's records counted", func(got metrics) bool {
			m = got
			return sum("otelcol_exporter_storm_summary_records_unsealed") >= 3*forged &&
				sum("otelcol_connector_storms_annotations_unsealed") >= 4*forged
		})
		removed := func(where string) float64 {
			return m.sum(metricPrefix+"client_annotations_removed", map[string]string{"where": where})
		}
		t.Logf("taken out on arrival: %v span attributes, %v span names, %v event names; unsealed: %v records (storm_summary/direct), %v spans (storms, both directions)",
			removed("span"), removed("span_name"), removed("event_name"),
			sum("otelcol_exporter_storm_summary_records_unsealed"), sum("otelcol_connector_storms_annotations_unsealed"))
		if got := removed("span"); got != forged*forgedAnnotationsPerTrace {
			t.Errorf("client_annotations_removed{where=span} = %v, want %d", got, forged*forgedAnnotationsPerTrace)
		}
		if got := removed("span_name"); got != forged {
			t.Errorf("client_annotations_removed{where=span_name} = %v, want %d", got, forged)
		}
		if got := removed("event_name"); got != forged {
			t.Errorf("client_annotations_removed{where=event_name} = %v, want %d", got, forged)
		}
		if got := sum("otelcol_exporter_storm_summary_records_deduplicated"); got != 0 {
			t.Errorf("records_deduplicated = %v: a forged record pre-empted a real one", got)
		}
		// Both records of every forged tool span, and the late-finding span's, by the
		// direct exporter.
		if got := sum("otelcol_exporter_storm_summary_records_unsealed"); got != 3*forged {
			t.Errorf("records_unsealed = %v, want %d", got, 3*forged)
		}
		// The tool span and the late-finding span of every forged trace, by each of the
		// connector's directions.
		if got := sum("otelcol_connector_storms_annotations_unsealed"); got != 2*2*forged {
			t.Errorf("annotations_unsealed = %v, want %d", got, 4*forged)
		}
	})
}
