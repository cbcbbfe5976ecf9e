package stormscan

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/attemptlog"
)

// Format is how an input file is read.
type Format string

const (
	// FormatAuto detects the format per file: gzip and zstd are decompressed first; a file
	// whose first byte is 0 holds the file exporter's length-prefixed protobuf messages;
	// one with no zero byte in its first 4 KiB is text: one JSON value per line, each line an OTLP/JSON traces request
	// (it has "resourceSpans") or a per-attempt event; a file whose first line is not JSON
	// on its own is one OTLP/JSON document.
	FormatAuto Format = "auto"
	// FormatOTLPJSON is OTLP/JSON: one ExportTraceServiceRequest per line, as the file
	// exporter writes it, or one document.
	FormatOTLPJSON Format = "otlp-json"
	// FormatOTLPProto is the file exporter's protobuf format: each message preceded by its
	// length, 4 bytes big-endian (zstd-compressed messages are decompressed).
	FormatOTLPProto Format = "otlp-proto"
	// FormatAttemptLog is per-attempt JSONL: "event":"tool_attempt" lines, other lines skipped.
	FormatAttemptLog Format = "attempt-log"
	// formatSeed is the deprecated name of FormatAttemptLog, still accepted.
	formatSeed Format = "seed"
)

func parseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatAuto, FormatOTLPJSON, FormatOTLPProto, FormatAttemptLog:
		return f, nil
	case formatSeed:
		return FormatAttemptLog, nil
	}
	return "", fmt.Errorf("--format must be auto, otlp-json, otlp-proto or attempt-log, not %q", s)
}

// defaultMaxMessageBytes bounds what is held whole to be parsed: one text line, one
// OTLP/JSON document, one protobuf message (decompressed). A larger one is skipped and
// counted, read to its end without being held, and the scan goes on. 64 MiB is 16 times
// the largest request the shipped configs take and about four times the JSON line of a
// batch processor's 8,192 agent spans.
const defaultMaxMessageBytes = 64 << 20

// zstdMaxWindow bounds the window of a zstd-compressed file (zstd's own default limit is
// 512 MiB, which a corrupt header could claim).
const zstdMaxWindow = 64 << 20

var (
	utf8BOM   = []byte{0xef, 0xbb, 0xbf}
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// handler receives what a file holds, in file order.
type handler interface {
	// traces is one OTLP request.
	traces(td ptrace.Traces) error
	// attemptLine is one text line that is not OTLP: a per-attempt event or a bad line.
	attemptLine(where position, line []byte) error
	// bad reports a line or message that did not parse; the scan goes on.
	bad(where position, err error)
	// skipped counts a line that parsed but is neither traces nor a tool attempt.
	skipped()
}

// position is where in an input a line or message is: line numbers for text, message
// numbers and byte offsets for protobuf.
type position struct {
	file    string
	line    int
	message int
	offset  int64
}

func (p position) String() string {
	if p.message > 0 {
		return fmt.Sprintf("%s: message %d (byte %d)", p.file, p.message, p.offset)
	}
	return fmt.Sprintf("%s:%d", p.file, p.line)
}

// errUnrecognised is an input that is none of the formats.
var errUnrecognised = errors.New("not OTLP/JSON, OTLP protobuf or per-attempt JSONL")

// oversizedError is a line, document or message over the size bound: skipped, not parsed.
type oversizedError struct {
	what  string // "line", "JSON document", "message", "decompressed message"
	size  int64  // its size, or what was read of it when atLeast
	bound int
	// atLeast: only the first size bytes were read (a document is the rest of its input,
	// a compressed message stops decompressing at the bound).
	atLeast bool
}

func (e *oversizedError) Error() string {
	size := fmt.Sprintf("%d bytes", e.size)
	if e.atLeast {
		size = fmt.Sprintf("more than %d bytes", e.bound)
	}
	return fmt.Sprintf("%s of %s is over --max-message-bytes %d: skipped", e.what, size, e.bound)
}

// readInput reads one input in format f and hands what it holds to h; a line, document or
// message over maxMessage bytes is reported to h as an *oversizedError. It returns an
// error only when the input cannot be read at all; a bad line or message is reported to h.
func readInput(name string, r io.Reader, f Format, maxMessage int, h handler) error {
	br := bufio.NewReaderSize(r, 1<<20)
	br, closeDecompressor, err := decompress(br)
	if err != nil {
		return err
	}
	defer closeDecompressor()
	if f == FormatAuto {
		f, err = detect(br)
		if err != nil {
			return err
		}
	}
	if f == FormatOTLPProto {
		return readProto(name, br, maxMessage, h)
	}
	return readText(name, br, f, maxMessage, h)
}

// decompress wraps br in a gzip or zstd reader when it starts with their magic.
func decompress(br *bufio.Reader) (*bufio.Reader, func(), error) {
	head, _ := br.Peek(4)
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		return bufio.NewReaderSize(zr, 1<<20), func() { _ = zr.Close() }, nil
	case bytes.HasPrefix(head, zstdMagic):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow))
		if err != nil {
			return nil, nil, fmt.Errorf("zstd: %w", err)
		}
		return bufio.NewReaderSize(zr, 1<<20), zr.Close, nil
	}
	return br, func() {}, nil
}

// detect tells protobuf from text: a length-prefixed message starts with a zero byte (its
// length is below 16 MiB), text has no zero byte in its first 4 KiB (a bad first line is a
// bad line of a text file, not a file in no known format).
func detect(br *bufio.Reader) (Format, error) {
	if bom, _ := br.Peek(3); bytes.Equal(bom, utf8BOM) {
		_, _ = br.Discard(3)
	}
	head, err := br.Peek(4096)
	switch {
	case len(head) == 0 && errors.Is(err, io.EOF):
		return FormatAuto, nil // empty: read as text, nothing in it
	case len(head) == 0:
		return "", err
	case head[0] == 0:
		return FormatOTLPProto, nil
	case bytes.IndexByte(head, 0) < 0:
		return FormatAuto, nil
	}
	return "", errUnrecognised
}

// readText reads JSON lines. Under FormatAuto each line is an OTLP/JSON request when it
// holds "resourceSpans" and a per-attempt line otherwise; a first line that is not JSON
// on its own starts a multi-line OTLP/JSON document, read whole.
func readText(name string, br *bufio.Reader, f Format, maxLine int, h handler) error {
	lineNo := 0
	first := true
	var buf []byte
	for {
		line, over, err := nextLine(br, &buf, maxLine)
		if len(line) > 0 || over > 0 || err == nil {
			lineNo++
		}
		if over > 0 {
			h.bad(position{file: name, line: lineNo}, &oversizedError{what: "line", size: over, bound: maxLine})
			first = false
		}
		if err != nil && !errors.Is(err, io.EOF) {
			// The input ends early: its last line is cut, not bad.
			h.bad(position{file: name, line: lineNo}, fmt.Errorf("input ends early: %w", err))
			return nil
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) > 0 {
			if first && f != FormatAttemptLog && startsDocument(trimmed) {
				return readDocument(position{file: name, line: lineNo}, line, br, maxLine, h)
			}
			first = false
			if herr := textLine(position{file: name, line: lineNo}, trimmed, line, f, h); herr != nil {
				return herr
			}
		}
		if err != nil {
			return nil // io.EOF
		}
	}
}

var resourceSpansKey = []byte(`"resourceSpans"`)

// startsDocument reports whether a first line opens a multi-line OTLP/JSON document: it is
// not JSON on its own and is a lone "{" or names resourceSpans (a per-attempt line that
// Go's JSON does not take, with NaN in it, say, is not mistaken for one).
func startsDocument(first []byte) bool {
	return first[0] == '{' && !json.Valid(first) && (len(first) == 1 || bytes.Contains(first, resourceSpansKey))
}

// textLine hands one non-blank line to h. A per-attempt line goes as read, for the per-attempt scanner's
// rules of stripping it.
func textLine(where position, trimmed, raw []byte, f Format, h handler) error {
	if f != FormatAttemptLog && (f == FormatOTLPJSON || bytes.Contains(trimmed, resourceSpansKey)) {
		td, err := jsonUnmarshaler.UnmarshalTraces(trimmed)
		if err == nil && td.ResourceSpans().Len() > 0 {
			return h.traces(td)
		}
		// A per-attempt attempt that only mentions resourceSpans (in a field's value) is one.
		if f == FormatAuto && isAttempt(raw) {
			return h.attemptLine(where, raw)
		}
		if err != nil {
			h.bad(where, fmt.Errorf("not an OTLP/JSON traces request: %w", err))
			return nil
		}
		h.skipped() // logs or metrics from the same file exporter, or an empty request
		return nil
	}
	return h.attemptLine(where, raw)
}

var jsonUnmarshaler = &ptrace.JSONUnmarshaler{}

func isAttempt(raw []byte) bool {
	ev, ok, err := attemptlog.ParseLine(raw)
	return err == nil && ok && ev.IsToolAttempt()
}

// readDocument reads the rest of the input as one OTLP/JSON document starting with first,
// unless it is over maxDoc bytes: then it is reported and the rest of the input, which it
// is, is not read.
func readDocument(where position, first []byte, br *bufio.Reader, maxDoc int, h handler) error {
	// first is a view into br's buffer: ReadAll copies it before br reads on.
	doc, err := io.ReadAll(io.LimitReader(io.MultiReader(bytes.NewReader(first), br), int64(maxDoc)+1))
	if err != nil {
		h.bad(where, fmt.Errorf("input ends early inside a JSON document: %w", err))
		return nil
	}
	if len(doc) > maxDoc {
		h.bad(where, &oversizedError{what: "JSON document", size: int64(len(doc)), bound: maxDoc, atLeast: true})
		return nil
	}
	td, err := jsonUnmarshaler.UnmarshalTraces(doc)
	if err != nil {
		h.bad(where, fmt.Errorf("a JSON document starts here that is not an OTLP/JSON traces request: %w", err))
		return nil
	}
	return h.traces(td)
}

// nextLine returns the next line of br with its newline, reusing *buf. A line over maxLine
// bytes (its newline included) is read to its end without being held: nextLine returns
// no line and its length instead.
func nextLine(br *bufio.Reader, buf *[]byte, maxLine int) (line []byte, over int64, err error) {
	line, err = br.ReadSlice('\n')
	if len(line) > maxLine {
		over, err = readPast(br, int64(len(line)), err)
		return nil, over, err
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, 0, err
	}
	*buf = append((*buf)[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = br.ReadSlice('\n')
		if len(*buf)+len(line) > maxLine {
			n := int64(len(*buf) + len(line))
			*buf = nil // a later long line grows one again; this one is not kept at the bound
			over, err = readPast(br, n, err)
			return nil, over, err
		}
		*buf = appendLine(*buf, line, maxLine)
	}
	return *buf, 0, err
}

// readPast reads the rest of a line of which n bytes were read, the last read having
// ended with err, and returns the line's length and the error its end came with.
func readPast(br *bufio.Reader, n int64, err error) (int64, error) {
	for errors.Is(err, bufio.ErrBufferFull) {
		var piece []byte
		piece, err = br.ReadSlice('\n')
		n += int64(len(piece))
	}
	return n, err
}

// appendLine appends a piece of a line to buf, doubling its capacity (append's growth of a
// quarter at a time copies a long line many times) but to no more than maxLine, which
// len(buf)+len(piece) is not over.
func appendLine(buf, piece []byte, maxLine int) []byte {
	if cap(buf)-len(buf) < len(piece) {
		grown := make([]byte, len(buf), min(max(2*len(buf), len(buf)+len(piece)), maxLine))
		copy(grown, buf)
		buf = grown
	}
	return append(buf, piece...)
}

var protoUnmarshaler = &ptrace.ProtoUnmarshaler{}

// readProto reads length-prefixed protobuf messages, as the file exporter writes them with
// format: proto (and with format: json and compression, each message compressed). A
// message over maxMessage bytes, compressed or decompressed, is skipped.
func readProto(name string, br *bufio.Reader, maxMessage int, h handler) error {
	var offset int64
	var buf bytes.Buffer
	var zdec *zstd.Decoder
	defer func() {
		if zdec != nil {
			zdec.Close()
		}
	}()
	for n := 1; ; n++ {
		where := position{file: name, message: n, offset: offset}
		var prefix [4]byte
		if _, err := io.ReadFull(br, prefix[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			h.bad(where, fmt.Errorf("truncated length prefix: %w", err))
			return nil
		}
		size := binary.BigEndian.Uint32(prefix[:])
		// Grown as the bytes arrive, not to the length a corrupt prefix claims; reused, as
		// decoding copies what it keeps. A message over the bound is read past, not held.
		var sink io.Writer = &buf
		if uint64(size) > uint64(maxMessage) {
			sink = io.Discard
		}
		buf.Reset()
		if n, err := io.CopyN(sink, br, int64(size)); err != nil {
			h.bad(where, fmt.Errorf("truncated message: %d of %d bytes: %w", n, size, err))
			return nil
		}
		offset += 4 + int64(size)
		if sink == io.Discard {
			h.bad(where, &oversizedError{what: "message", size: int64(size), bound: maxMessage})
			continue
		}
		payload := buf.Bytes()
		if bytes.HasPrefix(payload, zstdMagic) {
			if zdec == nil {
				d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(maxMessage)))
				if err != nil {
					return fmt.Errorf("zstd: %w", err)
				}
				zdec = d
			}
			out, err := zdec.DecodeAll(payload, nil)
			if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
				h.bad(where, &oversizedError{what: "decompressed message", bound: maxMessage, atLeast: true})
				continue
			}
			if err != nil {
				h.bad(where, fmt.Errorf("zstd: %w", err))
				continue
			}
			payload = out
		}
		td, err := unmarshalMessage(payload)
		if err != nil {
			h.bad(where, err)
			continue
		}
		if td.ResourceSpans().Len() == 0 {
			h.skipped()
			continue
		}
		if err := h.traces(td); err != nil {
			return err
		}
	}
}

// unmarshalMessage decodes one message: protobuf, or JSON (the file exporter's compressed
// JSON messages).
func unmarshalMessage(payload []byte) (ptrace.Traces, error) {
	if trimmed := bytes.TrimSpace(payload); len(trimmed) > 0 && trimmed[0] == '{' {
		td, err := jsonUnmarshaler.UnmarshalTraces(trimmed)
		if err != nil {
			return td, fmt.Errorf("not an OTLP/JSON traces request: %w", err)
		}
		return td, nil
	}
	td, err := protoUnmarshaler.UnmarshalTraces(payload)
	if err != nil {
		return td, fmt.Errorf("not an OTLP protobuf traces request: %w", err)
	}
	return td, nil
}
