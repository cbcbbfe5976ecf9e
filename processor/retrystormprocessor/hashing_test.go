package retrystormprocessor

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
)

const canonicalArgs = `{"amount":42,"order":"A-17"}`

// argsHashOfKeptStorm runs a storm trace through a processor and returns the args hash
// written on its attempts.
func argsHashOfKeptStorm(t *testing.T, cfg *Config) (string, map[string]any) {
	t.Helper()
	h := newHarness(t, cfg, nil, buffer.WithSynchronous())
	h.Consume(buffertest.StormTrace(buffertest.TraceID(1)))
	h.Advance(2 * time.Second)
	for _, s := range buffertest.SinkSpans(h.Sink)[buffertest.TraceID(1)] {
		if !s.ParentSpanID().IsEmpty() {
			raw := s.Attributes().AsRaw()
			return raw[stormrecord.AttrArgsHash].(string), raw
		}
	}
	t.Fatal("storm trace not forwarded")
	return "", nil
}

func TestHashingWithoutKeyIsSHA256(t *testing.T) {
	got, _ := argsHashOfKeptStorm(t, testConfig())
	sum := sha256.Sum256([]byte(canonicalArgs))
	assert.Equal(t, hex.EncodeToString(sum[:]), got)
}

func TestHashingKeyFromEnvironment(t *testing.T) {
	const key = "an-hmac-key-of-decent-length"
	t.Setenv("RETRYSTORM_TEST_KEY", key)
	cfg := testConfig()
	cfg.Hashing.KeyEnv = "RETRYSTORM_TEST_KEY"
	got, _ := argsHashOfKeptStorm(t, cfg)
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(canonicalArgs))
	assert.Equal(t, hex.EncodeToString(mac.Sum(nil)), got)
}

func TestHashingKeyFromFile(t *testing.T) {
	const key = "file-held-hmac-key-0123456789"
	path := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(path, []byte(key+"\n"), 0o600))
	cfg := testConfig()
	cfg.Hashing.KeyFile = path
	got, _ := argsHashOfKeptStorm(t, cfg)
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(canonicalArgs))
	assert.Equal(t, hex.EncodeToString(mac.Sum(nil)), got, "a trailing newline is not part of the key")
}

func TestHashingKeyErrorsNameTheSourceNotTheKey(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	t.Setenv("RETRYSTORM_EMPTY_KEY", "")
	tests := []struct {
		name    string
		hashing HashingConfig
		want    string
	}{
		{"missing file", HashingConfig{KeyFile: filepath.Join(dir, "nope")}, "read hashing.key_file " + filepath.Join(dir, "nope")},
		{"empty file", HashingConfig{KeyFile: empty}, "hashing.key_file " + empty + " is empty"},
		{"unset variable", HashingConfig{KeyEnv: "RETRYSTORM_UNSET_KEY"}, "hashing.key_env: environment variable RETRYSTORM_UNSET_KEY is not set"},
		{"empty variable", HashingConfig{KeyEnv: "RETRYSTORM_EMPTY_KEY"}, "hashing.key_env: environment variable RETRYSTORM_EMPTY_KEY is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Hashing = tt.hashing
			p := newUnstarted(t, cfg)
			err := p.Start(context.Background(), componenttest.NewNopHost())
			require.ErrorContains(t, err, tt.want)
			require.NoError(t, p.Shutdown(context.Background()), "shutdown after a failed start")
		})
	}
}

func TestRedactPayloadsOff(t *testing.T) {
	cfg := testConfig()
	cfg.Hashing.RedactPayloads = false
	_, attrs := argsHashOfKeptStorm(t, cfg)
	assert.Contains(t, attrs, "gen_ai.tool.call.arguments")
}

func TestLateSpansAreNotRedactedWhenRedactionIsOff(t *testing.T) {
	cfg := testConfig()
	cfg.Hashing.RedactPayloads = false
	h := newHarness(t, cfg, nil, buffer.WithSynchronous())
	h.Consume(buffertest.StormTrace(buffertest.TraceID(1)))
	h.Advance(2 * time.Second)
	h.Consume(buffertest.LateAttempt(buffertest.TraceID(1), "charge_card", "call-9", 5000))
	spans := buffertest.SinkSpans(h.Sink)[buffertest.TraceID(1)]
	require.Len(t, spans, 5)
	assert.Contains(t, spans[4].Attributes().AsRaw(), "gen_ai.tool.call.arguments")
}
