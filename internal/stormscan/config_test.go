package stormscan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScanReadsTheCollectorConfiguration: --config takes the retry_storm section of a
// collector configuration, its ${env:...} references resolved, and the storm_summary
// exporter's include; the settings change what is recorded.
func TestScanReadsTheCollectorConfiguration(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "collector.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`
receivers:
  otlp:
    protocols: {grpc: {endpoint: 127.0.0.1:4317}}
processors:
  batch: {}
  retry_storm:
    storm_threshold: ${env:SCAN_TEST_THRESHOLD}
    completeness:
      required: [run_id, call_id, attempt, tool_name, args_hash, status, t_start, t_end]
exporters:
  storm_summary:
    path: /nonexistent/storms.jsonl
    include: [storm, finding]
service:
  pipelines:
    traces: {receivers: [otlp], processors: [retry_storm], exporters: [storm_summary]}
`), 0o600))
	t.Setenv("SCAN_TEST_THRESHOLD", "4")
	res := scanWith(t, attemptLogExample, "--config", cfg, "--json")
	require.Equal(t, 0, res.code, res.stderr)
	report := scanJSON(t, res.stdout)
	assert.Zero(t, report.StormSpans, "three attempts are no storm at storm_threshold 4")

	t.Setenv("SCAN_TEST_THRESHOLD", "2")
	incomplete := `{"event":"tool_attempt","run_id":"r","span_id":"x","attempt":1,"tool_name":"fetch","status":"ok","t_start":1,"t_end":2}` + "\n"
	res = scanWith(t, attemptLogExample+incomplete, "--config", cfg, "--json")
	require.Equal(t, 0, res.code, res.stderr)
	report = scanJSON(t, res.stdout)
	assert.Equal(t, 1, report.StormSpans)
	assert.Equal(t, 1, report.IncompleteEvents, "the per-attempt scanner's gate: the fetch attempt lacks args_hash, and include has finding")

	res = scanWith(t, attemptLogExample+incomplete, "--config", cfg, "--include", "storm", "--json")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Zero(t, scanJSON(t, res.stdout).IncompleteEvents, "--include overrides the exporter's include")

	two := filepath.Join(dir, "two.yaml")
	require.NoError(t, os.WriteFile(two, []byte("processors:\n  retry_storm/a: {}\n  retry_storm/b: {storm_threshold: 5}\n"), 0o600))
	res = scanWith(t, attemptLogExample, "--config", two)
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "several retry_storm under processors (retry_storm/a, retry_storm/b)")
	res = scanWith(t, attemptLogExample, "--config", two, "--processor", "b", "--json")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Zero(t, scanJSON(t, res.stdout).StormSpans, "retry_storm/b's threshold")

	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("processors:\n  retry_storm: {storm_threshold: 1}\n"), 0o600))
	res = scanWith(t, attemptLogExample, "--config", bad)
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "storm_threshold")
	none := filepath.Join(dir, "none.yaml")
	require.NoError(t, os.WriteFile(none, []byte("processors:\n  batch: {}\n"), 0o600))
	res = scanWith(t, attemptLogExample, "--config", none)
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "no retry_storm processor")
}

// TestScanHashesWithTheGivenKey: --key-env gives the HMAC key, as hashing.key_env does:
// argument hashes of spans carrying raw arguments differ from the unkeyed ones.
func TestScanHashesWithTheGivenKey(t *testing.T) {
	tr := newTraffic(t, 2, 30)
	in := filepath.Join(t.TempDir(), "traces.json")
	writeJSONLines(t, in, tr.requests())
	plain := scanWith(t, "", "--json", in)
	require.Equal(t, 0, plain.code, plain.stderr)
	t.Setenv("SCAN_TEST_KEY", "a key of thirty-two bytes or more, for the test")
	keyed := scanWith(t, "", "--json", "--key-env", "SCAN_TEST_KEY", in)
	require.Equal(t, 0, keyed.code, keyed.stderr)
	pr, kr := scanJSON(t, plain.stdout), scanJSON(t, keyed.stdout)
	assert.Equal(t, pr.StormSpans, kr.StormSpans, "the key changes hashes, not findings")
	assert.NotEqual(t, plain.stdout, keyed.stdout, "keyed hashes differ")
	res := scanWith(t, "", "--key-env", "SCAN_TEST_UNSET_KEY", in)
	assert.Equal(t, 2, res.code, "an empty key variable is a configuration error, as at a collector's start: %s", res.stderr)
}
