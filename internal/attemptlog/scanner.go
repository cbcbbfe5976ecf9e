package attemptlog

import (
	"fmt"
)

// required are the keys completeness() checks, in the script's order.
var required = [...]string{"run_id", "span_id", "attempt", "tool_name", "args_hash", "status", "t_start", "t_end"}

// storedLevel is the indentation of a storm's values in the report (report, top_storms,
// storm): run_id, tool_name and idem_hash are kept as JSON text rendered at that depth.
const storedLevel = 3

// Scanner accumulates tool_attempt events as the script's scan() does. It is not safe for
// concurrent use.
type Scanner struct {
	threshold  int
	toolEvents int64
	incomplete int64
	spans      map[string]*span
	order      []*span // first appearance, the order of the script's dict

	texts     map[string]uint32 // interned JSON text of statuses and first-row values
	textOf    []string
	statusKey map[string]int32 // hash key of a status → class
	classOf   []int32          // text id → status class, for texts used as statuses
	bigs      []pyInt          // attempt numbers that do not fit in an int64
	added     int64
	scratch   []byte
}

// span is one str(span_id) group of complete attempts.
type span struct {
	id       string
	seq      int64 // of the span's first attempt, the span's place in the script's dict
	rows     []row
	args     []string          // distinct args_hash keys in order
	argIndex map[string]uint32 // over args, once there are many
	first    firstRow          // the row that sorts first among those with a usable t_start
	last     lastRow           // the row that sorts last among those with a usable t_end
	suspects []suspect         // rows whose t_start or t_end int() rejects
}

// row is what the report needs of one attempt: int(attempt), its status, its args_hash.
type row struct {
	attempt int64  // the value, or an index into Scanner.bigs with flagBigAttempt
	status  uint32 // text id
	args    uint32 // index into span.args, with the flags below
}

const (
	flagBigAttempt = 1 << 31
	flagBadStart   = 1 << 30
	flagBadEnd     = 1 << 29
	argsMask       = flagBadEnd - 1
)

type firstRow struct {
	set                       bool
	attempt, tStart           pyInt
	runID, toolName, idemHash uint32
}

type lastRow struct {
	set           bool
	attempt, tEnd pyInt
}

type suspect struct {
	row int
	seq int64
	// nextSeq is the seq of the span's next row, which takes the span's place in the
	// script's dict if this row, the span's first, is dropped.
	nextSeq          int64
	origin           Origin
	errStart, errEnd error
}

// NewScanner returns a scanner that counts a span as a storm from stormThreshold attempts
// (the script's default is 2). A threshold below 1 acts as 1: every span has an attempt.
func NewScanner(stormThreshold int) *Scanner {
	return &Scanner{
		threshold: max(stormThreshold, 1),
		spans:     make(map[string]*span),
		texts:     make(map[string]uint32),
		statusKey: make(map[string]int32),
	}
}

// Add takes one event. Events that are not tool_attempt are ignored; an incomplete attempt
// (a required key missing, null or "") is only counted. The error, wrapping
// ErrScriptCrash, is for a complete attempt the script would crash on: its attempt is not
// an integer to int(), or its status or args_hash is a list or an object. Such an attempt
// is left out of the report entirely.
func (s *Scanner) Add(e Event) error {
	if !e.IsToolAttempt() {
		return nil
	}
	if !complete(e) {
		s.toolEvents++
		s.incomplete++
		return nil
	}
	field := func(key string) any { v, _ := e.get(key); return v }
	attempt, err := pyIntOf(field("attempt"))
	if err != nil {
		return fmt.Errorf("%w: sorting attempts by int(attempt): %w", ErrScriptCrash, err)
	}
	status, err := s.status(field("status"))
	if err != nil {
		return err
	}
	argsKey, err := hashKey(field("args_hash"))
	if err != nil {
		return fmt.Errorf("%w: a set of args_hash values: args_hash is a %s (unhashable)", ErrScriptCrash, pyTypeName(field("args_hash")))
	}
	s.toolEvents++
	s.added++
	key := pyStr(field("span_id"))
	sp := s.spans[key]
	if sp == nil {
		sp = &span{id: key, seq: s.added}
		s.spans[key] = sp
		s.order = append(s.order, sp)
	}
	if n := len(sp.suspects); n > 0 && sp.suspects[n-1].row == len(sp.rows)-1 {
		sp.suspects[n-1].nextSeq = s.added
	}
	r := row{status: status, args: sp.argIndexOf(argsKey)}
	if attempt.big != nil {
		r.attempt = int64(len(s.bigs))
		r.args |= flagBigAttempt
		s.bigs = append(s.bigs, attempt)
	} else {
		r.attempt = attempt.small
	}
	tStart, errStart := pyIntOf(field("t_start"))
	tEnd, errEnd := pyIntOf(field("t_end"))
	if errStart != nil || errEnd != nil {
		if errStart != nil {
			r.args |= flagBadStart
		}
		if errEnd != nil {
			r.args |= flagBadEnd
		}
		sp.suspects = append(sp.suspects, suspect{row: len(sp.rows), seq: s.added, origin: e.Origin, errStart: errStart, errEnd: errEnd})
	}
	sp.rows = append(sp.rows, r)
	if errStart == nil && (!sp.first.set || attempt.cmp(sp.first.attempt) < 0) {
		sp.first = firstRow{
			set: true, attempt: attempt, tStart: tStart,
			runID:    s.intern(field("run_id")),
			toolName: s.intern(field("tool_name")),
			idemHash: s.intern(field("idem_hash")), // nil when missing, as .get gives
		}
	}
	if errEnd == nil && (!sp.last.set || attempt.cmp(sp.last.attempt) >= 0) {
		sp.last = lastRow{set: true, attempt: attempt, tEnd: tEnd}
	}
	return nil
}

// complete is the script's completeness() == 1.0.
func complete(e Event) bool {
	for _, key := range required {
		v, ok := e.get(key)
		if !ok || v == nil {
			return false
		}
		if s, isString := v.(string); isString && s == "" {
			return false
		}
	}
	return true
}

// status interns a status value and gives its text id a class for the status-flip set.
func (s *Scanner) status(v any) (uint32, error) {
	key, err := hashKey(v)
	if err != nil {
		return 0, fmt.Errorf("%w: set(statuses): status is a %s (unhashable)", ErrScriptCrash, pyTypeName(v))
	}
	id := s.intern(v)
	for int(id) >= len(s.classOf) {
		s.classOf = append(s.classOf, 0)
	}
	class, ok := s.statusKey[key]
	if !ok {
		class = int32(len(s.statusKey))
		s.statusKey[key] = class
	}
	s.classOf[id] = class
	return id, nil
}

// intern returns the id of v's JSON text at the storm's depth.
func (s *Scanner) intern(v any) uint32 {
	s.scratch = appendPyJSON(s.scratch[:0], v, storedLevel)
	if id, ok := s.texts[string(s.scratch)]; ok {
		return id
	}
	text := string(s.scratch)
	id := uint32(len(s.textOf))
	s.texts[text] = id
	s.textOf = append(s.textOf, text)
	return id
}

// argIndexOf returns the index of an args_hash key among the span's distinct values,
// adding it if new.
func (sp *span) argIndexOf(key string) uint32 {
	if sp.argIndex != nil {
		if i, ok := sp.argIndex[key]; ok {
			return i
		}
	} else {
		for i, k := range sp.args {
			if k == key {
				return uint32(i)
			}
		}
	}
	i := uint32(len(sp.args))
	sp.args = append(sp.args, key)
	switch {
	case sp.argIndex != nil:
		sp.argIndex[key] = i
	case len(sp.args) > indexFrom:
		sp.argIndex = make(map[string]uint32, 2*len(sp.args))
		for j, k := range sp.args {
			sp.argIndex[k] = uint32(j)
		}
	}
	return i
}
