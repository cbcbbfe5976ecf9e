//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// The storms connector's outputs (connector/stormsconnector/README.md) as the prometheus
// exporter names them.
const (
	metricStormsTotal   = "retrystorm_storms_total"
	metricFindingsTotal = "retrystorm_findings_total"
	metricCallsTotal    = "retrystorm_calls_total"
	metricFailedCalls   = "retrystorm_calls_failed_total"
	metricIncompleteAtt = "retrystorm_attempts_incomplete_total"
)

// startLogsBackend is an OTLP gRPC logs backend on port: the logs sink records reach.
func startLogsBackend(t *testing.T, port int) *consumertest.LogsSink {
	t.Helper()
	sink := new(consumertest.LogsSink)
	factory, cfg := backendReceiver(port, 0)
	rcv, err := factory.CreateLogs(context.Background(), receivertest.NewNopSettings(factory.Type()), cfg, sink)
	if err != nil {
		t.Fatalf("create logs backend: %v", err)
	}
	if err := rcv.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatalf("start logs backend on %s: %v", loopback(port), err)
	}
	t.Cleanup(func() { _ = rcv.Shutdown(context.Background()) })
	return sink
}

// withSignals adds the storms connector to cfg, its metrics on a new prometheus port and its
// records to logsPort.
func withSignals(t *testing.T, cfg *stormConfig, logsPort int) {
	t.Helper()
	cfg.Signals = &signalsConfig{PrometheusPort: freePorts(t, 1)[0], LogsPort: logsPort}
}

// recordLine is one record as the reader of a logs backend or a summary file sees it.
type recordLine struct {
	schema, id string
	revision   int
}

// logRecords lists the records the logs sink received, one per log record.
func logRecords(t *testing.T, sink *consumertest.LogsSink) []recordLine {
	t.Helper()
	var out []recordLine
	for _, ld := range sink.AllLogs() {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			sls := ld.ResourceLogs().At(i).ScopeLogs()
			for j := 0; j < sls.Len(); j++ {
				lrs := sls.At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					out = append(out, logRecordLine(t, lrs.At(k)))
				}
			}
		}
	}
	return out
}

func logRecordLine(t *testing.T, lr plog.LogRecord) recordLine {
	schema, _ := lr.Attributes().Get("retrystorm.record.schema")
	id, _ := lr.Attributes().Get("retrystorm.record.id")
	rev, _ := lr.Attributes().Get("retrystorm.record.revision")
	if id.Str() == "" || lr.Body().Str() == "" {
		t.Errorf("a log record without a record id or body: %v", lr.Attributes().AsRaw())
	}
	return recordLine{schema: schema.Str(), id: id.Str(), revision: int(rev.Int())}
}

// summaryLines lists the records of summary files, one per line.
func summaryLines(files ...summaryFile) []recordLine {
	var out []recordLine
	for _, f := range files {
		for _, r := range f.records {
			out = append(out, recordLine{stormrecord.Schema, r.ID, r.Revision})
		}
		for _, r := range f.findings {
			out = append(out, recordLine{stormrecord.FindingSchema, r.ID, r.Revision})
		}
	}
	return out
}

// checkRecordsOnce: the logs backend received each record (id and revision) at most once,
// the same ids as the summary files hold, and per id the same latest revision. A revision
// the exporter did not write because a later one came first (a late finding forwarded
// before its trace) may reach the logs backend: a reader takes the latest per id.
func checkRecordsOnce(t *testing.T, logs []recordLine, files ...summaryFile) {
	t.Helper()
	latest := func(lines []recordLine) map[[2]string]int {
		m := map[[2]string]int{}
		for _, l := range lines {
			k := [2]string{l.schema, l.id}
			m[k] = max(m[k], l.revision)
		}
		return m
	}
	seen := map[recordLine]bool{}
	for _, l := range logs {
		if seen[l] {
			t.Errorf("record %+v reached the logs backend twice", l)
		}
		seen[l] = true
	}
	got, want := latest(logs), latest(summaryLines(files...))
	if len(want) == 0 {
		t.Fatal("the summary files hold no record: nothing to compare")
	}
	for k, rev := range want {
		if got[k] != rev {
			t.Errorf("record %v: latest revision %d at the logs backend, %d in the summary files", k, got[k], rev)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("record %v reached the logs backend but is in no summary file", k)
		}
	}
	t.Logf("%d records (%d ids) at the logs backend, %d summary lines", len(logs), len(got), len(summaryLines(files...)))
}

// stormSignalsDone reports whether the connector's metrics show every storm and finding of
// want (the connector flushes every 500 ms).
func stormSignalsDone(m metrics, want expectation) (bool, string) {
	storms, findings := 0, 0
	for _, n := range want.storms {
		storms += n
	}
	for _, n := range want.findings {
		findings += n
	}
	gotS, gotF := int(m.sum(metricStormsTotal, nil)), int(m.sum(metricFindingsTotal, nil))
	return gotS == storms && gotF == findings, fmt.Sprintf("connector: storms %d of %d, findings %d of %d", gotS, storms, gotF, findings)
}

// checkStormMetrics holds the connector's metrics to the truth: storms by (class, tool) and
// findings by kind exactly (their traces are kept whole), calls within 4 standard
// deviations of the clean traces' sampling.
func checkStormMetrics(t *testing.T, m metrics, truth []agenttraffic.Truth, want expectation, cleanShare float64) {
	t.Helper()
	equalCounts(t, "connector storms by (class, tool)", m.byPair(metricStormsTotal, "class", "tool"), want.storms)
	kinds := map[string]int{}
	for _, s := range m {
		if s.name == metricFindingsTotal {
			kinds[s.labels["kind"]] += int(s.value)
		}
	}
	equalCounts(t, "connector findings by kind", kinds, want.findings)
	var variance float64
	failed, incomplete := 0, 0
	for i := range truth {
		if truth[i].Reason == agenttraffic.ReasonClean {
			c := float64(truth[i].Calls)
			variance += c * c * (1 - cleanShare) / cleanShare
		}
		for _, r := range truth[i].Records {
			if n := len(r.Statuses); n > 0 && r.Statuses[n-1] != agenttraffic.AttemptOK {
				failed++
			}
			incomplete += r.IncompleteAttempts
		}
	}
	if got := int(m.sum(metricFailedCalls, nil)); got != failed {
		t.Errorf("connector failed calls: %d, truth %d", got, failed)
	}
	if got := int(m.sum(metricIncompleteAtt, nil)); got != incomplete {
		t.Errorf("connector incomplete attempts: %d, truth %d", got, incomplete)
	}
	est, bound := m.sum(metricCallsTotal, nil), 4*math.Sqrt(variance)
	if math.Abs(est-float64(want.calls)) > bound {
		t.Errorf("connector calls: estimate %.1f, truth %d, beyond the bound ±%.1f", est, want.calls, bound)
	}
	t.Logf("connector calls: estimate %.1f, truth %d (bound ±%.1f)", est, want.calls, bound)
	if tools := slices.Collect(func(yield func(string) bool) {
		for _, s := range m {
			if s.name == metricCallsTotal && !yield(s.labels["tool"]) {
				return
			}
		}
	}); len(tools) == 0 {
		t.Error("connector: no retrystorm_calls_total series")
	}
}
