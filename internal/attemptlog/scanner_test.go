package attemptlog

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/retrystorm/retrystorm/internal/fixtures"
)

// example is the labeled example of the per-attempt JSONL format: one span, three
// attempts, timeout then error then ok.
const example = fixtures.AttemptLogExample

// exampleReport is what the script prints for example.
const exampleReport = fixtures.AttemptLogExampleReport

func TestLabeledExample(t *testing.T) {
	got := scanInput(t, []byte(example), 2)
	if len(got.lineErrs) != 0 {
		t.Fatalf("line errors: %v", got.lineErrs)
	}
	r := got.report
	if r.ToolEvents != 3 || r.IncompleteEvents != 0 || r.Spans != 1 || r.StormSpans != 1 || r.StatusFlipSpans != 1 {
		t.Errorf("counts = %d %d %d %d %d, want 3 0 1 1 1", r.ToolEvents, r.IncompleteEvents, r.Spans, r.StormSpans, r.StatusFlipSpans)
	}
	if len(r.TopStorms) != 1 || r.TopStorms[0].SpanID != "span_19" || r.TopStorms[0].Attempts != 3 || r.TopStorms[0].MS.Int64() != 7680 {
		t.Errorf("top storms = %+v", r.TopStorms)
	}
	if got.json != exampleReport {
		t.Errorf("report:\n%s\nwant:\n%s", got.json, exampleReport)
	}
}

func TestEmptyInputReport(t *testing.T) {
	got := scanInput(t, []byte("\n  \n\r\n"), 2)
	want := "{\n  \"tool_events\": 0,\n  \"incomplete_events\": 0,\n  \"spans\": 0,\n  \"storm_spans\": 0,\n  \"status_flip_spans\": 0,\n  \"top_storms\": []\n}\n"
	if got.json != want {
		t.Errorf("report:\n%s\nwant:\n%s", got.json, want)
	}
}

// attemptLine is a complete attempt with fields overridden by extra (raw JSON values).
func attemptLine(span string, attempt string, extra map[string]string) string {
	fields := [][2]string{
		{"event", `"tool_attempt"`}, {"run_id", `"r"`}, {"span_id", span}, {"attempt", attempt},
		{"tool_name", `"t"`}, {"args_hash", `"h"`}, {"status", `"ok"`}, {"t_start", "10"}, {"t_end", "20"},
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range fields {
		v := f[1]
		if o, ok := extra[f[0]]; ok {
			v = o
			delete(extra, f[0])
		}
		if v == "" { // leave the key out
			continue
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + f[0] + `":` + v)
	}
	for k, v := range extra {
		b.WriteString(`,"` + k + `":` + v)
	}
	b.WriteString("}\n")
	return b.String()
}

func TestParseLineErrors(t *testing.T) {
	tests := []struct {
		name string
		line string
		want error // nil: parses
	}{
		{"object", `{"a":1}`, nil},
		{"python whitespace around", "\u3000\x1c {\"a\":1}\u2028\u0085\x0b", nil},
		{"NaN and infinities", `{"a":NaN,"b":Infinity,"c":-Infinity}`, nil},
		{"huge float", `{"a":1e400}`, nil},
		{"4300 digits", `{"a":-` + strings.Repeat("9", 4300) + `}`, nil},
		{"4301 digits", `{"a":` + strings.Repeat("9", 4301) + `}`, ErrScriptCrash},
		{"list", `[1,2]`, ErrScriptCrash},
		{"number", `5`, ErrScriptCrash},
		{"string", `"x"`, ErrScriptCrash},
		{"null", `null`, ErrScriptCrash},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", ErrScriptCrash},
		{"single quotes", `{'a':1}`, ErrNotJSON},
		{"trailing comma", `{"a":1,}`, ErrNotJSON},
		{"extra data", `{"a":1}}`, ErrNotJSON},
		{"BOM", "\ufeff{\"a\":1}", ErrNotJSON},
		{"leading zero", `{"a":01}`, ErrNotJSON},
		{"bare exponent", `{"a":1e}`, ErrNotJSON},
		{"raw control character", "{\"a\":\"\x01\"}", ErrNotJSON},
		{"bad escape", `{"a":"\x"}`, ErrNotJSON},
		{"negative NaN", `{"a":-NaN}`, ErrNotJSON},
		{"vertical tab between tokens", "{\"a\":\x0b1}", ErrNotJSON},
		{"too deep", `{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`, ErrTooDeep},
		{"deep but allowed", `{"a":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ok, err := ParseLine([]byte(tt.line))
			if tt.want == nil {
				if err != nil || !ok {
					t.Fatalf("ParseLine = %v, %v; want an event", ok, err)
				}
				return
			}
			if !errors.Is(err, tt.want) || ok {
				t.Fatalf("ParseLine = %v, %v; want %v", ok, err, tt.want)
			}
		})
	}
	for _, blank := range []string{"", "   ", "\t\u3000\u00a0", "\x1c\x1d\x1e\x1f"} {
		if _, ok, err := ParseLine([]byte(blank)); ok || err != nil {
			t.Errorf("ParseLine(%q) = %v, %v; want a blank line", blank, ok, err)
		}
	}
}

func TestEventGet(t *testing.T) {
	e, ok, err := ParseLine([]byte(`{"event":"tool_attempt","n":12345678901234567890123,"f":1.50,"x":NaN,"o":{"a":1,"a":[true,null]},"s":"\ud800\u00e9","event":"tool_attempt"}`))
	if err != nil || !ok {
		t.Fatalf("ParseLine: %v %v", ok, err)
	}
	if !e.IsToolAttempt() {
		t.Error("IsToolAttempt = false")
	}
	if v, _ := e.Get("n"); v != json.Number("12345678901234567890123") {
		t.Errorf("n = %#v", v)
	}
	if v, _ := e.Get("f"); v != json.Number("1.50") {
		t.Errorf("f = %#v", v)
	}
	if v, _ := e.Get("x"); v != json.Number("NaN") {
		t.Errorf("x = %#v", v)
	}
	if v, _ := e.Get("s"); v != "\uFFFD\u00e9" {
		t.Errorf("s = %q, want the lone surrogate as U+FFFD", v)
	}
	o, _ := e.Get("o")
	m, isMap := o.(map[string]any)
	if !isMap || len(m) != 1 {
		t.Fatalf("o = %#v", o)
	}
	if list, _ := m["a"].([]any); len(list) != 2 || list[0] != true || list[1] != nil {
		t.Errorf("o.a = %#v, want the last value of the repeated key", m["a"])
	}
	if _, ok := e.Get("missing"); ok {
		t.Error("Get(missing) reported a value")
	}
	var keys []string
	for k := range e.All() {
		keys = append(keys, k)
	}
	if strings.Join(keys, ",") != "event,n,f,x,o,s" {
		t.Errorf("All keys = %v, want first-appearance order", keys)
	}
	notAttempt, _, _ := ParseLine([]byte(`{"event":"tool_attempt "}`))
	if notAttempt.IsToolAttempt() {
		t.Error(`"tool_attempt " counted as a tool attempt`)
	}
}

func TestSplitLines(t *testing.T) {
	input := "a\nb\r\nc\rd\n\ne"
	var got []string
	for _, l := range splitKeepingEnds([]byte(input)) {
		_, tok, _ := SplitLines(l, true)
		got = append(got, string(tok))
	}
	want := []string{"a", "b\r", "c\rd", "", "e"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines = %q, want %q", got, want)
	}
	if adv, tok, _ := SplitLines([]byte("x\r"), false); adv != 0 || tok != nil {
		t.Errorf("SplitLines(x\\r, more to come) = %d, %q; want to ask for more", adv, tok)
	}
	// A "\r" inside a line is JSON whitespace; at its ends strip() removes it.
	for _, line := range []string{"{\"a\":\r1}", "\r{\"a\":1}\r"} {
		if _, ok, err := ParseLine([]byte(line)); !ok || err != nil {
			t.Errorf("ParseLine(%q) = %v, %v", line, ok, err)
		}
	}
	if _, _, err := ParseLine([]byte("{\"a\":1}\r{\"b\":2}")); !errors.Is(err, ErrNotJSON) {
		t.Errorf("two objects joined by \\r: %v, want ErrNotJSON", err)
	}
}

func TestAddCrashCases(t *testing.T) {
	tests := []struct {
		name  string
		extra map[string]string
	}{
		{"attempt is a word", map[string]string{"attempt": `"two"`}},
		{"attempt is a list", map[string]string{"attempt": `[1]`}},
		{"attempt is an object", map[string]string{"attempt": `{"n":1}`}},
		{"attempt is NaN", map[string]string{"attempt": `NaN`}},
		{"attempt is infinite", map[string]string{"attempt": `-Infinity`}},
		{"attempt is a decimal string", map[string]string{"attempt": `"1.5"`}},
		{"attempt has a double underscore", map[string]string{"attempt": `"1__0"`}},
		{"status is a list", map[string]string{"status": `["ok"]`}},
		{"status is an object", map[string]string{"status": `{}`}},
		{"args_hash is a list", map[string]string{"args_hash": `[]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := attemptLine(`"s"`, "1", nil) + attemptLine(`"s"`, "2", tt.extra) + attemptLine(`"s"`, "3", map[string]string{"status": `"error"`})
			got := scanInput(t, []byte(input), 2)
			err := got.lineErrs[2]
			if !errors.Is(err, ErrScriptCrash) || len(got.lineErrs) != 1 {
				t.Fatalf("line errors = %v; want ErrScriptCrash on line 2 only", got.lineErrs)
			}
			want := scanInput(t, []byte(attemptLine(`"s"`, "1", nil)+attemptLine(`"s"`, "3", map[string]string{"status": `"error"`})), 2)
			if got.json != want.json {
				t.Errorf("report with the crashing line:\n%s\nwant it left out:\n%s", got.json, want.json)
			}
		})
	}
}

// An incomplete attempt is only counted: the script never converts its values.
func TestIncompleteAttemptIsNotChecked(t *testing.T) {
	input := attemptLine(`"s"`, `"two"`, map[string]string{"status": ""}) + attemptLine(`""`, "[1]", nil) + attemptLine(`null`, "1", nil)
	got := scanInput(t, []byte(input), 2)
	if len(got.lineErrs) != 0 {
		t.Fatalf("line errors = %v", got.lineErrs)
	}
	if r := got.report; r.ToolEvents != 3 || r.IncompleteEvents != 3 || r.Spans != 0 {
		t.Errorf("counts = %+v", r)
	}
}

func TestDeferredTimestampCrashes(t *testing.T) {
	bad := func(key string) map[string]string { return map[string]string{key: `"soon"`} }
	tests := []struct {
		name        string
		lines       []string
		threshold   int
		wantDropped []int64
	}{
		{
			name:  "bad t_start in the middle is never converted",
			lines: []string{attemptLine(`"s"`, "1", nil), attemptLine(`"s"`, "2", bad("t_start")), attemptLine(`"s"`, "3", nil)},
		},
		{
			name:  "bad t_end in the middle is never converted",
			lines: []string{attemptLine(`"s"`, "1", nil), attemptLine(`"s"`, "2", bad("t_end")), attemptLine(`"s"`, "3", nil)},
		},
		{
			name:  "bad values of a single attempt are never converted",
			lines: []string{attemptLine(`"s"`, "1", map[string]string{"t_start": "[]", "t_end": "NaN"})},
		},
		{
			name:        "bad t_start of the first attempt, added last",
			lines:       []string{attemptLine(`"s"`, "2", nil), attemptLine(`"s"`, "3", nil), attemptLine(`"s"`, "1", bad("t_start"))},
			wantDropped: []int64{3},
		},
		{
			name:        "bad t_end of the last attempt, then of the new last one",
			lines:       []string{attemptLine(`"s"`, "1", nil), attemptLine(`"s"`, "2", nil), attemptLine(`"s"`, "3", bad("t_end")), attemptLine(`"s"`, "4", bad("t_end"))},
			wantDropped: []int64{3, 4},
		},
		{
			name:        "dropping stops below the threshold",
			lines:       []string{attemptLine(`"s"`, "1", bad("t_start")), attemptLine(`"s"`, "2", bad("t_start"))},
			wantDropped: []int64{1},
		},
		{
			name: "a span whose first line is dropped moves after a later span",
			lines: []string{attemptLine(`"a"`, "1", bad("t_start")), attemptLine(`"b"`, "1", nil), attemptLine(`"b"`, "2", nil),
				attemptLine(`"a"`, "2", nil), attemptLine(`"a"`, "3", nil)},
			wantDropped: []int64{1},
		},
		{
			name:        "a storm of one",
			lines:       []string{attemptLine(`"s"`, "1", bad("t_end"))},
			threshold:   1,
			wantDropped: []int64{1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			threshold := 2
			if tt.threshold != 0 {
				threshold = tt.threshold
			}
			got := scanInput(t, []byte(strings.Join(tt.lines, "")), threshold)
			var dropped []int64
			for _, d := range got.report.Dropped {
				if !errors.Is(d.Err, ErrScriptCrash) {
					t.Errorf("dropped line %d: %v does not wrap ErrScriptCrash", d.Origin.Line, d.Err)
				}
				dropped = append(dropped, d.Origin.Line)
			}
			if len(got.lineErrs) != 0 || !equalLines(dropped, tt.wantDropped) {
				t.Fatalf("line errors %v, dropped %v; want dropped %v", got.lineErrs, dropped, tt.wantDropped)
			}
			var kept []string
			for i, l := range tt.lines {
				if !contains(tt.wantDropped, int64(i+1)) {
					kept = append(kept, l)
				}
			}
			want := scanInput(t, []byte(strings.Join(kept, "")), threshold)
			if len(want.report.Dropped) != 0 {
				t.Fatalf("the input without the dropped lines still drops %v", want.report.Dropped)
			}
			if got.json != want.json {
				t.Errorf("report:\n%s\nwant, as without the dropped lines:\n%s", got.json, want.json)
			}
		})
	}
}

func equalLines(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func contains(lines []int64, n int64) bool {
	for _, l := range lines {
		if l == n {
			return true
		}
	}
	return false
}

func TestStormOrderAndValues(t *testing.T) {
	var b strings.Builder
	// 25 storms: spans with 2 attempts, then one with 3 and one with 4 added last; ties keep
	// span order and only 20 are printed.
	for i := range 25 {
		span := `"s` + string(rune('a'+i)) + `"`
		b.WriteString(attemptLine(span, "2", nil))
		b.WriteString(attemptLine(span, "1", map[string]string{"status": `"error"`}))
	}
	for _, a := range []string{"1", "2", "3"} {
		b.WriteString(attemptLine("3", a, nil)) // span_id 3 and "3" are one span
	}
	b.WriteString(attemptLine(`"3"`, "0", map[string]string{"args_hash": "1", "status": "1.0"}))
	got := scanInput(t, []byte(b.String()), 2)
	r := got.report
	if r.StormSpans != 26 || len(r.TopStorms) != 20 || r.StatusFlipSpans != 26 {
		t.Fatalf("storm spans %d, top %d, flips %d; want 26, 20, 26", r.StormSpans, len(r.TopStorms), r.StatusFlipSpans)
	}
	if r.TopStorms[0].SpanID != "3" || r.TopStorms[0].Attempts != 4 || r.TopStorms[0].UniqueArgs != 2 {
		t.Errorf("first storm = %+v", r.TopStorms[0])
	}
	if r.TopStorms[1].SpanID != "sa" || r.TopStorms[19].SpanID != "ss" {
		t.Errorf("ties out of span order: %s … %s", r.TopStorms[1].SpanID, r.TopStorms[19].SpanID)
	}
	if want := `"statuses": [
        1.0,
        "ok",`; !strings.Contains(got.json, want) {
		t.Errorf("report lacks the sorted statuses of span 3:\n%s", got.json)
	}
}
