package stormscan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScanRecordsAgentsimTrafficAsItsTruthSays scans agentsim traffic of every scenario
// written as the file exporter writes it (OTLP/JSON lines, protobuf, and gzipped JSON):
// each scan's records hold to the ground truth, storm by storm and finding by finding, and
// the three formats give the same records.
func TestScanRecordsAgentsimTrafficAsItsTruthSays(t *testing.T) {
	tr := newTraffic(t, 7, 120)
	dir := t.TempDir()
	jsonPath, protoPath, gzPath := filepath.Join(dir, "traces.json"), filepath.Join(dir, "traces.pb"), filepath.Join(dir, "traces.json.gz")
	writeJSONLines(t, jsonPath, tr.requests())
	writeProto(t, protoPath, tr.requests())
	gzipFile(t, jsonPath, gzPath)

	var first []string
	for _, in := range []string{jsonPath, protoPath, gzPath} {
		out := filepath.Join(dir, filepath.Base(in)+".records.jsonl")
		res := scanWith(t, "", "-o", out, "--json", in)
		require.Equal(t, 0, res.code, res.stderr)
		report := scanJSON(t, res.stdout)
		assert.Zero(t, report.Scan.BadLines, in)
		assert.Equal(t, int64(len(tr.traces)), report.Scan.Traces["kept"]+report.Scan.Traces["dropped"], "%s: every trace decided", in)
		assert.Zero(t, report.Scan.EarlyDecisions["memory_pressure"], "%s: the default bound holds this traffic", in)
		c := truthLine(t, out, tr.truth)
		assert.True(t, c.Match, "%s: %s", in, c.Line)
		assert.Positive(t, c.Storms.Injected, in)
		records := recordLines(t, out)
		require.NotEmpty(t, records)
		if first == nil {
			first = records
			continue
		}
		assertSameRecords(t, first, records, in+" against "+jsonPath)
	}
}

// TestScanAssemblesTracesSpreadOverFiles writes each trace in three pieces, root last,
// piece 1 of every trace in one file, piece 2 in the next and piece 3 in the last: the
// scan assembles every trace by its id across the files, and its records are those of the
// traffic sent whole.
func TestScanAssemblesTracesSpreadOverFiles(t *testing.T) {
	tr := newTraffic(t, 11, 80)
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.json")
	writeJSONLines(t, whole, tr.requests())
	var parts []string
	for k, reqs := range tr.pieces(3) {
		p := filepath.Join(dir, "part"+string(rune('1'+k))+".json")
		writeJSONLines(t, p, reqs)
		parts = append(parts, p)
	}
	wholeOut, partsOut := filepath.Join(dir, "whole.records"), filepath.Join(dir, "parts.records")
	res := scanWith(t, "", "-o", wholeOut, whole)
	require.Equal(t, 0, res.code, res.stderr)
	res = scanWith(t, "", append([]string{"-o", partsOut, "--json"}, parts...)...)
	require.Equal(t, 0, res.code, res.stderr)
	report := scanJSON(t, res.stdout)
	assert.Equal(t, 3, report.Scan.Files)
	assert.Zero(t, report.Scan.LateSpans, "no span found its trace decided")
	assertSameRecords(t, recordLines(t, wholeOut), recordLines(t, partsOut), "pieces in three files")
	c := truthLine(t, partsOut, tr.truth)
	assert.True(t, c.Match, c.Line)
}

// TestScanUnderItsMemoryBoundDecidesTheOldestEarlyAndSaysSo scans whole traces with a
// bound far below the traffic: the oldest traces are decided early, the scan says so on
// stderr and in the summary, and, each trace being whole when it is decided, every record
// is still the one the unbounded scan makes: no storm or finding lost to the bound.
func TestScanUnderItsMemoryBoundDecidesTheOldestEarlyAndSaysSo(t *testing.T) {
	tr := newTraffic(t, 5, 150)
	dir := t.TempDir()
	in := filepath.Join(dir, "traces.json")
	writeJSONLines(t, in, tr.requests())
	free, bounded := filepath.Join(dir, "free.records"), filepath.Join(dir, "bounded.records")
	res := scanWith(t, "", "-o", free, in)
	require.Equal(t, 0, res.code, res.stderr)
	assert.NotContains(t, res.stderr, "decided before the input ended")
	assert.NotContains(t, res.stderr, "spans lost", "counters exported at 0 are no loss")

	res = scanWith(t, "", "-o", bounded, "--json", "--max-buffered-bytes", "300000", in)
	require.Equal(t, 0, res.code, res.stderr)
	report := scanJSON(t, res.stdout)
	early := report.Scan.EarlyDecisions["memory_pressure"]
	assert.Positive(t, early, "the bound was reached")
	assert.EqualValues(t, 300000, report.Scan.MaxBufferedBytes)
	assert.Contains(t, res.stderr, "traces decided before the input ended")
	assert.Contains(t, res.stderr, "--max-buffered-bytes 300000")
	assertSameRecords(t, recordLines(t, free), recordLines(t, bounded), "under the bound")

	res = scanWith(t, "", "--max-buffered-bytes", "300000", in)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "traces decided before the input ended (memory bound 300000 bytes", "the text report says so too")
}

// TestScanReportsBadInputAndGoesOn: a line that does not parse is named with its file and
// line number and counted; a truncated protobuf file is named with its message; the scan
// still reads the rest and exits 0.
func TestScanReportsBadInputAndGoesOn(t *testing.T) {
	tr := newTraffic(t, 3, 20)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	writeJSONLines(t, good, tr.requests()[:10])
	raw, err := os.ReadFile(good)
	require.NoError(t, err)
	mixed := filepath.Join(dir, "mixed.json")
	lines := splitLines(raw)
	bad := append(append(append([]byte{}, lines[0]...), "{\"resourceSpans\": [not json\n"...), joinLines(lines[1:])...)
	require.NoError(t, os.WriteFile(mixed, bad, 0o600))
	proto := filepath.Join(dir, "cut.pb")
	writeProto(t, proto, tr.requests()[10:])
	pb, err := os.ReadFile(proto)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(proto, pb[:len(pb)-10], 0o600))

	res := scanWith(t, "", "--json", mixed, proto)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stderr, "mixed.json:2: not an OTLP/JSON traces request")
	assert.Regexp(t, `cut\.pb: message 10 \(byte \d+\): truncated message`, res.stderr)
	report := scanJSON(t, res.stdout)
	assert.EqualValues(t, 2, report.Scan.BadLines)
	assert.Equal(t, int64(19), report.Scan.Traces["kept"]+report.Scan.Traces["dropped"], "every trace but the cut one")
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		if i < len(b) {
			i++
		}
		out = append(out, b[:i])
		b = b[i:]
	}
	return out
}

func joinLines(lines [][]byte) []byte {
	var out []byte
	for _, l := range lines {
		out = append(out, l...)
	}
	return out
}

// TestScanExitStatus: 0 when the scan ran, 1 when no input could be read, 2 for a usage or
// configuration error.
func TestScanExitStatus(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	res := scanWith(t, "", missing)
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "no input could be read")
	binary := filepath.Join(dir, "binary")
	require.NoError(t, os.WriteFile(binary, []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00"), 0o600))
	res = scanWith(t, "", binary)
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "not OTLP/JSON, OTLP protobuf or per-attempt JSONL")

	for _, args := range [][]string{
		{"--format", "xml"},
		{"--top", "-1"},
		{"--max-buffered-bytes", "0"},
		{"--max-buffered-bytes", "65535"},
		{"--attempt-report", "--json"},
		{"--seed-report", "--json"},
		{"--processor", "a"},
		{"--config", missing},
		{"--nope"},
	} {
		res := scanWith(t, "", args...)
		assert.Equal(t, 2, res.code, "%v: %s", args, res.stderr)
	}
	res = scanWith(t, attemptLogExample, "--max-buffered-bytes", "65535")
	assert.Contains(t, res.stderr, "--max-buffered-bytes must be at least 65536 (64 KiB)", "the processor's lower bound, named as the flag")
	res = scanWith(t, attemptLogExample, "--max-buffered-bytes", "65536")
	assert.Equal(t, 0, res.code, res.stderr)
	res = scanWith(t, "")
	assert.Equal(t, 0, res.code, "empty stdin is a scan of nothing: %s", res.stderr)
	assert.Contains(t, res.stdout, "0 recorded calls")
	assert.Equal(t, 0, scanWith(t, "", "-h").code)
}

// TestProgressIsSilentOffATerminal: stderr that is a file or /dev/null gets no progress
// line, only what the scan has to say.
func TestProgressIsSilentOffATerminal(t *testing.T) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer devNull.Close()
	assert.False(t, isTerminal(devNull), "/dev/null is a character device, not a terminal")
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, isTerminal(f))
	assert.Nil(t, newProgress([]string{"-"}, f, nil).done, "no progress goroutine")
}
