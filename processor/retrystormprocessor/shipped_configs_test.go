package retrystormprocessor

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// keyedDigest digests cfg as YAML keys and values (confmap's marshalling, JSON with its
// keys sorted), so it names what the configuration says, not how Go holds it.
func keyedDigest(t *testing.T, cfg *Config) string {
	conf := confmap.New()
	require.NoError(t, conf.Marshal(cfg))
	b, err := json.Marshal(conf.ToStringMap())
	require.NoError(t, err)
	return fmt.Sprintf("%x", sha256.Sum256(b))[:12]
}

// shippedConfigs are the collector configurations in the repository that configure
// retry_storm, with what loading each retry_storm processor in them over the factory's
// defaults gives: "ok" with the digest of the result (keyedDigest), or the error.
var shippedConfigs = map[string]string{
	// The digests changed once, when the buffering key (default true) joined the
	// configuration; without it each is what it was before the blocks moved.
	"defaults":                                  "ok 49a478e49e3c",
	"bench/retry_storm.yaml retry_storm":        "ok 49a478e49e3c",
	"config/demo.yaml retry_storm":              "ok ff52b4ce3323",
	"config/jaeger.yaml retry_storm":            "ok ff52b4ce3323",
	"config/observability.yaml retry_storm":     "ok ff52b4ce3323",
	"config/production.yaml retry_storm":        "ok f380b7c4eb30",
	"config/tail-sampling.yaml retry_storm":     "ok 6db90e176ed7",
	"config/two-tier/tier2.yaml retry_storm":    "ok ff52b4ce3323",
	"e2e/testdata/unknown_key.yaml retry_storm": "decoding failed due to the following error(s):; ; 'sampling' has invalid keys: clean_percentage",
}

// TestShippedConfigsValidate loads every retry_storm processor the repository's collector
// configurations set up, as the collector does (the factory's defaults, the YAML over them,
// Validate), so a change to the configuration's Go shape cannot change what they mean.
func TestShippedConfigsValidate(t *testing.T) {
	var files []string
	for _, pattern := range []string{"config/*.yaml", "config/*/*.yaml", "e2e/testdata/*.yaml", "bench/*.yaml"} {
		m, err := filepath.Glob(filepath.Join("..", "..", pattern))
		require.NoError(t, err)
		files = append(files, m...)
	}
	got := map[string]string{"defaults": "ok " + keyedDigest(t, createDefaultConfig().(*Config))}
	for _, file := range files {
		cm, err := confmaptest.LoadConf(file)
		require.NoError(t, err, file)
		if _, ok := cm.Get("processors").(map[string]any); !ok {
			continue // a builder manifest, not a collector's configuration
		}
		procs, err := cm.Sub("processors")
		require.NoError(t, err)
		for name := range procs.ToStringMap() {
			var id component.ID
			require.NoError(t, id.UnmarshalText([]byte(name)), file)
			if id.Type() != metadata.Type {
				continue
			}
			sub, err := procs.Sub(name)
			require.NoError(t, err)
			cfg := createDefaultConfig().(*Config)
			if err = sub.Unmarshal(cfg); err == nil {
				err = confmap.Validate(cfg)
			}
			result := "ok " + keyedDigest(t, cfg)
			if err != nil {
				result = strings.ReplaceAll(err.Error(), "\n", "; ")
			}
			got[filepath.ToSlash(strings.TrimPrefix(file, filepath.Join("..", "..")+string(filepath.Separator)))+" "+name] = result
		}
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%q: %q,", k, got[k]) // the table to paste, when a shipped file changes
	}
	assert.Equal(t, shippedConfigs, got)
}

// TestReadmeDefaultsAreTheFactoryDefaults: the defaults the README's Configuration section
// lists load to exactly what the factory gives.
func TestReadmeDefaultsAreTheFactoryDefaults(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	section := string(readme)[strings.Index(string(readme), "## Configuration"):]
	start := strings.Index(section, "```yaml\n") + len("```yaml\n")
	block := section[start : start+strings.Index(section[start:], "```")]
	file := filepath.Join(t.TempDir(), "defaults.yaml")
	require.NoError(t, os.WriteFile(file, []byte(block), 0o600))
	cm, err := confmaptest.LoadConf(file)
	require.NoError(t, err)
	sub, err := cm.Sub("processors::retry_storm")
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	if len(cfg.Sampling.Tools) == 0 {
		cfg.Sampling.Tools = nil // `tools: {}` lists none, as the default's nil does
	}
	assert.Equal(t, createDefaultConfig(), cfg)
}
