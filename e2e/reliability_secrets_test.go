//go:build e2e

package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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
	runSecrets(t, key, "    hashing:\n      key_env: "+keyEnvName, keyEnvName+"="+key)
}

func TestReliabilitySecretsKeyFile(t *testing.T) {
	key := newKey(t)
	path := filepath.Join(t.TempDir(), "hash.key")
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runSecrets(t, key, "    hashing:\n      key_file: "+path)
}

func newKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "rs-e2e-key-" + hex.EncodeToString(b)
}

func runSecrets(t *testing.T, key, hashing string, env ...string) {
	dir := t.TempDir()
	agentsim := buildAgentsim(t, dir)
	cfg := newRelConfig(t, dir)
	cfg.LogLevel = "debug"
	cfg.ProcessorExtra = hashing
	backend := startFaultyBackend(t, cfg.BackendPort)
	logPath := filepath.Join(dir, "collector.log")
	p := startCollectorEnv(t, cfg.write(t, dir, "collector.yaml"), logPath, env...)
	p.waitListening(t, cfg.OTLPPort)

	truthPath := filepath.Join(dir, "truth.jsonl")
	runAgentsim(t, agentsim, "--endpoint", fmt.Sprintf("127.0.0.1:%d", cfg.OTLPPort), "--rate", "0",
		"--count", strconv.Itoa(secretsCount), "--every-scenario", "--seed", strconv.Itoa(secretsSeed),
		"--service", agentService, "--truth", truthPath)
	truth := readTruth(t, truthPath)
	// A storm whose arguments and idempotency key are known, to check the HMAC.
	args := `{"account":"` + secretAccount + `"}`
	known := stormTrace("secrets-hmac", "transfer_funds", args)
	for i := 1; i < known.spans.Len(); i++ {
		known.spans.At(i).Attributes().PutStr("idempotency_key", secretIdem)
	}
	client := dialOTLP(t, cfg.OTLPPort)
	client.mustExport(t, known.td)
	spans := known.td.SpanCount()
	secrets := []string{secretAccount, secretIdem}
	for _, tr := range truth {
		spans += tr.Spans
		secrets = append(secrets, tr.Secrets...)
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
	backendStrings := allBackendStrings(backend)
	t.Run("no raw payload in the outputs", func(t *testing.T) {
		for _, secret := range secrets {
			if strings.Contains(string(summary.raw), secret) {
				t.Errorf("the summary file holds the raw payload %q", secret)
			}
			if strings.Contains(backendStrings, secret) {
				t.Errorf("the backend received the raw payload %q", secret)
			}
			if strings.Contains(log, secret) {
				t.Errorf("the collector log holds the raw payload %q", secret)
			}
			if strings.Contains(metricsText, secret) {
				t.Errorf("the metrics hold the raw payload %q", secret)
			}
		}
		t.Logf("%d raw payload strings searched in %d bytes of summaries, %d of backend strings, %d of log, %d of metrics",
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
		for _, s := range bt.resource {
			sb.WriteString(s)
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
	for name, hashing := range map[string]string{
		"literal":          "    hashing:\n      key: " + key,
		"from env in YAML": "    hashing:\n      key: ${env:" + keyEnvName + "}",
		"flow style":       "    hashing: {key: \"" + key + "\", redact_payloads: true}",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := newRelConfig(t, dir)
			cfg.ProcessorExtra = hashing
			out, code := runBinary(t, []string{keyEnvName + "=" + key}, "validate", "--config", cfg.write(t, dir, "collector.yaml"))
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
	for name, c := range map[string]struct{ hashing, want string }{
		"unset variable": {"    hashing:\n      key_env: RETRYSTORM_E2E_UNSET_KEY", "environment variable RETRYSTORM_E2E_UNSET_KEY is not set"},
		"empty key file": {"    hashing:\n      key_file: " + emptyKey, "hashing.key_file " + emptyKey + " is empty"},
		"missing file":   {"    hashing:\n      key_file: /nonexistent/retrystorm.key", "read hashing.key_file /nonexistent/retrystorm.key"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := newRelConfig(t, dir)
			cfg.NoBackend = true
			cfg.ProcessorExtra = c.hashing
			p := startCollectorEnv(t, cfg.write(t, dir, "collector.yaml"), filepath.Join(dir, "collector.log"))
			select {
			case <-p.exited:
			case <-time.After(readyTimeout):
				t.Fatalf("collector still running %s without a usable key", readyTimeout)
			}
			if p.waitErr == nil || !strings.Contains(p.log(), c.want) {
				t.Errorf("exit %v; want an error saying %q:\n%s", p.waitErr, c.want, tail(p.log(), 3))
			}
		})
	}
}

// runBinary runs the collector binary with extra environment and returns its output and
// exit code.
func runBinary(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, collectorBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if exitErr, ok := err.(*exec.ExitError); ok && ctx.Err() == nil {
		return string(out), exitErr.ExitCode()
	}
	if err != nil {
		t.Fatalf("run %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), 0
}
