package stormscan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/internal/stormreport"
)

// attemptLogExample is the labeled per-attempt example (../shared/seeds/000): one
// charge_card call tried three times.
const attemptLogExample = fixtures.AttemptLogExample

// TestScanAttemptLogExample reads the labeled example from stdin: one storm record, the call the
// processor makes of the three attempts (the same as of spans carrying the fields), and
// with --attempt-report the per-attempt scanner's numbers for it.
func TestScanAttemptLogExample(t *testing.T) {
	out := filepath.Join(t.TempDir(), "records.jsonl")
	res := scanWith(t, attemptLogExample, "-o", out, "--json")
	require.Equal(t, 0, res.code, res.stderr)
	report := scanJSON(t, res.stdout)
	assert.EqualValues(t, 3, report.Scan.LoggedAttempts)
	require.Len(t, report.TopStorms, 1)
	s := report.TopStorms[0]
	assert.Equal(t, "span_19", s.SpanID)
	assert.Equal(t, "charge_card", s.ToolName)
	assert.Equal(t, 3, s.Attempts)
	assert.Equal(t, []string{"timeout", "error", "ok"}, s.Statuses)
	assert.EqualValues(t, 7680, s.MS)

	files, err := stormreport.ResolveFiles([]string{out})
	require.NoError(t, err)
	input, err := stormreport.Read(files)
	require.NoError(t, err)
	require.Len(t, input.Records, 1)
	r := input.Records[0]
	require.NotNil(t, r.Class)
	assert.Equal(t, "transient_dependency", *r.Class)
	assert.Equal(t, "executor", string(r.Layer))
	require.NotNil(t, r.RunID)
	assert.Equal(t, "run_7f3", *r.RunID)
	require.NotNil(t, r.FailedTokensIn)
	assert.EqualValues(t, 1602, *r.FailedTokensIn)
	assert.Equal(t, "2025-09-09T02:40:07.8Z", r.Time)

	res = scanWith(t, attemptLogExample, "--attempt-report")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, fixtures.AttemptLogExampleReport, res.stdout)
}

// TestDeprecatedAttemptLogNames: --seed-report and --format seed, the names the per-attempt
// report and format had, still work and do what --attempt-report and --format attempt-log do.
func TestDeprecatedAttemptLogNames(t *testing.T) {
	res := scanWith(t, attemptLogExample, "--seed-report")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, fixtures.AttemptLogExampleReport, res.stdout)

	want := scanWith(t, attemptLogExample, "--format", "attempt-log", "--json")
	require.Equal(t, 0, want.code, want.stderr)
	got := scanWith(t, attemptLogExample, "--format", "seed", "--json")
	require.Equal(t, 0, got.code, got.stderr)
	assert.JSONEq(t, want.stdout, got.stdout)
	assert.EqualValues(t, 3, scanJSON(t, got.stdout).Scan.LoggedAttempts)
}

// TestScanAttemptLogInAllItsShapes: missing fields, status flips, other events and bad
// lines. The attempt report gates on completeness as the per-attempt scanner does; the records
// follow completeness.required (the processor's default asks for tool_name only; the
// configuration test sets the per-attempt scanner's gate); bad lines are named with file and line and
// counted.
func TestScanAttemptLogInAllItsShapes(t *testing.T) {
	lines := []string{
		`{"event":"run_start","run_id":"r1"}`,
		`{"event":"tool_attempt","run_id":"r1","span_id":"a","attempt":1,"tool_name":"search","args_hash":"h1","status":"error","t_start":1000,"t_end":1100}`,
		`{"event":"tool_attempt","run_id":"r1","span_id":"a","attempt":2,"tool_name":"search","args_hash":"h2","status":"ok","t_start":1200,"t_end":1300}`,
		`not json at all`,
		`{"event":"tool_attempt","run_id":"r1","span_id":"b","attempt":1,"tool_name":"fetch","status":"ok","t_start":1400,"t_end":1500}`,
		``,
		`{"event":"tool_attempt","run_id":"r2","span_id":"c","attempt":"1","tool_name":"pay","args_hash":"h3","status":"ok","t_start":"2000","t_end":"2100"}`,
		`{"event":"tool_attempt","run_id":"r2","span_id":"c","attempt":"2","tool_name":"pay","args_hash":"h3","status":"ok","t_start":"2200","t_end":"2300"}`,
		`[1, 2]`,
	}
	path := filepath.Join(t.TempDir(), "attempts.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600))

	res := scanWith(t, "", "--attempt-report", path)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, `"tool_events": 5`)
	assert.Contains(t, res.stdout, `"incomplete_events": 1`, "the fetch attempt lacks args_hash")
	assert.Contains(t, res.stdout, `"spans": 2`)
	assert.Contains(t, res.stdout, `"storm_spans": 2`)
	assert.Contains(t, res.stdout, `"status_flip_spans": 1`)
	assert.Contains(t, res.stderr, "attempts.jsonl:4: ")
	assert.Contains(t, res.stderr, "attempts.jsonl:9: ")

	res = scanWith(t, "", "--json", "--include", "storm,failure,finding", path)
	require.Equal(t, 0, res.code, res.stderr)
	report := scanJSON(t, res.stdout)
	assert.EqualValues(t, 5, report.Scan.LoggedAttempts)
	assert.EqualValues(t, 2, report.Scan.BadLines)
	assert.EqualValues(t, 1, report.Scan.SkippedLines, "run_start is not an attempt")
	assert.Equal(t, 2, report.StormSpans)
	classes := map[string]int{}
	for _, c := range report.ByClass {
		classes[c.Class] = c.Storms
	}
	assert.Equal(t, map[string]int{"changed_arguments": 1, "retry_after_success": 1}, classes)
}
