//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.yaml.in/yaml/v3"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// tail_sampling's metrics the tests read (its documentation.md).
const (
	metricTSGlobalDecisions = "otelcol_processor_tail_sampling_global_count_traces_sampled"
	metricTSPolicyDecisions = "otelcol_processor_tail_sampling_count_traces_sampled"
	metricTSDroppedTooEarly = "otelcol_processor_tail_sampling_sampling_trace_dropped_too_early"
)

// gatewayDecisionWait replaces the shipped 30 s: tail_sampling decides on a one-second
// tick, so a trace is decided 2–3 s after its first span.
const gatewayDecisionWait = "2s"

// gatewayHashKey is the HMAC key of both the gateway and the standalone collector it is
// compared with, so their argument hashes, idempotency hashes and record ids agree.
const gatewayHashKey = "e2e-tail-sampling-key-not-a-secret"

// gateway is config/tail-sampling.yaml as shipped, run with loopback ports, the test's
// backend, the summary file under a temporary directory and a short decision wait: the
// policies, the extension and the processor settings are the file's own.
type gateway struct {
	otlpPort, backendPort, metricsPort int
	summaryPath                        string
	p                                  *collectorProcess
	client                             *otlpClient
	sink                               *consumertest.TracesSink
}

// startGateway starts the gateway with a backend of its own; adjust, when not nil, changes
// the configuration (as data) after the test's ports and waits are set.
func startGateway(t *testing.T, adjust func(cfg yamlMap)) *gateway {
	t.Helper()
	dir := t.TempDir()
	ports := freePorts(t, 4)
	g := &gateway{otlpPort: ports[0], backendPort: ports[1], metricsPort: ports[2],
		summaryPath: filepath.Join(dir, "storms", "storms.jsonl")}
	cfg := shippedGatewayConfig(t)
	set := func(v any, path ...string) {
		m := cfg
		for _, k := range path[:len(path)-1] {
			next, ok := m[k].(yamlMap)
			if !ok {
				t.Fatalf("config/tail-sampling.yaml has no mapping at %s", strings.Join(path, "."))
			}
			m = next
		}
		m[path[len(path)-1]] = v
	}
	set(yamlMap{"grpc": yamlMap{"endpoint": loopback(g.otlpPort), "max_recv_msg_size_mib": 4}}, "receivers", "otlp", "protocols")
	set(loopback(ports[3]), "extensions", "health_check", "endpoint")
	set(gatewayDecisionWait, "processors", "tail_sampling", "decision_wait")
	// The backend never fails here: a failed send shows at once rather than 5 s later.
	set(retryFast()["retry_on_failure"], "exporters", "otlp_grpc/backend", "retry_on_failure")
	set(telemetry(g.metricsPort, "info")["metrics"], "service", "telemetry", "metrics")
	if adjust != nil {
		adjust(cfg)
	}
	path := filepath.Join(dir, "gateway.yaml")
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatalf("render gateway config: %v", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatalf("write gateway config: %v", err)
	}
	g.sink = &startFaultyBackend(t, g.backendPort).sink
	g.p = startCollector(t, path, filepath.Join(dir, "gateway.log"),
		"OTLP_BACKEND_ENDPOINT="+loopback(g.backendPort), "OTLP_BACKEND_INSECURE=true",
		"RETRYSTORM_HASH_KEY="+gatewayHashKey, "RETRYSTORM_DATA_DIR="+dir)
	g.p.waitListening(t, g.otlpPort)
	g.client = dialOTLP(t, g.otlpPort)
	return g
}

// shippedGatewayConfig reads config/tail-sampling.yaml as data.
func shippedGatewayConfig(t *testing.T) yamlMap {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "config", "tail-sampling.yaml"))
	if err != nil {
		t.Fatalf("read config/tail-sampling.yaml: %v", err)
	}
	var cfg yamlMap
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("parse config/tail-sampling.yaml: %v", err)
	}
	return cfg
}

// startStandalone starts the comparison: standalone retry_storm (buffering) keeping every
// trace (clean_percent 100), with the gateway's HMAC key.
func startStandalone(t *testing.T) *oneShot {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "hmac.key")
	if err := os.WriteFile(keyFile, []byte(gatewayHashKey), 0o600); err != nil {
		t.Fatalf("write key file: %v", err)
	}
	return startOneShot(t, func(c *stormConfig) {
		c.CleanPercent = 100
		c.Processor = yamlMap{"hashing": yamlMap{"key_file": keyFile}}
	})
}

// send exports the requests and waits until tail_sampling has decided traces traces in all,
// retry_storm has given every span it released the verdict, and the backend exporter has
// drained. It returns the last scrape.
func (g *gateway) send(t *testing.T, traces int, requests ...ptrace.Traces) metrics {
	t.Helper()
	for _, td := range requests {
		g.client.mustExport(t, td)
	}
	return g.waitDecided(t, traces)
}

// waitDecided waits for tail_sampling's decisions on traces traces (it adds them to its
// global count after releasing the tick's sampled traces to retry_storm), then for
// retry_storm and the backend exporter.
func (g *gateway) waitDecided(t *testing.T, traces int) metrics {
	t.Helper()
	waitMetrics(t, g.p, g.metricsPort, settleTimeout, fmt.Sprintf("tail_sampling decided %d traces", traces), func(m metrics) bool {
		return int(m.sum(metricTSGlobalDecisions, nil)) >= traces
	})
	waitMetrics(t, g.p, g.metricsPort, settleTimeout, "retry_storm gave every released trace its verdict", func(m metrics) bool {
		ok, _, _ := settled(m)
		return ok
	})
	m := waitBackendDrained(t, g.p, g.metricsPort)
	if got := int(m.sum(metricTSGlobalDecisions, nil)); got != traces {
		t.Errorf("tail_sampling decided %d traces, %d were sent", got, traces)
	}
	if n := m.sum(metricTSDroppedTooEarly, nil); n != 0 {
		t.Errorf("tail_sampling dropped %v traces before deciding them (num_traces)", n)
	}
	// One scrape more: a storm_calls series is observed at 0 by the first scrape that
	// sees it (waitSettled does the same).
	if last, _ := scrapeWhile(t, g.p, g.metricsPort); last != nil {
		m = last
	}
	return m
}

// comparableRecords is each storm record a reader sees (the latest of an id), by id, as
// JSON without the time it was written and without its revision: what the gateway and the
// standalone collector must agree on. The revision counts the versions one collector
// wrote, which depends on the order the two traces of a stale-cache pair were decided in:
// a stale read decided before the trace it copied gets its finding late, in a second
// version (tail_sampling releases the traces of one tick in no set order).
func comparableRecords(t *testing.T, f summaryFile) map[string]string {
	t.Helper()
	out := map[string]string{}
	add := func(id string, r any) {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("encode record %s: %v", id, err)
		}
		out[id] = string(b)
	}
	for _, r := range f.latest(t) {
		r.Time, r.Revision = "", 0
		add(r.ID, r)
	}
	for _, r := range f.findings {
		r.Time = ""
		add(r.ID, r)
	}
	return out
}

// recordMetricsMatchFile: storm_summary's records_written counts, by schema, the lines of
// its file.
func recordMetricsMatchFile(t *testing.T, who string, m metrics, f summaryFile) {
	t.Helper()
	for schema, lines := range map[string]int{stormrecord.Schema: len(f.records), stormrecord.FindingSchema: len(f.findings)} {
		if got := int(m.sum(metricRecordsWritten, map[string]string{"schema": schema})); got != lines {
			t.Errorf("%s: records written (schema %s): metrics say %d, the file has %d lines", who, schema, got, lines)
		}
	}
}

// sameRecords compares the two collectors' records id by id.
func sameRecords(t *testing.T, gateway, standalone map[string]string) {
	t.Helper()
	for _, id := range slices.Sorted(maps.Keys(standalone)) {
		g, ok := gateway[id]
		switch {
		case !ok:
			t.Errorf("record %s is in standalone retry_storm's file only: %s", id, standalone[id])
		case g != standalone[id]:
			t.Errorf("record %s differs:\n  gateway    %s\n  standalone %s", id, g, standalone[id])
		}
	}
	for _, id := range slices.Sorted(maps.Keys(gateway)) {
		if _, ok := standalone[id]; !ok {
			t.Errorf("record %s is in the gateway's file only: %s", id, gateway[id])
		}
	}
}

// sameMetrics holds the gateway's retry_storm metrics to standalone retry_storm's for the
// same traffic, where they count the same thing: storm calls by class and tool, findings
// by kind (less the staleUnseen stale_cache_suspect findings the gateway cannot make:
// staleReadsOfDroppedTraces), traces kept for a signal by reason. Records are
// compared in the files (sameRecords): records_written counts lines, and a record is
// written again when a finding about it comes after its trace was decided, which depends
// on the order a stale-cache pair is decided in. The rest differ by design: tail_sampling drops clean traces before retry_storm
// sees them, so calls, tool_attempts, spans_received and traces{reason="clean"} count
// only what it released; and retry_storm drops nothing after it, so
// traces{decision="dropped"} and spans_dropped stay 0 (their series exist at 0, as every
// fixed-attribute series does) where standalone at clean_percent 100 drops nothing either.
func sameMetrics(t *testing.T, gateway, standalone metrics) {
	t.Helper()
	sameCounts(t, "storm calls by (class, tool)", gateway.byPair(metricStormCalls, "class", "tool"), standalone.byPair(metricStormCalls, "class", "tool"))
	sameCounts(t, "findings by kind", gateway.by(metricFindings, "kind"), standalone.by(metricFindings, "kind"))
	signal := func(m metrics) map[[2]string]int {
		out := m.byPair(metricTraces, "decision", "reason")
		maps.DeleteFunc(out, func(k [2]string, _ int) bool { return k[1] == string(agenttraffic.ReasonClean) })
		return out
	}
	sameCounts(t, "signal traces by (decision, reason)", signal(gateway), signal(standalone))
	if n := gateway.sum(metricTraces, map[string]string{"decision": "dropped"}); n != 0 {
		t.Errorf("retry_storm after tail_sampling dropped %v traces; with buffering: false it keeps every one", n)
	}
	if n := gateway.sum(metricSpansDropped, nil); n != 0 {
		t.Errorf("retry_storm after tail_sampling dropped %v spans", n)
	}
	if n := gateway.sum(metricEarlyDecisions, nil); n != 0 {
		t.Errorf("retry_storm after tail_sampling decided %v traces early; nothing is held", n)
	}
}

// sameCounts compares two tallies, ignoring zero entries.
func sameCounts[K comparable](t *testing.T, what string, gateway, standalone map[K]int) {
	t.Helper()
	maps.DeleteFunc(gateway, func(_ K, v int) bool { return v == 0 })
	maps.DeleteFunc(standalone, func(_ K, v int) bool { return v == 0 })
	if maps.Equal(gateway, standalone) {
		return
	}
	keys := map[K]bool{}
	for k := range gateway {
		keys[k] = true
	}
	for k := range standalone {
		keys[k] = true
	}
	var diffs []string
	for k := range keys {
		if gateway[k] != standalone[k] {
			diffs = append(diffs, fmt.Sprintf("%v: gateway %d, standalone %d", k, gateway[k], standalone[k]))
		}
	}
	slices.Sort(diffs)
	t.Errorf("%s differ:\n  %s", what, strings.Join(diffs, "\n  "))
}
