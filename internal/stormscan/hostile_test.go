package stormscan

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"golang.org/x/sys/unix"
)

// xs is what longLine repeats.
var xs = bytes.Repeat([]byte("x"), 64<<10)

// longLine yields n bytes of one line, the start of a per-attempt attempt and then 'x',
// without its newline; it holds none of them.
type longLine struct {
	n, done int64
}

func (l *longLine) Read(p []byte) (int, error) {
	const head = `{"event":"tool_attempt","note":"`
	if l.done >= l.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), l.n-l.done)]
	n := 0
	if l.done < int64(len(head)) {
		n = copy(p, head[l.done:])
	}
	for n < len(p) {
		n += copy(p[n:], xs)
	}
	l.done += int64(n)
	return n, nil
}

// attemptLogLines are the labeled example's three attempts, one line each with its newline.
func attemptLines() []string {
	return strings.SplitAfter(strings.TrimSuffix(attemptLogExample, "\n")+"\n", "\n")[:3]
}

// withLongLines is an input of the labeled example's attempts with a line of mid bytes after
// the first attempt and one of last bytes, without a newline, at the end.
func withLongLines(mid, last int64) io.Reader {
	lines := attemptLines()
	return io.MultiReader(strings.NewReader(lines[0]), &longLine{n: mid}, strings.NewReader("\n"),
		strings.NewReader(lines[1]+lines[2]), &longLine{n: last})
}

// scanReader is scanWith with stdin read from r, and the bytes the scan allocated.
func scanReader(t *testing.T, r io.Reader, args ...string) (result, uint64) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code := Run(args, r, &stdout, &stderr)
	runtime.ReadMemStats(&after)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}, after.TotalAlloc - before.TotalAlloc
}

// TestALineOfAGiBIsSkippedAndTheScanGoesOn: issue 40's attack, a 1 GiB line without a
// newline, on stdin, with the default bound; a line of 96 MiB with its newline sits
// between the attempts. Each is skipped, counted and named, the attempts around them are
// read, and the scan allocates a few times the bound, not the lines (it held each line
// whole, and under a memory limit died with "fatal error: out of memory").
func TestALineOfAGiBIsSkippedAndTheScanGoesOn(t *testing.T) {
	_, baseline := scanReader(t, strings.NewReader(attemptLogExample), "--json")
	res, allocated := scanReader(t, withLongLines(96<<20, 1<<30), "--json")
	require.Equal(t, 0, res.code, res.stderr)
	report := scanJSON(t, res.stdout)
	assert.EqualValues(t, 3, report.Scan.LoggedAttempts, "the attempts before, between and after")
	assert.EqualValues(t, 2, report.Scan.BadLines)
	assert.EqualValues(t, 2, report.Scan.Oversized)
	assert.EqualValues(t, defaultMaxMessageBytes, report.Scan.MaxMessageBytes)
	assert.Contains(t, res.stderr, "stdin:2: line of 100663297 bytes is over --max-message-bytes 67108864: skipped")
	assert.Contains(t, res.stderr, "stdin:5: line of 1073741824 bytes is over --max-message-bytes 67108864: skipped")
	t.Logf("allocated %d MiB beyond a scan of the attempts alone", (allocated-baseline)>>20)
	// Each line grows a buffer to the bound, doubling (twice the bound allocated), before
	// it is known to be over it and read past.
	assert.Less(t, allocated-baseline, uint64(5*defaultMaxMessageBytes), "the lines are read past, not held")
}

// TestLongLinesInCompressedFiles: the same in a .gz and a .zst (a few KiB that inflate to
// 48 MiB lines) and a plain file, with --max-message-bytes 1 MiB: skipped, counted, the
// scan goes on, and what it allocates is about the bound, not the lines.
func TestLongLinesInCompressedFiles(t *testing.T) {
	const lineBytes = 48 << 20
	dir := t.TempDir()
	plain := filepath.Join(dir, "attempts.jsonl")
	f, err := os.Create(plain)
	require.NoError(t, err)
	_, err = io.Copy(f, withLongLines(lineBytes, lineBytes))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	inputs := map[string]func(io.Writer) (io.WriteCloser, error){
		"attempts.jsonl.gz": func(w io.Writer) (io.WriteCloser, error) { return gzip.NewWriterLevel(w, gzip.BestSpeed) },
		"attempts.jsonl.zst": func(w io.Writer) (io.WriteCloser, error) {
			return zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest))
		},
	}
	for name, compressor := range inputs {
		var b bytes.Buffer
		zw, err := compressor(&b)
		require.NoError(t, err)
		_, err = io.Copy(zw, withLongLines(lineBytes, lineBytes))
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		require.Less(t, b.Len(), 256<<10, name)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o600))
	}
	_, baseline := scanReader(t, strings.NewReader(attemptLogExample), "--json")
	for _, name := range []string{"attempts.jsonl", "attempts.jsonl.gz", "attempts.jsonl.zst"} {
		t.Run(name, func(t *testing.T) {
			res, allocated := scanReader(t, nil, "--json", "--max-message-bytes", "1048576", filepath.Join(dir, name))
			require.Equal(t, 0, res.code, res.stderr)
			report := scanJSON(t, res.stdout)
			assert.EqualValues(t, 3, report.Scan.LoggedAttempts)
			assert.EqualValues(t, 2, report.Scan.Oversized)
			assert.Contains(t, res.stderr, name+":2: line of 50331649 bytes is over --max-message-bytes 1048576: skipped")
			assert.Contains(t, res.stderr, name+":5: line of 50331648 bytes is over --max-message-bytes 1048576: skipped")
			// The zstd reader's window (8 MiB at this level) and the read buffers come on top.
			t.Logf("allocated %d MiB beyond a scan of the attempts alone", (allocated-baseline)>>20)
			assert.Less(t, allocated-baseline, uint64(40<<20), "the lines are read past, not held")
		})
	}
}

// TestOversizedDocumentsAndMessages: a multi-line OTLP/JSON document over the bound is
// reported and not parsed; a protobuf message over it is read past and the next one read;
// a zstd-compressed message that inflates past it stops inflating at the bound.
func TestOversizedDocumentsAndMessages(t *testing.T) {
	tr := newTraffic(t, 3, 3)
	reqs := tr.requests()
	m := &ptrace.ProtoMarshaler{}
	big := ptrace.NewTraces()
	big.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().Attributes().PutStr("blob", strings.Repeat("z", 2<<20))
	var framed bytes.Buffer
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	for i, td := range []ptrace.Traces{reqs[0], big, reqs[1], big} {
		b, err := m.MarshalTraces(td)
		require.NoError(t, err)
		if i == 3 {
			b = enc.EncodeAll(b, nil) // a few KiB on disk
		}
		require.NoError(t, binary.Write(&framed, binary.BigEndian, uint32(len(b))))
		framed.Write(b)
	}
	c := &counter{}
	require.NoError(t, readInput("t.pb", bytes.NewReader(framed.Bytes()), FormatAuto, 1<<20, c))
	assert.Equal(t, reqs[0].SpanCount()+reqs[1].SpanCount(), c.spans, "the messages after a skipped one are read")
	require.Len(t, c.errs, 2)
	assert.Regexp(t, `^t.pb: message 2 \(byte \d+\): message of \d+ bytes is over --max-message-bytes 1048576: skipped$`, c.errs[0])
	assert.Regexp(t, `^t.pb: message 4 \(byte \d+\): decompressed message of more than 1048576 bytes is over --max-message-bytes 1048576: skipped$`, c.errs[1])

	doc, err := (&ptrace.JSONMarshaler{}).MarshalTraces(big)
	require.NoError(t, err)
	c = &counter{}
	require.NoError(t, readInput("doc.json", io.MultiReader(strings.NewReader("{\n"), bytes.NewReader(doc[1:])), FormatAuto, 1<<20, c))
	assert.Zero(t, c.spans)
	assert.Equal(t, []string{"doc.json:1: JSON document of more than 1048576 bytes is over --max-message-bytes 1048576: skipped"}, c.errs)
}

// TestInputsThatAreNotRegularFiles: a named pipe with no writer and a symbolic link to
// /dev/zero (and a directory) are refused at once, each with what it is, and the scan reads
// the other inputs; they alone are "no input could be read". Before, the pipe blocked the
// scan at open and /dev/zero was read for ever, neither with a word.
func TestInputsThatAreNotRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo, zero, good := filepath.Join(dir, "capture.fifo"), filepath.Join(dir, "zero.json"), filepath.Join(dir, "attempts.jsonl")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	require.NoError(t, os.Symlink("/dev/zero", zero))
	require.NoError(t, os.WriteFile(good, []byte(attemptLogExample), 0o600))
	scan := func(args ...string) result {
		done := make(chan result, 1)
		go func() { done <- scanWith(t, "", args...) }()
		select {
		case res := <-done:
			return res
		case <-time.After(10 * time.Second):
			t.Fatalf("scan %v still running after 10 s", args)
			return result{}
		}
	}
	res := scan("--json", fifo, zero, dir, good)
	require.Equal(t, 0, res.code, res.stderr)
	report := scanJSON(t, res.stdout)
	assert.Equal(t, 3, report.Scan.Unreadable)
	assert.EqualValues(t, 3, report.Scan.LoggedAttempts, "the regular file is read")
	assert.Contains(t, res.stderr, fifo+": not a regular file (a named pipe): the scan reads regular files, and a stream from stdin (-)")
	assert.Contains(t, res.stderr, zero+": not a regular file (a character device, through a symbolic link to /dev/zero)")
	assert.Contains(t, res.stderr, dir+": not a regular file (a directory)")

	res = scan(fifo, zero)
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "no input could be read")
}
