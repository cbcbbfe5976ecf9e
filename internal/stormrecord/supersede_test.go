package stormrecord

import (
	"encoding/json"
	"testing"
)

func TestCompletenessOrdersTheRecordsOfOneID(t *testing.T) {
	for _, c := range []struct {
		name     string
		new, old Completeness
		beats    bool
	}{
		{"more attempts: the second part of a split trace that saw more of the call", Completeness{3, 1, 0}, Completeness{1, 1, 1}, true},
		{"fewer attempts, even with a finding", Completeness{1, 1, 2}, Completeness{2, 1, 0}, false},
		{"a later revision: a finding found after the trace was forwarded", Completeness{2, 2, 1}, Completeness{2, 1, 0}, true},
		{"an older revision", Completeness{2, 1, 1}, Completeness{2, 2, 1}, false},
		{"more findings at the same revision (finding records)", Completeness{0, 1, 2}, Completeness{0, 1, 1}, true},
		{"the same record again: a re-export", Completeness{2, 1, 1}, Completeness{2, 1, 1}, false},
	} {
		if got := c.new.Beats(c.old); got != c.beats {
			t.Errorf("%s: %+v beats %+v = %v, want %v", c.name, c.new, c.old, got, c.beats)
		}
	}
}

func TestCompletenessOfALineMatchesItsRecord(t *testing.T) {
	r := Record{Schema: Schema, ID: "x", Attempts: 3, Revision: 2, Findings: []Finding{{Kind: "a"}, {Kind: "b"}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var line LineCompleteness
	if err := json.Unmarshal(b, &line); err != nil {
		t.Fatal(err)
	}
	if line.ID != "x" || line.Completeness() != r.Completeness() {
		t.Errorf("line %+v: completeness %+v, record %+v", line, line.Completeness(), r.Completeness())
	}
	// A line written before records had a revision is revision 1.
	var old LineCompleteness
	if err := json.Unmarshal([]byte(`{"id":"y","attempts":2,"findings":[]}`), &old); err != nil {
		t.Fatal(err)
	}
	if got := old.Completeness(); got != (Completeness{Attempts: 2, Revision: 1}) {
		t.Errorf("old line: completeness %+v", got)
	}
}
