package stormscan

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormreport"
)

// traffic is agentsim's traffic of one seed: its traces and the ground truth file.
type traffic struct {
	traces []agenttraffic.Trace
	truth  string
}

func newTraffic(t *testing.T, seed uint64, n int) traffic {
	t.Helper()
	gen, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: seed, EveryScenario: true, Interval: time.Millisecond,
		Service: "agent", Base: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)})
	require.NoError(t, err)
	tr := traffic{traces: gen.Generate(n), truth: filepath.Join(t.TempDir(), "truth.jsonl")}
	var lines bytes.Buffer
	for i := range tr.traces {
		line, err := json.Marshal(&tr.traces[i].Truth)
		require.NoError(t, err)
		lines.Write(append(line, '\n'))
	}
	require.NoError(t, os.WriteFile(tr.truth, lines.Bytes(), 0o600))
	return tr
}

// requests are the traffic as an exporter sends it: one request per trace.
func (tr traffic) requests() []ptrace.Traces {
	out := make([]ptrace.Traces, len(tr.traces))
	for i := range tr.traces {
		out[i] = agenttraffic.TraceToPdata(&tr.traces[i])
	}
	return out
}

// pieces are the traffic in n pieces per trace, spans in end order, the root in the last:
// piece k of every trace, then piece k+1 of every trace.
func (tr traffic) pieces(n int) [][]ptrace.Traces {
	out := make([][]ptrace.Traces, n)
	for i := range tr.traces {
		for k, idx := range agenttraffic.Pieces(&tr.traces[i], n) {
			out[k] = append(out[k], agenttraffic.PieceToPdata(&tr.traces[i], idx))
		}
	}
	return out
}

// writeJSONLines writes requests as the file exporter does with format: json.
func writeJSONLines(t *testing.T, path string, reqs []ptrace.Traces) {
	t.Helper()
	var buf bytes.Buffer
	m := &ptrace.JSONMarshaler{}
	for _, td := range reqs {
		b, err := m.MarshalTraces(td)
		require.NoError(t, err)
		buf.Write(append(b, '\n'))
	}
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
}

// writeProto writes requests as the file exporter does with format: proto.
func writeProto(t *testing.T, path string, reqs []ptrace.Traces) {
	t.Helper()
	var buf bytes.Buffer
	m := &ptrace.ProtoMarshaler{}
	for _, td := range reqs {
		b, err := m.MarshalTraces(td)
		require.NoError(t, err)
		require.NoError(t, binary.Write(&buf, binary.BigEndian, uint32(len(b))))
		buf.Write(b)
	}
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
}

func gzipFile(t *testing.T, src, dst string) {
	t.Helper()
	raw, err := os.ReadFile(src)
	require.NoError(t, err)
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err = w.Write(raw)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, os.WriteFile(dst, buf.Bytes(), 0o600))
}

// result is one scan's outcome.
type result struct {
	code           int
	stdout, stderr string
}

func scanWith(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(args, strings.NewReader(stdin), &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// recordLines reads a records file as stormreport does (each id once, its most complete
// line) and returns the records' JSON, sorted, for comparing two scans. The revision is
// left out: it counts the rewrites of a record (a stale read found after its trace was
// decided), which depend on the order traces are decided in, not on what the record says.
func recordLines(t *testing.T, path string) []string {
	t.Helper()
	files, err := stormreport.ResolveFiles([]string{path})
	require.NoError(t, err)
	input, err := stormreport.Read(files)
	require.NoError(t, err)
	var out []string
	for _, r := range input.Records {
		r.Revision = 0
		b, err := json.Marshal(r)
		require.NoError(t, err)
		out = append(out, string(b))
	}
	for _, r := range input.Findings {
		r.Revision = 0
		b, err := json.Marshal(r)
		require.NoError(t, err)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

// truthLine is the line of the text report that holds the records to the ground truth.
func truthLine(t *testing.T, records, truth string) *stormreport.TruthComparison {
	t.Helper()
	files, err := stormreport.ResolveFiles([]string{records})
	require.NoError(t, err)
	input, err := stormreport.Read(files)
	require.NoError(t, err)
	tt, err := stormreport.ReadTruth(truth)
	require.NoError(t, err)
	return stormreport.CompareTruth(tt, input)
}

// scanJSON is the summary of a --json report.
func scanJSON(t *testing.T, stdout string) stormreport.Report {
	t.Helper()
	var r stormreport.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &r), stdout)
	require.NotNil(t, r.Scan, "a scan's report carries its summary")
	return r
}

// assertSameRecords fails with the records only one side has.
func assertSameRecords(t *testing.T, want, got []string, msg string) {
	t.Helper()
	var missing, extra []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("%s: %d records missing, %d extra (of %d)\nmissing: %s\nextra: %s", msg, len(missing), len(extra), len(want),
			strings.Join(missing, "\n"), strings.Join(extra, "\n"))
	}
}
