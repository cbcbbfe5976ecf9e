//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// huntHead is the length of the prefix values are indexed by: the shortest value hunted.
const huntHead = 8

// valueHunt finds thousands of values in a text in one pass. Values are indexed by their
// first huntHead bytes, so a position of the text costs a bit test and, for the few whose
// head some value has, a map lookup.
type valueHunt struct {
	forms  []huntForm
	byHead map[uint64][]int32
	heads  [1 << 10]uint64 // one bit per hashed head
}

// huntForm is one way an output may write a value (by its index).
type huntForm struct {
	text  string
	value int
}

// newValueHunt indexes values, each in every form escapedForms gives.
func newValueHunt(t *testing.T, values []string) *valueHunt {
	t.Helper()
	h := &valueHunt{byHead: map[uint64][]int32{}}
	seen := map[string]bool{}
	for i, v := range values {
		if len(v) < huntHead {
			t.Fatalf("value %q is shorter than the %d bytes the search indexes", v, huntHead)
		}
		for _, f := range escapedForms(v) {
			if seen[f] {
				continue
			}
			seen[f] = true
			head := headOf(f)
			h.byHead[head] = append(h.byHead[head], int32(len(h.forms)))
			h.forms = append(h.forms, huntForm{f, i})
			bit := headBit(head)
			h.heads[bit/64] |= 1 << (bit % 64)
		}
	}
	return h
}

// escapedForms are how an output may write v: as is, escaped inside a JSON string once or
// twice (as Go's encoding/json escapes), and URL-escaped in a query or a path.
func escapedForms(v string) []string {
	once := jsonEscaped(v)
	return []string{v, once, jsonEscaped(once), url.QueryEscape(v), url.PathEscape(v)}
}

func jsonEscaped(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func headOf(s string) uint64 {
	var k uint64
	for i := range huntHead {
		k |= uint64(s[i]) << (8 * i)
	}
	return k
}

func headBit(head uint64) uint64 { return head * 0x9e3779b97f4a7c15 >> 48 }

// each calls found for every occurrence of a form of a value in text: the value's index
// and where the form starts and ends. Overlapping occurrences are all found.
func (h *valueHunt) each(text string, found func(value, start, end int)) {
	var k uint64
	for i := 0; i < len(text); i++ {
		k = k>>8 | uint64(text[i])<<56
		if i < huntHead-1 {
			continue
		}
		if bit := headBit(k); h.heads[bit/64]&(1<<(bit%64)) == 0 {
			continue
		}
		start := i - (huntHead - 1)
		for _, f := range h.byHead[k] {
			if form := h.forms[f]; strings.HasPrefix(text[start:], form.text) {
				found(form.value, start, start+len(form.text))
			}
		}
	}
}

// secretsSearch holds every raw value a run sent and searches outputs for all of them.
type secretsSearch struct {
	values []string
	sentIn []string // per value, the first trace that sent it
	hunt   *valueHunt
	// outside lists, per trace, the values it sends outside its own payload values: in its
	// own spans these are no leak. A failure text one trace returns in an isError result
	// is another trace's span status, which agentsim's truth leaves out of that trace's
	// values as it leaves out asset names.
	outside map[string]map[int]bool
	// excused counts the values found in a trace that sends them outside its payloads.
	excused map[int]bool
	leaks   leakTable
}

func newSecretsSearch(t *testing.T, values, sentIn []string) *secretsSearch {
	t.Helper()
	return &secretsSearch{values: values, sentIn: sentIn, hunt: newValueHunt(t, values),
		outside: map[string]map[int]bool{}, excused: map[int]bool{}}
}

// learnSent reads what a trace sent (td), whose own payload values are own, and notes the
// other values it carries outside them.
func (s *secretsSearch) learnSent(td ptrace.Traces, own map[int]bool) {
	var hits [][3]int
	eachPlace(td, func(traceID, _ string, l located) {
		hits = hits[:0]
		s.hunt.each(l.text, func(v, start, end int) { hits = append(hits, [3]int{v, start, end}) })
		for _, h := range hits {
			if own[h[0]] || slices.ContainsFunc(hits, func(o [3]int) bool { return own[o[0]] && o[1] <= h[1] && h[2] <= o[2] }) {
				continue
			}
			if s.outside[traceID] == nil {
				s.outside[traceID] = map[int]bool{}
			}
			s.outside[traceID][h[0]] = true
		}
	})
}

// text searches one string of an output. words finds a value only where it stands as a
// word, for texts whose own words (metric names) are also payload words ("accepted").
func (s *secretsSearch) text(output, span, where, text, traceID string, words bool) {
	s.hunt.each(text, func(v, start, end int) {
		if words && !isWord(text, start, end) {
			return
		}
		if s.outside[traceID][v] {
			s.excused[v] = true
			return
		}
		s.leaks.add(output, span, where, fmt.Sprintf("%q (sent in trace %s)", s.values[v], s.sentIn[v]), s.values[v])
	})
}

// backend searches every string of every span, resource and scope the backend received.
func (s *secretsSearch) backend(sink *consumertest.TracesSink) (bytes int) {
	for _, td := range sink.AllTraces() {
		eachPlace(td, func(traceID, span string, l located) {
			bytes += len(l.text)
			s.text("backend", span, l.where, l.text, traceID, false)
		})
	}
	return bytes
}

// lines searches a text line by line, leaving out lines skip reports.
func (s *secretsSearch) lines(output, text string, words bool, skip func(string) bool) {
	n := 0
	for line := range strings.Lines(text) {
		n++
		if skip == nil || !skip(line) {
			s.text(output, "", fmt.Sprintf("line %d", n), line, "", words)
		}
	}
}

// logRecords searches every log record the logs backend received: body, attributes, event
// name, severity text, and its resource and scope.
func (s *secretsSearch) logRecords(sink *consumertest.LogsSink) (bytes int) {
	n := 0
	for _, ld := range sink.AllLogs() {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			rl := ld.ResourceLogs().At(i)
			res := appendMapLocated(nil, "resource attribute ", rl.Resource().Attributes().AsRaw())
			for j := 0; j < rl.ScopeLogs().Len(); j++ {
				sl := rl.ScopeLogs().At(j)
				places := appendMapLocated(slices.Clone(res), "scope attribute ", sl.Scope().Attributes().AsRaw())
				places = append(places, located{"scope name", sl.Scope().Name()}, located{"scope version", sl.Scope().Version()})
				for k := 0; k < sl.LogRecords().Len(); k++ {
					lr := sl.LogRecords().At(k)
					n++
					record := fmt.Sprintf("log record %d", n)
					for _, l := range append(logRecordLocated(lr), places...) {
						bytes += len(l.text)
						s.text("logs backend", record, l.where, l.text, "", false)
					}
				}
			}
		}
	}
	return bytes
}

func logRecordLocated(lr plog.LogRecord) []located {
	out := []located{{"body", lr.Body().AsString()}, {"event name", lr.EventName()}, {"severity text", lr.SeverityText()}}
	return appendMapLocated(out, "attribute ", lr.Attributes().AsRaw())
}

// eachPlace calls place for every string of td a backend could show, with the trace it
// belongs to and its span's name as the leak table shows it ("" for a resource or scope,
// whose strings count for each trace sent under it).
func eachPlace(td ptrace.Traces, place func(traceID, span string, l located)) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		res := appendMapLocated(nil, "resource attribute ", rs.Resource().Attributes().AsRaw())
		traces := map[string]bool{}
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			res = appendMapLocated(res, "scope attribute ", ss.Scope().Attributes().AsRaw())
			res = append(res, located{"scope name", ss.Scope().Name()}, located{"scope version", ss.Scope().Version()})
			for k := 0; k < ss.Spans().Len(); k++ {
				span := ss.Spans().At(k)
				traceID := span.TraceID().String()
				traces[traceID] = true
				name := spanLabel(span)
				for _, l := range spanLocated(span) {
					place(traceID, name, l)
				}
			}
		}
		for _, traceID := range slices.Sorted(maps.Keys(traces)) {
			for _, l := range res {
				place(traceID, "", l)
			}
		}
	}
}

var spanNumber = regexp.MustCompile(`^step [0-9]+$`)

// spanLabel names a span in the leak table: step numbers folded, late copies marked.
func spanLabel(span ptrace.Span) string {
	name := spanNumber.ReplaceAllString(span.Name(), "step N")
	if id := span.SpanID(); [3]byte(id[:3]) == lateCopyMark {
		name += " (late)"
	}
	return name
}

// isWord reports text[start:end] with no letter, digit or '_' right before or after it
// where the value itself starts or ends with one.
func isWord(text string, start, end int) bool {
	word := func(c byte) bool {
		return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	return (start == 0 || !word(text[start-1]) || !word(text[start])) &&
		(end == len(text) || !word(text[end]) || !word(text[end-1]))
}

// leakTable collects where raw payload values were found, one row per output, span (or
// log record) and place (list indexes in attribute keys folded into N).
type leakTable struct {
	rows map[[3]string]*leakRow
	seen map[string]bool
}

type leakRow struct {
	values  map[string]bool
	example string
}

var keyIndex = regexp.MustCompile(`\.[0-9]+(\.|$)`)

func (l *leakTable) add(output, span, where, example, value string) {
	if l.rows == nil {
		l.rows, l.seen = map[[3]string]*leakRow{}, map[string]bool{}
	}
	k := [3]string{output, span, keyIndex.ReplaceAllString(where, ".N$1")}
	r := l.rows[k]
	if r == nil {
		r = &leakRow{values: map[string]bool{}, example: example}
		l.rows[k] = r
	}
	r.values[value] = true
	l.seen[value] = true
}

func (l leakTable) String() string {
	keys := slices.Collect(maps.Keys(l.rows))
	slices.SortFunc(keys, func(a, b [3]string) int {
		return strings.Compare(strings.Join(a[:], "\x00"), strings.Join(b[:], "\x00"))
	})
	var b strings.Builder
	fmt.Fprintf(&b, "  %-14s %-36s %-58s %6s  %s\n", "output", "span", "where", "values", "example")
	for _, k := range keys {
		r := l.rows[k]
		fmt.Fprintf(&b, "  %-14s %-36s %-58s %6d  %s\n", k[0], k[1], k[2], len(r.values), r.example)
	}
	return b.String()
}

// TestValueHunt: every occurrence of every form is found, overlapping ones too, and word
// mode tells a value inside a metric name from one standing alone.
func TestValueHunt(t *testing.T) {
	values := []string{"DE44 5001 0517", "5001 0517 5407", "accepted", "ana.meyer1234@example.com", `say "hi" now`}
	h := newValueHunt(t, values)
	text := `x DE44 5001 0517 5407 y receiver_accepted_spans accepted to=ana.meyer1234%40example.com {"m":"say \"hi\" now"}`
	var got []string
	h.each(text, func(v, start, end int) {
		got = append(got, fmt.Sprintf("%s word=%t", values[v], isWord(text, start, end)))
	})
	want := []string{"DE44 5001 0517 word=true", "5001 0517 5407 word=true", "accepted word=false", "accepted word=true",
		"ana.meyer1234@example.com word=true", `say "hi" now word=true`}
	if !slices.Equal(got, want) {
		t.Errorf("found\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
