package attemptlog

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// FuzzAttemptLogScan feeds arbitrary bytes through the caller's path: it must not panic, and the
// report must be JSON the script's json.loads would read back (NaN and Infinity included),
// with the same counts.
func FuzzAttemptLogScan(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte(attemptLine(`[1, {"a": "\ud800"}]`, `"\u0661"`, map[string]string{"status": "NaN", "t_end": `"x"`}) + attemptLine("1.5", "1e19", nil)))
	f.Add([]byte("{\"a\":1}\r{\"b\":2}\n\n\xff\n[1]\n" + attemptLine(`"s"`, "1", map[string]string{"t_start": "[]"}) + attemptLine(`"s"`, "0", nil)))
	g := attemptLogInput{r: rand.New(rand.NewPCG(7, 7)), crashes: true}
	for range 4 { // cut short: minimizing a long input stalls a short fuzz run
		in := g.file()
		if i := bytes.LastIndexByte(in[:min(len(in), 2048)], '\n'); i > 0 {
			in = in[:i+1]
		}
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		got := scanInput(t, input, 2)
		r := got.report
		if r.IncompleteEvents > r.ToolEvents || r.Spans > r.ToolEvents-r.IncompleteEvents || r.StormSpans > r.Spans ||
			r.StatusFlipSpans > r.Spans || len(r.TopStorms) > topStorms || int64(len(r.TopStorms)) > r.StormSpans {
			t.Fatalf("inconsistent counts: %+v", r)
		}
		p := parser{buf: []byte(got.json)}
		v, err := p.document()
		if err != nil {
			t.Fatalf("WriteJSON output does not parse: %v\n%s", err, got.json)
		}
		obj, ok := v.(*object)
		if !ok || strings.Join(obj.keys, ",") != "tool_events,incomplete_events,spans,storm_spans,status_flip_spans,top_storms" {
			t.Fatalf("report keys: %#v", v)
		}
		if tool, _ := obj.get("tool_events"); pyIntLiteral(tool.(json.Number)).small != r.ToolEvents {
			t.Fatalf("tool_events %v, report %d", tool, r.ToolEvents)
		}
		// The JSON reads back to itself: same text after a second pass through the encoder.
		if again := string(appendPyJSON(nil, v, 0)) + "\n"; again != got.json {
			t.Fatalf("re-encoding changes the report:\n%s\nvs\n%s", again, got.json)
		}
		if twice := scanInput(t, input, 2); twice.json != got.json {
			t.Fatal("two scans of the same input differ")
		}
	})
}
