package stormscan

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// counter is a handler that counts what an input holds.
type counter struct {
	spans, attemptLines, bads, skips int
	errs                             []string
}

func (c *counter) traces(td ptrace.Traces) error { c.spans += td.SpanCount(); return nil }
func (c *counter) attemptLine(position, []byte) error {
	c.attemptLines++
	return nil
}

func (c *counter) bad(where position, err error) {
	c.bads++
	c.errs = append(c.errs, fmt.Sprintf("%s: %v", where, err))
}
func (c *counter) skipped() { c.skips++ }

// TestReadsALargeDocumentWhole: a pretty-printed OTLP/JSON document far larger than the
// read buffer, from a file and from a reader that returns a byte at a time, is one request.
func TestReadsALargeDocumentWhole(t *testing.T) {
	tr := newTraffic(t, 9, 40)
	td := ptrace.NewTraces()
	for _, req := range tr.requests() {
		req.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	}
	raw, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	var doc bytes.Buffer
	doc.WriteString("{\n")
	doc.Write(raw[1:])
	require.Greater(t, doc.Len(), 2<<20)
	for name, r := range map[string]*bytes.Reader{"file": bytes.NewReader(doc.Bytes()), "slow": bytes.NewReader(doc.Bytes())} {
		c := &counter{}
		var in = iotest.HalfReader(r)
		if name == "file" {
			in = r
		}
		require.NoError(t, readInput(name, in, FormatAuto, defaultMaxMessageBytes, c))
		assert.Equal(t, td.SpanCount(), c.spans, name)
		assert.Zero(t, c.bads, "%s: %v", name, c.errs)
	}
}

// TestAnInputThatEndsEarlyIsReadUpToItsEnd: a gzip cut short is reported where it ends,
// what came before it counted; so is a protobuf message cut short.
func TestAnInputThatEndsEarlyIsReadUpToItsEnd(t *testing.T) {
	tr := newTraffic(t, 4, 10)
	dir := t.TempDir()
	jsonPath, gzPath := filepath.Join(dir, "t.json"), filepath.Join(dir, "t.json.gz")
	writeJSONLines(t, jsonPath, tr.requests())
	gzipFile(t, jsonPath, gzPath)
	gz, err := os.ReadFile(gzPath)
	require.NoError(t, err)
	c := &counter{}
	require.NoError(t, readInput("t.json.gz", bytes.NewReader(gz[:len(gz)*2/3]), FormatAuto, defaultMaxMessageBytes, c))
	assert.Positive(t, c.spans, "the traces before the cut are read")
	require.Equal(t, 1, c.bads, c.errs)
	assert.Contains(t, c.errs[0], "ends early")

	res := scanWith(t, "", "--json", filepath.Join(dir, "cut.json.gz"))
	assert.Equal(t, 1, res.code, "a missing file is unreadable")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cut.json.gz"), gz[:len(gz)*2/3], 0o600))
	res = scanWith(t, "", "--json", filepath.Join(dir, "cut.json.gz"))
	require.Equal(t, 0, res.code, "a file cut short is read up to its end: %s", res.stderr)
	report := scanJSON(t, res.stdout)
	assert.EqualValues(t, 1, report.Scan.BadLines)
	assert.Positive(t, report.Scan.Spans)
}

// TestHostileProtobufFraming: a length prefix claiming far more than the file holds, under
// the bound or over it, is reported as a truncated message (memory grows with the bytes
// that arrive, not with the claim; past the bound they are not held). (A first message of
// 16 MiB or more has a non-zero first byte: such a file is read with --format otlp-proto.)
func TestHostileProtobufFraming(t *testing.T) {
	for _, size := range []uint32{32 << 20, 200 << 20, 0xffffffff} {
		var b bytes.Buffer
		require.NoError(t, binary.Write(&b, binary.BigEndian, size))
		b.WriteString("0123456789")
		c := &counter{}
		require.NoError(t, readInput("evil.pb", &b, FormatOTLPProto, defaultMaxMessageBytes, c))
		require.Equal(t, []string{fmt.Sprintf("evil.pb: message 1 (byte 0): truncated message: 10 of %d bytes: EOF", size)}, c.errs)
	}
}

// TestZstdInputs: a zstd-compressed file and the file exporter's zstd-compressed messages
// give the spans of the plain file.
func TestZstdInputs(t *testing.T) {
	tr := newTraffic(t, 6, 12)
	dir := t.TempDir()
	plain := filepath.Join(dir, "t.json")
	writeJSONLines(t, plain, tr.requests())
	raw, err := os.ReadFile(plain)
	require.NoError(t, err)
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	whole := enc.EncodeAll(raw, nil)
	var framed bytes.Buffer
	m := &ptrace.JSONMarshaler{}
	for _, td := range tr.requests() {
		b, err := m.MarshalTraces(td)
		require.NoError(t, err)
		z := enc.EncodeAll(b, nil)
		require.NoError(t, binary.Write(&framed, binary.BigEndian, uint32(len(z))))
		framed.Write(z)
	}
	require.NoError(t, enc.Close())
	want := 0
	for _, td := range tr.requests() {
		want += td.SpanCount()
	}
	for name, in := range map[string][]byte{"whole.zst": whole, "messages.zst": framed.Bytes()} {
		c := &counter{}
		require.NoError(t, readInput(name, bytes.NewReader(in), FormatAuto, defaultMaxMessageBytes, c))
		assert.Equal(t, want, c.spans, name)
		assert.Zero(t, c.bads, "%s: %v", name, c.errs)
	}
}

// TestAttemptLineMentioningResourceSpansIsAnAttemptLine: the word in a field's value does not make
// a tool attempt an OTLP request.
func TestAttemptLineMentioningResourceSpansIsAnAttemptLine(t *testing.T) {
	line := `{"event":"tool_attempt","run_id":"r","span_id":"s","attempt":1,"tool_name":"t","args_hash":"a","status":"ok","t_start":1,"t_end":2,"note":"\"resourceSpans\""}` + "\n"
	c := &counter{}
	require.NoError(t, readInput("x", strings.NewReader(line+`{"resourceSpans":[]}`+"\n"), FormatAuto, defaultMaxMessageBytes, c))
	assert.Equal(t, 1, c.attemptLines)
	assert.Equal(t, 1, c.skips, "an empty OTLP request")
	assert.Zero(t, c.bads)
}

// TestByteOrderMarkIsSkipped: a file saved with a UTF-8 BOM is read as without.
func TestByteOrderMarkIsSkipped(t *testing.T) {
	c := &counter{}
	require.NoError(t, readInput("bom", strings.NewReader("\xef\xbb\xbf"+attemptLogExample), FormatAuto, defaultMaxMessageBytes, c))
	assert.Equal(t, 3, c.attemptLines)
}

// TestEveryBadLineIsCounted: past the first 100 named, the rest are counted and said.
func TestEveryBadLineIsCounted(t *testing.T) {
	in := strings.Repeat("not json\n", 150) + attemptLogExample
	res := scanWith(t, in, "--attempt-report")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, 100, strings.Count(res.stderr, ": not JSON"))
	assert.Contains(t, res.stderr, "50 more lines did not parse")
	res = scanWith(t, in, "--json")
	require.Equal(t, 0, res.code)
	assert.EqualValues(t, 150, scanJSON(t, res.stdout).Scan.BadLines)
}

// TestRecordsFileIsReplacedOnlyByAScanThatRead: -o keeps an earlier scan's records when
// nothing could be read, is refused when it names a directory, and a records file that
// cannot be written is exit status 1.
func TestRecordsFileIsReplacedOnlyByAScanThatRead(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "storms.jsonl")
	require.NoError(t, os.WriteFile(out, []byte("earlier\n"), 0o600))
	res := scanWith(t, "", "-o", out, filepath.Join(dir, "typo.json"))
	assert.Equal(t, 1, res.code)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "earlier\n", string(b), "a scan that read nothing leaves the records")

	res = scanWith(t, attemptLogExample, "-o", out)
	require.Equal(t, 0, res.code, res.stderr)
	b, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(b), "\n"), "replaced by this scan's one record")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left beside it")

	assert.Equal(t, 2, scanWith(t, attemptLogExample, "-o", dir).code, "a directory is no records file")
	assert.Equal(t, 1, scanWith(t, attemptLogExample, "-o", filepath.Join(dir, "missing", "storms.jsonl")).code)
	assert.Equal(t, 2, scanWith(t, attemptLogExample, "-", "-").code, "stdin twice")
}

// TestBoundFollowsTheConfiguration: without the flag, a configuration's max_trace_bytes
// above the scan's default bound raises the bound instead of failing validation; with the
// flag below it, the error names the flag.
func TestBoundFollowsTheConfiguration(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("processors:\n  retry_storm: {max_buffered_bytes: 268435456, max_trace_bytes: 67108864}\n"), 0o600))
	res := scanWith(t, attemptLogExample, "--config", cfg, "--json")
	require.Equal(t, 0, res.code, res.stderr)
	assert.EqualValues(t, 268435456, scanJSON(t, res.stdout).Scan.MaxBufferedBytes, "the configuration's bound")
	require.NoError(t, os.WriteFile(cfg, []byte("processors:\n  retry_storm: {max_trace_bytes: 67108864}\n"), 0o600))
	res = scanWith(t, attemptLogExample, "--config", cfg, "--json")
	require.Equal(t, 0, res.code, res.stderr)
	assert.EqualValues(t, 134217728, scanJSON(t, res.stdout).Scan.MaxBufferedBytes, "twice max_trace_bytes")
	res = scanWith(t, attemptLogExample, "--config", cfg, "--max-buffered-bytes", "1048576")
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "--max-buffered-bytes 1048576 is below the configuration's max_trace_bytes")
}

// FuzzReadInput: whatever bytes an input holds, under any size bound, reading it never
// panics nor fails but for a format no input can be in, and every bad line or message is
// reported, never dropped.
func FuzzReadInput(f *testing.F) {
	f.Add([]byte(attemptLogExample))
	f.Add([]byte("{\n\"resourceSpans\": [\n"))
	f.Add([]byte{0, 0, 0, 3, 1, 2, 3, 0, 0})
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0})
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0})
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"x"}]}]}]}` + "\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		// The default bound, and one that most lines, documents and messages are over.
		for _, bound := range []int{defaultMaxMessageBytes, 16} {
			for _, format := range []Format{FormatAuto, FormatOTLPJSON, FormatOTLPProto, FormatAttemptLog} {
				c := &counter{}
				err := readInput("fuzz", bufio.NewReader(bytes.NewReader(in)), format, bound, c)
				if err != nil && format != FormatAuto {
					// Only detection and a compressed stream's header can make an input unreadable.
					if !strings.Contains(err.Error(), "gzip") && !strings.Contains(err.Error(), "zstd") {
						t.Fatalf("%s: %v", format, err)
					}
				}
			}
		}
	})
}
