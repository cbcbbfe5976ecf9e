//go:build e2e

package e2e

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

const (
	secretsSeed   = 13
	secretsCount  = 40
	keyEnvName    = "RETRYSTORM_E2E_HASH_KEY"
	secretAccount = "DE44500105175407324931"
	secretIdem    = "idem-7f3a-secret-order-991"
)

// TestReliabilitySecretsKeyEnv and TestReliabilitySecretsKeyFile run agentsim's traffic
// (every scenario; its payloads carry account numbers, e-mail addresses and the like)
// through a collector with redaction on (the default), an HMAC key, the storms connector
// and logging at debug level. Every raw argument, result and idempotency-key value the run
// sent (8 bytes or more: shorter ones, "ok", "EUR", 1299, are not hunted, by design, as
// redaction's min_value_length does not hunt them) is searched, in every form an output
// may escape it to, in everything that left the collector: every string of every span the
// backend received, every line of the summary file, every log record (body, attributes,
// resource) the storms connector sent to the logs backend, its metrics as the prometheus
// exporter shows them, the collector's own metrics and its log. None may be there, in
// whichever trace: a value is no leak only in a trace that itself sends it outside its
// payloads (a failure text as a span status). The key appears in none of them; the hashes
// on the spans are HMAC-SHA256 with that key.
func TestReliabilitySecretsKeyEnv(t *testing.T) {
	key := newKey(t)
	runSecrets(t, key, yamlMap{"key_env": keyEnvName}, keyEnvName+"="+key)
}

func TestReliabilitySecretsKeyFile(t *testing.T) {
	key := newKey(t)
	path := filepath.Join(t.TempDir(), "hash.key")
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runSecrets(t, key, yamlMap{"key_file": path})
}

func newKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "rs-e2e-key-" + hex.EncodeToString(b)
}

func runSecrets(t *testing.T, key string, hashing yamlMap, env ...string) {
	runSecretsWith(t, key, hashing, nil, sendAgentsim, env...)
}

// TestReliabilitySecretsInPieces: the same traffic with every trace split over shuffled
// requests, then late copy-carrying spans (model and agent spans sent again, new ids) for
// each kept trace after its decision: late spans of a kept trace are redacted too.
func TestReliabilitySecretsInPieces(t *testing.T) {
	key := newKey(t)
	adjust := func(c *stormConfig) { c.DecisionWait, c.RootGrace = "6s", "3s" }
	runSecretsWith(t, key, yamlMap{"key_env": keyEnvName}, adjust, sendInPieces, keyEnvName+"="+key)
}

// shapeStorm is one storm trace of one shape.
type shapeStorm struct {
	shape    agenttraffic.Shape
	scenario agenttraffic.Scenario
}

// stormPerShape lists the storm each shape gets of its own besides the every-scenario
// traffic (an executor storm, or an agent storm where the framework has no executor retry):
// every shape that carries payloads, so that each shape's payload copies are in a kept
// trace and searched, however few traces the mix gives it.
func stormPerShape() []shapeStorm {
	var out []shapeStorm
	for _, shape := range agenttraffic.AllShapes() {
		if !shape.SendsPayloads() {
			continue
		}
		sc := agenttraffic.ScenarioExecutorStorm
		if !shape.Expresses(sc) {
			sc = agenttraffic.ScenarioAgentStorm
		}
		out = append(out, shapeStorm{shape, sc})
	}
	return out
}

// secretsTraffic sends agentsim traffic to the collector and returns the traces sent (with
// their truth) and how many spans it sent.
type secretsTraffic func(t *testing.T, dir string, cfg stormConfig, p *collectorProcess, client *otlpClient) ([]agenttraffic.Trace, int)

// secretsRun is one part of the secrets traffic: a generator config and how many traces.
type secretsRun struct {
	traffic agenttraffic.Config
	count   int
}

// secretsRuns are every scenario then the mix, then each shape's storm of its own.
func secretsRuns() []secretsRun {
	runs := []secretsRun{{agenttraffic.Config{Seed: secretsSeed, EveryScenario: true}, secretsCount}}
	for i, st := range stormPerShape() {
		runs = append(runs, secretsRun{agenttraffic.Config{Seed: secretsSeed + 1 + uint64(i),
			Shapes: []agenttraffic.Shape{st.shape}, Scenarios: agenttraffic.ScenarioWeights{st.scenario: 1}}, 1})
	}
	return runs
}

// flags are agentsim's flags for the run.
func (r secretsRun) flags() []string {
	args := []string{"--count", strconv.Itoa(r.count), "--seed", strconv.FormatUint(r.traffic.Seed, 10)}
	if r.traffic.EveryScenario {
		args = append(args, "--every-scenario")
	}
	if len(r.traffic.Shapes) > 0 {
		var shapes []string
		for _, s := range r.traffic.Shapes {
			shapes = append(shapes, string(s))
		}
		args = append(args, "--shapes", strings.Join(shapes, ","))
	}
	if len(r.traffic.Scenarios) > 0 {
		var weights []string
		for _, sc := range slices.Sorted(maps.Keys(r.traffic.Scenarios)) {
			weights = append(weights, fmt.Sprintf("%s=%g", sc, r.traffic.Scenarios[sc]))
		}
		args = append(args, "--scenarios", strings.Join(weights, ","))
	}
	return args
}

// sendAgentsim runs the agentsim binary on each run, and generates the same traces in
// process to know every string they carried (agentsim's truth lists only their payload
// values).
func sendAgentsim(t *testing.T, dir string, cfg stormConfig, _ *collectorProcess, _ *otlpClient) ([]agenttraffic.Trace, int) {
	agentsim := buildAgentsim(t, dir)
	var sent []agenttraffic.Trace
	spans := 0
	for i, r := range secretsRuns() {
		truthPath := filepath.Join(dir, fmt.Sprintf("truth%d.jsonl", i))
		runAgentsim(t, agentsim, append(r.flags(), "--endpoint", loopback(cfg.OTLPPort), "--rate", "0",
			"--service", agentService, "--truth", truthPath)...)
		truth := readTruth(t, truthPath)
		traffic := r.traffic
		traffic.Interval = agentsimBurstInterval
		traces := generate(t, traffic, r.count)
		if len(traces) != len(truth) {
			t.Fatalf("run %d: generated %d traces, agentsim's truth has %d", i, len(traces), len(truth))
		}
		for j := range traces {
			if id := traces[j].ID.String(); id != truth[j].TraceID {
				t.Fatalf("run %d: generated trace %d is %s, agentsim sent %s: the generator config differs from agentsim's", i, j, id, truth[j].TraceID)
			}
			traces[j].Truth = truth[j]
			spans += truth[j].Spans
		}
		sent = append(sent, traces...)
	}
	return sent, spans
}

// lateCopyMark starts the span ids of the late copies sendInPieces sends, so the leak
// table can tell them apart (three bytes: a planned id starts so once in 16M).
var lateCopyMark = [3]byte{0xfd, 0x5e, 0x7c}

// sendInPieces deals the same scenarios' spans into shuffled requests; once they are
// decided it sends, for every trace the collector keeps, its copy-carrying non-tool spans
// again under new span ids.
func sendInPieces(t *testing.T, _ string, cfg stormConfig, p *collectorProcess, client *otlpClient) ([]agenttraffic.Trace, int) {
	var traces []agenttraffic.Trace
	for _, r := range secretsRuns() {
		traces = append(traces, generate(t, r.traffic, r.count)...)
	}
	spans := 0
	for _, td := range shuffledRequests(traces, secretsSeed) {
		spans += td.SpanCount()
		client.mustExport(t, td)
	}
	waitSettled(t, p, cfg.MetricsPort, spans)
	th := cleanThreshold(t, cfg.CleanPercent)
	late := 0
	for i := range traces {
		tr := traces[i]
		if !tr.Truth.Keep && !keepsClean(t, th, tr.Truth.TraceID) {
			continue
		}
		var again []agenttraffic.Span
		for _, s := range tr.Spans {
			if carriesCopies(&s) && !s.Parent.IsZero() && len(again) < 3 {
				copy(s.ID[:], lateCopyMark[:])
				s.ID[3] = byte(len(again))
				again = append(again, s)
			}
		}
		tr.Spans = again
		late += len(again)
		client.mustExport(t, agenttraffic.TraceToPdata(&tr))
	}
	if late == 0 {
		t.Fatal("no late copy-carrying span was sent: the late part would prove nothing")
	}
	t.Logf("sent %d spans of %d traces in pieces, then %d late copy-carrying spans of the kept traces", spans, len(traces), late)
	return traces, spans + late
}

// payloadCopyAttributes are where agentsim copies tool payloads outside the tool spans
// (prefixes of attribute keys).
var payloadCopyAttributes = []string{"gen_ai.input.messages", "gen_ai.output.messages", "mastra.model_step.output",
	"mastra.model_generation.output", "ai.prompt", "ai.response.toolCalls", "ai.response.text", "gen_ai.prompt.",
	"gen_ai.completion.", "llm.input_messages.", "llm.output_messages.", "url.full", "http.request.header.idempotency-key"}

// carriesCopies reports a planned model, step or HTTP span with a payload copy.
func carriesCopies(s *agenttraffic.Span) bool {
	for _, a := range s.Attrs {
		for _, p := range payloadCopyAttributes {
			if strings.HasPrefix(a.Key, p) {
				return true
			}
		}
	}
	return len(s.Events) > 0 && strings.HasPrefix(s.Events[0].Name, "gen_ai.")
}

// runSecretsWith runs send into a collector with retry_storm hashing configured by hashing,
// and the storms connector wired as config/observability.yaml wires it: its metrics to a
// prometheus exporter, its records to an OTLP logs backend.
func runSecretsWith(t *testing.T, key string, hashing yamlMap, adjust func(*stormConfig), send secretsTraffic, env ...string) {
	dir := t.TempDir()
	cfg := newStormConfig(t, dir)
	cfg.LogLevel = "debug"
	cfg.Processor = yamlMap{"hashing": hashing}
	if adjust != nil {
		adjust(&cfg)
	}
	backend := startFaultyBackend(t, cfg.BackendPort)
	logsPort := freePorts(t, 1)[0]
	logs := startLogsBackend(t, logsPort)
	withSignals(t, &cfg, logsPort)
	p := startStormCollector(t, dir, cfg, env...)
	client := dialOTLP(t, cfg.OTLPPort)

	sent, spans := send(t, dir, cfg, p, client)
	truth := truthOf(sent)
	// A storm whose arguments and idempotency key are known, to check the HMAC.
	args := `{"account":"` + secretAccount + `"}`
	known := stormTrace("secrets-hmac", "transfer_funds", args)
	for i := 1; i < known.Spans.Len(); i++ {
		known.Spans.At(i).Attributes().PutStr("idempotency_key", secretIdem)
	}
	client.mustExport(t, known.Traces)
	spans += known.Traces.SpanCount()
	search := sentValues(t, sent, known.Traces, []string{secretAccount, secretIdem})
	checkEveryShapeSearched(t, truth)
	waitSettled(t, p, cfg.MetricsPort, spans)
	waitBackendDrained(t, p, cfg.MetricsPort)
	stormMetricsText := waitStormMetrics(t, p, cfg.Signals.PrometheusPort, truth)
	metricsText := scrapeText(t, cfg.MetricsPort)
	p.stop(t)

	summary := readSummaryFile(t, cfg.SummaryPath)
	log := p.log()
	t.Run("no raw payload in the outputs", func(t *testing.T) {
		backendBytes := search.backend(&backend.sink)
		search.lines("summary file", string(summary.raw), false, nil)
		logsBytes := search.logRecords(logs)
		// Metrics and log text is searched for a value as a word: the 8-byte payload
		// words ("accepted") are also parts of metric names. gRPC's own transport lines
		// are left out: they never see a payload, and a tool's error text such as
		// "connection reset by peer" is also what gRPC logs when agentsim hangs up.
		search.lines("storm metrics", stormMetricsText, true, nil)
		search.lines("metrics", metricsText, true, nil)
		search.lines("collector log", log, true, grpcLine)
		if l := search.leaks; len(l.rows) > 0 {
			t.Errorf("%d of %d raw payload values reached an output, by place:\n%s", len(l.seen), len(search.values), l)
		}
		t.Logf("%d raw payload values (%d forms) searched in %d bytes of backend strings, %d of summaries, %d of log records, "+
			"%d of storm metrics, %d of metrics, %d of log; %d found only in traces that send them outside their payloads",
			len(search.values), len(search.hunt.forms), backendBytes, len(summary.raw), logsBytes, len(stormMetricsText),
			len(metricsText), len(log), len(search.excused))
	})
	t.Run("records at the logs backend", func(t *testing.T) { checkRecordsOnce(t, logRecords(t, logs), summary) })
	t.Run("key never shown", func(t *testing.T) {
		for what, text := range map[string]string{"summary file": string(summary.raw), "backend spans": allBackendStrings(backend),
			"logs backend": allLogStrings(logs), "storm metrics": stormMetricsText, "collector log": log, "metrics": metricsText} {
			if strings.Contains(text, key) {
				t.Errorf("the %s holds the HMAC key", what)
			}
		}
	})
	t.Run("hashes are HMAC-SHA256 with the key", func(t *testing.T) { checkHMAC(t, key, args, known, backend, summary) })
}

// sentValues lists every raw value the run sent, of 8 bytes or more: each trace's payload
// values as agentsim's truth lists them (none shorter: min_value_length, 8 by default, is
// the shortest value redaction hunts, by design, processor README "Redaction"), and the
// known storm's, when known holds spans. Each is searched in every output, not only in its
// own trace's spans.
func sentValues(t *testing.T, sent []agenttraffic.Trace, known ptrace.Traces, knownValues []string) *secretsSearch {
	t.Helper()
	index := map[string]int{}
	var values, sentIn []string
	own := func(traceID string, vs []string) map[int]bool {
		m := map[int]bool{}
		for _, v := range vs {
			i, ok := index[v]
			if !ok {
				i = len(values)
				index[v] = i
				values, sentIn = append(values, v), append(sentIn, traceID)
			}
			m[i] = true
		}
		return m
	}
	owns := make([]map[int]bool, len(sent))
	for i := range sent {
		owns[i] = own(sent[i].Truth.TraceID, sent[i].Truth.Secrets)
	}
	var knownOwn map[int]bool
	if known.SpanCount() > 0 {
		knownID := known.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String()
		knownOwn = own(knownID, knownValues)
	}
	if len(values) < 10 {
		t.Fatalf("agentsim's traffic carries only %d raw values: the test would prove little", len(values))
	}
	search := newSecretsSearch(t, values, sentIn)
	for i := range sent {
		search.learnSent(agenttraffic.TraceToPdata(&sent[i]), owns[i])
	}
	if known.SpanCount() > 0 {
		search.learnSent(known, knownOwn)
	}
	return search
}

// checkEveryShapeSearched: each shape that carries payloads has a kept trace with raw
// values, so its copies are searched.
func checkEveryShapeSearched(t *testing.T, truth []agenttraffic.Truth) {
	t.Helper()
	kept := map[agenttraffic.Shape]bool{}
	for _, tr := range truth {
		kept[tr.Shape] = kept[tr.Shape] || tr.Keep && len(tr.Secrets) > 0
	}
	for _, shape := range agenttraffic.AllShapes() {
		if !kept[shape] && shape.SendsPayloads() {
			t.Errorf("no kept trace of shape %s carries raw values: its copies go unsearched", shape)
		}
	}
}

// waitStormMetrics waits until the storms connector's prometheus exporter counts every
// storm of the truth and the known storm, and returns its exposition text.
func waitStormMetrics(t *testing.T, p *collectorProcess, port int, truth []agenttraffic.Truth) string {
	t.Helper()
	want := 1
	for _, tr := range truth {
		want += tr.Storms
	}
	if ok, status := poll(settleTimeout, func() (bool, string) {
		m, failed := scrapeWhile(t, p, port)
		if m == nil {
			return false, failed
		}
		got := int(m.sum(metricStormsTotal, nil))
		return got == want, fmt.Sprintf("connector: %d storms of %d", got, want)
	}); !ok {
		t.Errorf("the storms connector did not count every storm: %s", status)
	}
	return scrapeText(t, port)
}

// grpcLine reports a log line the gRPC library wrote (the collector marks them
// "grpc_log": true).
func grpcLine(line string) bool { return strings.Contains(line, `"grpc_log": true`) }

// checkHMAC: the known storm's argument and idempotency hashes, on its spans and in its
// record, are HMAC-SHA256 with the key.
func checkHMAC(t *testing.T, key, args string, known *spanBuilder, backend *faultyBackend, summary summaryFile) {
	bt := backendTraces(&backend.sink)[known.traceID()]
	if bt == nil {
		t.Fatal("the known storm trace never reached the backend")
	}
	wantArgs := hmacHex(key, args)
	wantIdem := hmacHex(key, secretIdem)
	attempts := 0
	for _, span := range bt.spans {
		if strAttr(span, "gen_ai.tool.name") == "" {
			continue
		}
		attempts++
		if got := strAttr(span, stormrecord.AttrArgsHash); got != wantArgs {
			plain := sha256.Sum256([]byte(args))
			t.Errorf("args hash %s, want HMAC %s (plain SHA-256 would be %s)", got, wantArgs, hex.EncodeToString(plain[:]))
		}
		if got := strAttr(span, stormrecord.AttrIdemHash); got != wantIdem {
			t.Errorf("idempotency hash %s, want HMAC %s", got, wantIdem)
		}
	}
	if attempts != 2 {
		t.Errorf("%d attempts of the known storm in the backend, want 2", attempts)
	}
	recs := summary.recordsOf(known.traceID())
	if len(recs) != 1 || recs[0].IdemHash == nil || *recs[0].IdemHash != wantIdem {
		t.Errorf("record of the known storm %+v: want idem_hash %s", recs, wantIdem)
	}
}

func hmacHex(key, msg string) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(msg))
	return hex.EncodeToString(mac.Sum(nil))
}

// allBackendStrings joins every string the backend could show: span names, status
// messages, tracestate, attributes, events, links, resources and scopes.
func allBackendStrings(b *faultyBackend) string {
	var sb strings.Builder
	for _, td := range b.sink.AllTraces() {
		eachPlace(td, func(_, _ string, l located) {
			sb.WriteString(l.text)
			sb.WriteByte('\n')
		})
	}
	return sb.String()
}

// allLogStrings joins every string of the log records the logs backend received.
func allLogStrings(sink *consumertest.LogsSink) string {
	var sb strings.Builder
	for _, ld := range sink.AllLogs() {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			rl := ld.ResourceLogs().At(i)
			for _, l := range appendMapLocated(nil, "", rl.Resource().Attributes().AsRaw()) {
				sb.WriteString(l.text + "\n")
			}
			for j := 0; j < rl.ScopeLogs().Len(); j++ {
				lrs := rl.ScopeLogs().At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					for _, l := range logRecordLocated(lrs.At(k)) {
						sb.WriteString(l.text + "\n")
					}
				}
			}
		}
	}
	return sb.String()
}

// scrapeText returns the collector's metrics exposition as text.
func scrapeText(t *testing.T, port int) string {
	t.Helper()
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatalf("scrape collector metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read collector metrics: %v", err)
	}
	return string(body)
}

// TestReliabilityKeyNeverInline: the config refuses an HMAC key written in the YAML, also
// when it is expanded there from the environment, and the error does not echo it; a key
// source that yields nothing stops the collector with an error that names the source.
func TestReliabilityKeyNeverInline(t *testing.T) {
	key := newKey(t)
	for name, hashing := range map[string]any{
		"literal":          yamlMap{"key": key},
		"from env in YAML": yamlMap{"key": "${env:" + keyEnvName + "}"},
		"flow style":       flowMap("key", key, "redact_payloads", true),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := newStormConfig(t, dir)
			cfg.Processor = yamlMap{"hashing": hashing}
			config := cfg.collector().write(t, filepath.Join(dir, "collector.yaml"))
			out, code := runCollector(t, []string{keyEnvName + "=" + key}, "validate", "--config", config)
			if code == 0 {
				t.Fatalf("validate accepted an inline hashing.key:\n%s", out)
			}
			if !strings.Contains(out, "hashing.key is not allowed: put the key in key_file or key_env") {
				t.Errorf("validate output does not say why:\n%s", out)
			}
			if strings.Contains(out, key) {
				t.Errorf("validate echoed the key:\n%s", out)
			}
		})
	}
	emptyKey := filepath.Join(t.TempDir(), "empty.key")
	if err := os.WriteFile(emptyKey, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		hashing yamlMap
		want    string
	}{
		"unset variable": {yamlMap{"key_env": "RETRYSTORM_E2E_UNSET_KEY"}, "environment variable RETRYSTORM_E2E_UNSET_KEY is not set"},
		"empty key file": {yamlMap{"key_file": emptyKey}, "hashing.key_file " + emptyKey + " is empty"},
		"missing file":   {yamlMap{"key_file": "/nonexistent/retrystorm.key"}, "read hashing.key_file /nonexistent/retrystorm.key"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := newStormConfig(t, dir)
			cfg.NoBackend = true
			cfg.Processor = yamlMap{"hashing": c.hashing}
			config := cfg.collector().write(t, filepath.Join(dir, "collector.yaml"))
			p := startCollector(t, config, filepath.Join(dir, "collector.log"))
			if !p.waitExit(readyTimeout) {
				t.Fatalf("collector still running %s without a usable key", readyTimeout)
			}
			if p.waitErr == nil || !strings.Contains(p.log(), c.want) {
				t.Errorf("exit %v; want an error saying %q:\n%s", p.waitErr, c.want, tail(p.log(), 3))
			}
		})
	}
}
