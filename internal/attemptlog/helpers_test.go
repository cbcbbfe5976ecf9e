package attemptlog

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"
)

// scanned is what a caller of the package sees for one input.
type scanned struct {
	report Report
	json   string
	// lineErrs are the errors of ParseLine and Add by 1-based line number.
	lineErrs map[int64]error
}

// crashLines are the lines the script would crash on: errors other than ErrNotJSON (which
// the script skips too), and the attempts Report dropped.
func (s scanned) crashLines() map[int64]bool {
	lines := map[int64]bool{}
	for line, err := range s.lineErrs {
		if !errors.Is(err, ErrNotJSON) {
			lines[line] = true
		}
	}
	for _, d := range s.report.Dropped {
		lines[d.Origin.Line] = true
	}
	return lines
}

// scanInput runs the package over input as a caller would: SplitLines, ParseLine, Add with
// an Origin, Report, WriteJSON.
func scanInput(t testing.TB, input []byte, threshold int) scanned {
	t.Helper()
	lines := bufio.NewScanner(bytes.NewReader(input))
	lines.Buffer(make([]byte, 0, 64<<10), 64<<20)
	lines.Split(SplitLines)
	sc := NewScanner(threshold)
	out := scanned{lineErrs: map[int64]error{}}
	var n int64
	for lines.Scan() {
		n++
		e, ok, err := ParseLine(lines.Bytes())
		if err != nil {
			out.lineErrs[n] = err
			continue
		}
		if !ok {
			continue
		}
		e.Origin = Origin{File: "input", Line: n}
		if err := sc.Add(e); err != nil {
			out.lineErrs[n] = err
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatalf("split lines: %v", err)
	}
	out.report = sc.Report()
	var b strings.Builder
	if err := out.report.WriteJSON(&b); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	out.json = b.String()
	return out
}

// splitKeepingEnds splits input into lines as SplitLines does, each with its line end.
func splitKeepingEnds(input []byte) [][]byte {
	var lines [][]byte
	for len(input) > 0 {
		adv, _, _ := SplitLines(input, true)
		lines = append(lines, input[:adv])
		input = input[adv:]
	}
	return lines
}
