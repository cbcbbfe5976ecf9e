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

	"github.com/retrystorm/retrystorm/internal/seedscan"
)

// Format is how an input file is read.
type Format string

const (
	// FormatAuto detects the format per file: gzip and zstd are decompressed first; a file
	// whose first byte is 0 holds the file exporter's length-prefixed protobuf messages;
	// one with no zero byte in its first 4 KiB is text: one JSON value per line, each line an OTLP/JSON traces request
	// (it has "resourceSpans") or a seed-format event; a file whose first line is not JSON
	// on its own is one OTLP/JSON document.
	FormatAuto Format = "auto"
	// FormatOTLPJSON is OTLP/JSON: one ExportTraceServiceRequest per line, as the file
	// exporter writes it, or one document.
	FormatOTLPJSON Format = "otlp-json"
	// FormatOTLPProto is the file exporter's protobuf format: each message preceded by its
	// length, 4 bytes big-endian (zstd-compressed messages are decompressed).
	FormatOTLPProto Format = "otlp-proto"
	// FormatSeed is per-attempt JSONL: "event":"tool_attempt" lines, other lines skipped.
	FormatSeed Format = "seed"
)

func parseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatAuto, FormatOTLPJSON, FormatOTLPProto, FormatSeed:
		return f, nil
	}
	return "", fmt.Errorf("--format must be auto, otlp-json, otlp-proto or seed, not %q", s)
}

// maxMessageBytes bounds one protobuf message of a file, compressed or not: a length above
// it is taken for a corrupt file. Memory for a message grows with the bytes that arrive.
const maxMessageBytes = 256 << 20

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
	// seedLine is one text line that is not OTLP: a seed-format event or a bad line.
	seedLine(where position, line []byte) error
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
var errUnrecognised = errors.New("not OTLP/JSON, OTLP protobuf or seed-format JSONL")

// readInput reads one input in format f and hands what it holds to h. It returns an error
// only when the input cannot be read at all; a bad line or message is reported to h.
func readInput(name string, r io.Reader, f Format, h handler) error {
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
		return readProto(name, br, h)
	}
	return readText(name, br, f, h)
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
// holds "resourceSpans" and a seed-format line otherwise; a first line that is not JSON
// on its own starts a multi-line OTLP/JSON document, read whole.
func readText(name string, br *bufio.Reader, f Format, h handler) error {
	lineNo := 0
	first := true
	var buf []byte
	for {
		line, err := nextLine(br, &buf)
		if len(line) > 0 || err == nil {
			lineNo++
		}
		if err != nil && !errors.Is(err, io.EOF) {
			// The input ends early: its last line is cut, not bad.
			h.bad(position{file: name, line: lineNo}, fmt.Errorf("input ends early: %w", err))
			return nil
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) > 0 {
			if first && f != FormatSeed && startsDocument(trimmed) {
				return readDocument(name, lineNo, line, br, h)
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
// not JSON on its own and is a lone "{" or names resourceSpans (a seed-format line that
// Go's JSON does not take, with NaN in it, say, is not mistaken for one).
func startsDocument(first []byte) bool {
	return first[0] == '{' && !json.Valid(first) && (len(first) == 1 || bytes.Contains(first, resourceSpansKey))
}

// textLine hands one non-blank line to h. A seed-format line goes as read, for the seed's
// rules of stripping it.
func textLine(where position, trimmed, raw []byte, f Format, h handler) error {
	if f != FormatSeed && (f == FormatOTLPJSON || bytes.Contains(trimmed, resourceSpansKey)) {
		td, err := jsonUnmarshaler.UnmarshalTraces(trimmed)
		if err == nil && td.ResourceSpans().Len() > 0 {
			return h.traces(td)
		}
		// A seed-format attempt that only mentions resourceSpans (in a field's value) is one.
		if f == FormatAuto && isSeedAttempt(raw) {
			return h.seedLine(where, raw)
		}
		if err != nil {
			h.bad(where, fmt.Errorf("not an OTLP/JSON traces request: %w", err))
			return nil
		}
		h.skipped() // logs or metrics from the same file exporter, or an empty request
		return nil
	}
	return h.seedLine(where, raw)
}

var jsonUnmarshaler = &ptrace.JSONUnmarshaler{}

func isSeedAttempt(raw []byte) bool {
	ev, ok, err := seedscan.ParseLine(raw)
	return err == nil && ok && ev.IsToolAttempt()
}

// readDocument reads the rest of the input as one OTLP/JSON document starting with first.
func readDocument(name string, lineNo int, first []byte, br *bufio.Reader, h handler) error {
	// first is a view into br's buffer: copied before br reads on.
	var doc bytes.Buffer
	doc.Write(first)
	if _, err := doc.ReadFrom(br); err != nil {
		h.bad(position{file: name, line: lineNo}, fmt.Errorf("input ends early inside a JSON document: %w", err))
		return nil
	}
	td, err := jsonUnmarshaler.UnmarshalTraces(doc.Bytes())
	if err != nil {
		h.bad(position{file: name, line: lineNo}, fmt.Errorf("a JSON document starts here that is not an OTLP/JSON traces request: %w", err))
		return nil
	}
	return h.traces(td)
}

// nextLine returns the next line of br with its newline, of any length, reusing *buf.
func nextLine(br *bufio.Reader, buf *[]byte) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	*buf = append((*buf)[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = br.ReadSlice('\n')
		*buf = append(*buf, line...)
	}
	return *buf, err
}

var protoUnmarshaler = &ptrace.ProtoUnmarshaler{}

// readProto reads length-prefixed protobuf messages, as the file exporter writes them with
// format: proto (and with format: json and compression, each message compressed).
func readProto(name string, br *bufio.Reader, h handler) error {
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
		if size > maxMessageBytes {
			h.bad(where, fmt.Errorf("message length %d is above %d: not a length-prefixed OTLP file, or corrupt; the rest of the file is not read", size, maxMessageBytes))
			return nil
		}
		// Grown as the bytes arrive, not to the length a corrupt prefix claims; reused, as
		// decoding copies what it keeps.
		buf.Reset()
		if n, err := io.CopyN(&buf, br, int64(size)); err != nil {
			h.bad(where, fmt.Errorf("truncated message: %d of %d bytes: %w", n, size, err))
			return nil
		}
		offset += 4 + int64(size)
		payload := buf.Bytes()
		if bytes.HasPrefix(payload, zstdMagic) {
			if zdec == nil {
				d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxMessageBytes))
				if err != nil {
					return fmt.Errorf("zstd: %w", err)
				}
				zdec = d
			}
			out, err := zdec.DecodeAll(payload, nil)
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
