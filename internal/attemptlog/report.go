package attemptlog

import (
	"cmp"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
)

// topStorms is the script's storms[:20].
const topStorms = 20

// Report is what the script's scan() returns, plus the attempts left out where the script
// would crash while building it.
type Report struct {
	ToolEvents       int64
	IncompleteEvents int64
	Spans            int64
	StormSpans       int64
	StatusFlipSpans  int64
	// TopStorms are the first 20 storms by attempts, most first, ties in span order.
	TopStorms []Storm
	// Dropped are attempts left out because the script would crash converting their t_start
	// or t_end, in the order they were added. They are not part of the JSON report.
	Dropped []Dropped
}

// Storm is one entry of top_storms.
type Storm struct {
	SpanID     string // str(span_id); WTF-8 where Python's str held a lone surrogate
	Attempts   int
	UniqueArgs int
	MS         *big.Int // int(last t_end) - int(first t_start)
	// JSON text of the first attempt's run_id, tool_name and idem_hash, and of each
	// attempt's status, as json.dump prints them in the report.
	runID, toolName, idemHash string
	statuses                  []string
}

// Dropped is an attempt Report left out, with the Origin its event carried.
type Dropped struct {
	Origin Origin
	Err    error // wraps ErrScriptCrash
	seq    int64
}

type stormSpan struct {
	sp   *span
	kept []int // row indices in attempt order; nil when all rows are kept and unsorted
	n    int
	seq  int64 // of the span's first kept row: its place in the script's dict
}

// Report computes the report for everything added so far. It does not change the scanner:
// more events may be added and Report called again.
func (s *Scanner) Report() Report {
	r := Report{ToolEvents: s.toolEvents, IncompleteEvents: s.incomplete}
	var storms []stormSpan
	moved := false
	for _, sp := range s.order {
		kept, dropped := s.settle(sp)
		n := len(sp.rows)
		if kept != nil {
			n = len(kept)
		}
		seq := sp.seq
		if len(dropped) > 0 {
			seq = sp.firstKeptSeq(kept)
			moved = true
		}
		r.ToolEvents -= int64(len(dropped))
		r.Dropped = append(r.Dropped, dropped...)
		if n == 0 {
			continue
		}
		r.Spans++
		if s.flips(sp, kept) {
			r.StatusFlipSpans++
		}
		if n >= s.threshold {
			storms = append(storms, stormSpan{sp: sp, kept: kept, n: n, seq: seq})
		}
	}
	if moved { // a span whose first attempt was dropped starts at its next one
		slices.SortStableFunc(storms, func(a, b stormSpan) int { return cmp.Compare(a.seq, b.seq) })
	}
	slices.SortStableFunc(r.Dropped, func(a, b Dropped) int { return cmp.Compare(a.seq, b.seq) })
	r.StormSpans = int64(len(storms))
	// sort(key=attempts, reverse=True) keeps equal rows in their order, as a stable sort does.
	slices.SortStableFunc(storms, func(a, b stormSpan) int { return cmp.Compare(b.n, a.n) })
	for _, st := range storms[:min(len(storms), topStorms)] {
		r.TopStorms = append(r.TopStorms, s.storm(st))
	}
	return r
}

// settle replays the script's crashes on t_start and t_end: while the span has at least
// threshold attempts, int() of the last attempt's t_end, then of the first attempt's
// t_start, must succeed, or that attempt is dropped. It returns the kept rows in attempt
// order, or nil when the span has no suspect row and keeps them all.
func (s *Scanner) settle(sp *span) (kept []int, dropped []Dropped) {
	if len(sp.suspects) == 0 {
		return nil, nil
	}
	idx := s.sortedRows(sp)
	lo, hi := 0, len(idx)-1
	for hi-lo+1 >= s.threshold {
		switch {
		case sp.rows[idx[hi]].args&flagBadEnd != 0:
			dropped = append(dropped, sp.dropped(idx[hi], false))
			hi--
		case sp.rows[idx[lo]].args&flagBadStart != 0:
			dropped = append(dropped, sp.dropped(idx[lo], true))
			lo++
		default:
			return idx[lo : hi+1], dropped
		}
	}
	return idx[lo : hi+1], dropped
}

// firstKeptSeq is the seq of the first row, in the order added, that settle kept.
func (sp *span) firstKeptSeq(kept []int) int64 {
	if len(kept) == 0 {
		return sp.seq
	}
	first := slices.Min(kept)
	seq := sp.seq
	for _, sus := range sp.suspects {
		if sus.row >= first {
			break
		}
		seq = sus.nextSeq // rows before first were all dropped, so all were suspects
	}
	return seq
}

func (sp *span) dropped(rowIndex int, start bool) Dropped {
	for _, sus := range sp.suspects {
		if sus.row != rowIndex {
			continue
		}
		if start {
			return Dropped{Origin: sus.origin, seq: sus.seq, Err: fmt.Errorf("%w: int(t_start) of a storm's first attempt: %w", ErrScriptCrash, sus.errStart)}
		}
		return Dropped{Origin: sus.origin, seq: sus.seq, Err: fmt.Errorf("%w: int(t_end) of a storm's last attempt: %w", ErrScriptCrash, sus.errEnd)}
	}
	panic("attemptlog: a flagged row without its suspect record")
}

// sortedRows is the script's attempts.sort(key=int(attempt)): stable, by value.
func (s *Scanner) sortedRows(sp *span) []int {
	idx := make([]int, len(sp.rows))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return s.attemptOf(sp.rows[a]).cmp(s.attemptOf(sp.rows[b]))
	})
	return idx
}

func (s *Scanner) attemptOf(r row) pyInt {
	if r.args&flagBigAttempt != 0 {
		return s.bigs[r.attempt]
	}
	return pyInt{small: r.attempt}
}

// flips is len(set(statuses)) > 1 over the kept rows (all rows when kept is nil).
func (s *Scanner) flips(sp *span, kept []int) bool {
	seen, have := int32(0), false
	check := func(r row) bool {
		c := s.classOf[r.status]
		if !have {
			seen, have = c, true
			return false
		}
		return c != seen
	}
	if kept == nil {
		for _, r := range sp.rows {
			if check(r) {
				return true
			}
		}
		return false
	}
	for _, i := range kept {
		if check(sp.rows[i]) {
			return true
		}
	}
	return false
}

func (s *Scanner) storm(st stormSpan) Storm {
	sp := st.sp
	kept := st.kept
	if kept == nil {
		kept = s.sortedRows(sp)
	}
	out := Storm{
		SpanID:   sp.id,
		Attempts: st.n,
		MS:       sp.last.tEnd.sub(sp.first.tStart),
		runID:    s.textOf[sp.first.runID],
		toolName: s.textOf[sp.first.toolName],
		idemHash: s.textOf[sp.first.idemHash],
		statuses: make([]string, len(kept)),
	}
	for i, ri := range kept {
		out.statuses[i] = s.textOf[sp.rows[ri].status]
	}
	if len(kept) == len(sp.rows) {
		out.UniqueArgs = len(sp.args)
	} else {
		distinct := make(map[uint32]struct{}, len(kept))
		for _, ri := range kept {
			distinct[sp.rows[ri].args&argsMask] = struct{}{}
		}
		out.UniqueArgs = len(distinct)
	}
	return out
}

// WriteJSON writes the report as the script prints it: json.dump(report, indent=2) and a
// newline.
func (r Report) WriteJSON(w io.Writer) error {
	b := make([]byte, 0, 512+len(r.TopStorms)*512)
	b = append(b, '{')
	counts := []struct {
		key string
		n   int64
	}{
		{"tool_events", r.ToolEvents},
		{"incomplete_events", r.IncompleteEvents},
		{"spans", r.Spans},
		{"storm_spans", r.StormSpans},
		{"status_flip_spans", r.StatusFlipSpans},
	}
	for _, c := range counts {
		b = appendIndent(b, 1)
		b = appendJSONString(b, c.key)
		b = append(b, ": "...)
		b = strconv.AppendInt(b, c.n, 10)
		b = append(b, ',')
	}
	b = appendIndent(b, 1)
	b = append(b, `"top_storms": `...)
	if len(r.TopStorms) == 0 {
		b = append(b, "[]"...)
	} else {
		b = append(b, '[')
		for i, st := range r.TopStorms {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendIndent(b, 2)
			b = st.appendJSON(b)
		}
		b = appendIndent(b, 1)
		b = append(b, ']')
	}
	b = appendIndent(b, 0)
	b = append(b, "}\n"...)
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write attempt report: %w", err)
	}
	return nil
}

// appendJSON writes the storm as a dict at depth 2 of the report, keys in the script's order.
func (st Storm) appendJSON(b []byte) []byte {
	field := func(key string) {
		b = appendIndent(b, storedLevel)
		b = appendJSONString(b, key)
		b = append(b, ": "...)
	}
	b = append(b, '{')
	field("span_id")
	b = appendJSONString(b, st.SpanID)
	b = append(b, ',')
	field("run_id")
	b = append(b, st.runID...)
	b = append(b, ',')
	field("tool_name")
	b = append(b, st.toolName...)
	b = append(b, ',')
	field("attempts")
	b = strconv.AppendInt(b, int64(st.Attempts), 10)
	b = append(b, ',')
	field("statuses")
	b = append(b, '[')
	for i, status := range st.statuses {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendIndent(b, storedLevel+1)
		b = append(b, status...)
	}
	b = appendIndent(b, storedLevel)
	b = append(b, "],"...)
	field("unique_args")
	b = strconv.AppendInt(b, int64(st.UniqueArgs), 10)
	b = append(b, ',')
	field("ms")
	b = st.MS.Append(b, 10)
	b = append(b, ',')
	field("idem_hash")
	b = append(b, st.idemHash...)
	b = appendIndent(b, 2)
	return append(b, '}')
}
