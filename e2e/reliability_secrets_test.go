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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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
// through a collector with redaction on (the default) and an HMAC key, logging at debug
// level. No raw argument, result or idempotency key reaches the backend or the summary
// file, and the key appears in no log line, metric, span, record or error; the hashes on
// the spans are HMAC-SHA256 with that key.
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
		if shape == agenttraffic.ShapeSeedRecord {
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

// withoutGRPCLines drops the log lines the gRPC library wrote (the collector marks them
// "grpc_log": true).
func withoutGRPCLines(log string) string {
	var b strings.Builder
	for line := range strings.Lines(log) {
		if !strings.Contains(line, `"grpc_log": true`) {
			b.WriteString(line)
		}
	}
	return b.String()
}

// secretsTraffic sends agentsim traffic to the collector and returns its truth and how
// many spans it sent.
type secretsTraffic func(t *testing.T, dir string, cfg stormConfig, p *collectorProcess, client *otlpClient) ([]agenttraffic.Truth, int)

// sendAgentsim runs the agentsim binary: every scenario, then the mix.
func sendAgentsim(t *testing.T, dir string, cfg stormConfig, _ *collectorProcess, _ *otlpClient) ([]agenttraffic.Truth, int) {
	agentsim := buildAgentsim(t, dir)
	var truth []agenttraffic.Truth
	runs := [][]string{{"--count", strconv.Itoa(secretsCount), "--every-scenario", "--seed", strconv.Itoa(secretsSeed)}}
	for i, st := range stormPerShape() {
		runs = append(runs, []string{"--count", "1", "--shapes", string(st.shape), "--scenarios", string(st.scenario),
			"--seed", strconv.Itoa(secretsSeed + 1 + i)})
	}
	for i, args := range runs {
		truthPath := filepath.Join(dir, fmt.Sprintf("truth%d.jsonl", i))
		runAgentsim(t, agentsim, append(args, "--endpoint", fmt.Sprintf("127.0.0.1:%d", cfg.OTLPPort), "--rate", "0",
			"--service", agentService, "--truth", truthPath)...)
		truth = append(truth, readTruth(t, truthPath)...)
	}
	spans := 0
	for _, tr := range truth {
		spans += tr.Spans
	}
	return truth, spans
}

// lateCopyMark starts the span ids of the late copies sendInPieces sends, so the leak
// table can tell them apart (three bytes: a planned id starts so once in 16M).
var lateCopyMark = [3]byte{0xfd, 0x5e, 0x7c}

// sendInPieces deals the same scenarios' spans into shuffled requests; once they are
// decided it sends, for every trace the collector keeps, its copy-carrying non-tool spans
// again under new span ids.
func sendInPieces(t *testing.T, _ string, cfg stormConfig, p *collectorProcess, client *otlpClient) ([]agenttraffic.Truth, int) {
	traces := generate(t, agenttraffic.Config{Seed: secretsSeed, EveryScenario: true}, secretsCount)
	for i, st := range stormPerShape() {
		traces = append(traces, generate(t, agenttraffic.Config{Seed: secretsSeed + 1 + uint64(i), Shapes: []agenttraffic.Shape{st.shape},
			Scenarios: agenttraffic.ScenarioWeights{st.scenario: 1}}, 1)...)
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
	return truthOf(traces), spans + late
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

// runSecretsWith runs send into a collector with retry_storm hashing configured by hashing.
func runSecretsWith(t *testing.T, key string, hashing yamlMap, adjust func(*stormConfig), send secretsTraffic, env ...string) {
	dir := t.TempDir()
	cfg := newStormConfig(t, dir)
	cfg.LogLevel = "debug"
	cfg.Processor = yamlMap{"hashing": hashing}
	if adjust != nil {
		adjust(&cfg)
	}
	backend := startFaultyBackend(t, cfg.BackendPort)
	p := startStormCollector(t, dir, cfg, env...)
	client := dialOTLP(t, cfg.OTLPPort)

	truth, spans := send(t, dir, cfg, p, client)
	// A storm whose arguments and idempotency key are known, to check the HMAC.
	args := `{"account":"` + secretAccount + `"}`
	known := stormTrace("secrets-hmac", "transfer_funds", args)
	for i := 1; i < known.Spans.Len(); i++ {
		known.Spans.At(i).Attributes().PutStr("idempotency_key", secretIdem)
	}
	client.mustExport(t, known.Traces)
	spans += known.Traces.SpanCount()
	knownSecrets := []string{secretAccount, secretIdem}
	secrets := slices.Clone(knownSecrets)
	for _, tr := range truth {
		secrets = append(secrets, tr.Secrets...)
	}
	kept := map[agenttraffic.Shape]bool{}
	for _, tr := range truth {
		kept[tr.Shape] = kept[tr.Shape] || tr.Keep && len(tr.Secrets) > 0
	}
	for _, shape := range agenttraffic.AllShapes() {
		if !kept[shape] && shape != agenttraffic.ShapeSeedRecord {
			t.Errorf("no kept trace of shape %s carries raw values: its copies go unsearched", shape)
		}
	}
	if len(secrets) < 10 {
		t.Fatalf("agentsim's traffic carries only %d secrets: the test would prove little", len(secrets))
	}
	waitSettled(t, p, cfg.MetricsPort, spans)
	waitBackendDrained(t, p, cfg.MetricsPort)
	metricsText := scrapeText(t, cfg.MetricsPort)
	p.stop(t)

	summary := readSummaryFile(t, cfg.SummaryPath)
	log := p.log()
	ownLog := withoutGRPCLines(log)
	backendStrings := allBackendStrings(backend)
	t.Run("no raw payload in the outputs", func(t *testing.T) {
		leaks := leakTable{}
		traces := backendTraces(&backend.sink)
		for _, tr := range truth {
			if bt := traces[tr.TraceID]; bt != nil {
				leaks.searchTrace(bt, tr.Secrets)
			}
		}
		if bt := traces[known.traceID()]; bt != nil {
			leaks.searchTrace(bt, knownSecrets)
		}
		for _, secret := range secrets {
			if strings.Contains(string(summary.raw), secret) {
				leaks.add("summary file", "", "", secret)
			}
			// Log and metrics text is searched for the value as a word: the 8-byte
			// payload words ("accepted") are also parts of metric names. gRPC's own
			// transport lines are left out: they never see a payload, and a tool's error
			// text such as "connection reset by peer" is also what gRPC logs when agentsim
			// hangs up.
			if containsWord(ownLog, secret) {
				leaks.add("collector log", "", "", secret)
			}
			if containsWord(metricsText, secret) {
				leaks.add("metrics", "", "", secret)
			}
		}
		if len(leaks.rows) > 0 {
			t.Errorf("%d of %d raw payload values reached an output, by place:\n%s", len(leaks.seen), len(secrets), leaks)
		}
		t.Logf("%d raw payload values searched in %d bytes of summaries, %d of backend strings, %d of log, %d of metrics",
			len(secrets), len(summary.raw), len(backendStrings), len(log), len(metricsText))
	})
	t.Run("key never shown", func(t *testing.T) {
		for what, text := range map[string]string{"summary file": string(summary.raw), "backend spans": backendStrings,
			"collector log": log, "metrics": metricsText} {
			if strings.Contains(text, key) {
				t.Errorf("the %s holds the HMAC key", what)
			}
		}
	})
	t.Run("hashes are HMAC-SHA256 with the key", func(t *testing.T) {
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
	})
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
	for _, bt := range backendTraces(&b.sink) {
		for _, span := range bt.spans {
			for _, s := range spanStrings(span) {
				sb.WriteString(s)
				sb.WriteByte('\n')
			}
		}
		for _, l := range bt.resource {
			sb.WriteString(l.text)
			sb.WriteByte('\n')
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

// leakTable collects where raw payload values were found, one row per output, span name
// and place (list indexes in attribute keys folded into N).
type leakTable struct {
	rows map[[3]string]*leakRow
	seen map[string]bool
}

type leakRow struct {
	values  map[string]bool
	example string
}

var (
	keyIndex   = regexp.MustCompile(`\.[0-9]+(\.|$)`)
	spanNumber = regexp.MustCompile(`^step [0-9]+$`)
)

func (l *leakTable) add(output, span, where, secret string) {
	if l.rows == nil {
		l.rows, l.seen = map[[3]string]*leakRow{}, map[string]bool{}
	}
	k := [3]string{output, span, keyIndex.ReplaceAllString(where, ".N$1")}
	r := l.rows[k]
	if r == nil {
		r = &leakRow{values: map[string]bool{}, example: secret}
		l.rows[k] = r
	}
	r.values[secret] = true
	l.seen[secret] = true
}

// searchTrace searches every place of a trace's spans, resources and scopes for its values.
func (l *leakTable) searchTrace(bt *backendTrace, secrets []string) {
	for _, span := range bt.spans {
		name := spanNumber.ReplaceAllString(span.Name(), "step N")
		if id := span.SpanID(); [3]byte(id[:3]) == lateCopyMark {
			name += " (late)"
		}
		for _, loc := range spanLocated(span) {
			for _, secret := range secrets {
				if strings.Contains(loc.text, secret) {
					l.add("backend", name, loc.where, secret)
				}
			}
		}
	}
	for _, loc := range bt.resource {
		for _, secret := range secrets {
			if strings.Contains(loc.text, secret) {
				l.add("backend", "", loc.where, secret)
			}
		}
	}
}

func (l leakTable) String() string {
	keys := slices.Collect(maps.Keys(l.rows))
	slices.SortFunc(keys, func(a, b [3]string) int {
		return strings.Compare(strings.Join(a[:], "\x00"), strings.Join(b[:], "\x00"))
	})
	var b strings.Builder
	fmt.Fprintf(&b, "  %-14s %-36s %-58s %6s  %s\n", "output", "span", "where", "values", "example")
	for _, k := range keys {
		r := l.rows[k]
		fmt.Fprintf(&b, "  %-14s %-36s %-58s %6d  %q\n", k[0], k[1], k[2], len(r.values), r.example)
	}
	return b.String()
}

// containsWord reports s in text with no letter, digit or '_' right before or after it.
func containsWord(text, s string) bool {
	word := func(c byte) bool {
		return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	for from := 0; ; {
		i := strings.Index(text[from:], s)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(s)
		if (i == 0 || !word(text[i-1]) || !word(s[0])) && (end == len(text) || !word(text[end]) || !word(s[len(s)-1])) {
			return true
		}
		from = i + 1
	}
}
