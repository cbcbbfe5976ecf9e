package agenttraffic

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestJSONStylesWriteTheSameValue(t *testing.T) {
	v := payload{"query": "a <b> & c", "top_k": 5, "hits": []any{payload{"doc_id": "d1", "rank": 1, "title": "t"}},
		"ok": true, "none": nil, "request_id": "r1", "no_map": payload(nil), "no_list": []any(nil)}
	var want any
	if err := json.Unmarshal([]byte(jsonSorted.text(v)), &want); err != nil {
		t.Fatal(err)
	}
	for _, s := range []jsonStyle{jsonSorted, jsonCompact, jsonSpaced} {
		text := s.text(v)
		var got any
		if err := json.Unmarshal([]byte(text), &got); err != nil {
			t.Fatalf("style %d wrote invalid JSON %s: %v", s, text, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("style %d wrote %s, a different value from %s", s, text, jsonSorted.text(v))
		}
		if again := s.text(v); again != text {
			t.Errorf("style %d wrote one value two ways: %s and %s", s, text, again)
		}
		if s != jsonSorted && strings.Contains(text, `\u003c`) {
			t.Errorf("style %d escapes HTML as Go does: %s", s, text)
		}
	}
	if c := jsonCompact.text(v); c == jsonSorted.text(v) {
		t.Errorf("compact style wrote keys sorted: %s", c)
	}
	if s := jsonSpaced.text(v); !strings.Contains(s, `": `) || !strings.Contains(s, `, "`) {
		t.Errorf("spaced style lacks Python's separators: %s", s)
	}
}

// The simulated traffic must not be canonical throughout, or the processor's canonicalising
// path would go unexercised (and unmeasured) by every test and benchmark fed by agentsim.
func TestGeneratedPayloadsAreNotAllCanonical(t *testing.T) {
	gen, err := NewGenerator(Config{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	canonical, other := 0, 0
	for _, tr := range gen.Generate(200) {
		for i := range tr.Spans {
			for _, a := range tr.Spans[i].Attrs {
				s := a.Value.Str
				if a.Value.Kind != ValueString || !strings.HasPrefix(s, "{") {
					continue
				}
				var v any
				if json.Unmarshal([]byte(s), &v) != nil {
					continue
				}
				if jsonText(v) == s {
					canonical++
				} else {
					other++
				}
			}
		}
	}
	if other == 0 || canonical == 0 {
		t.Errorf("JSON payloads: %d canonical, %d not; want both kinds", canonical, other)
	}
}
