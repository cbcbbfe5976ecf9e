package stormrecord

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFindingRecordIDIsStableAndApartFromCallRecords(t *testing.T) {
	const trace, span = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
	id := FindingRecordID(trace, span)
	if id != FindingRecordID(trace, span) {
		t.Fatal("the id of one span's finding record changed between calls")
	}
	if len(id) != 32 {
		t.Errorf("id %q is not 32 hex digits", id)
	}
	// A call keyed by its span id (the span_id fallback of call ids) has RecordID(trace, span).
	if id == RecordID(trace, span) {
		t.Error("a finding record takes the id of the call record keyed by the same span id")
	}
	if id == FindingRecordID(trace, "eee19b7ec3c1b175") || id == FindingRecordID("5b8efff798038103d269b633813fc60d", span) {
		t.Error("finding records of different spans share an id")
	}
}

func TestFindingRecordJSONHasEveryField(t *testing.T) {
	b, err := json.Marshal(FindingRecord{Schema: FindingSchema, Findings: []Finding{}})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"schema":"retrystorm.finding/v1","id":"","time":"","trace_id":"","run_id":null,` +
		`"service_name":null,"span_id":"","span_name":"","findings":[],"revision":0}`
	if string(b) != want {
		t.Errorf("finding record JSON\n got %s\nwant %s", b, want)
	}
}

func TestPartialIsWrittenOnlyWhenTrue(t *testing.T) {
	whole, err := json.Marshal(Record{Schema: Schema})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(whole), "partial") {
		t.Errorf("a record of a whole trace names partial: %s", whole)
	}
	part, err := json.Marshal(Record{Schema: Schema, Partial: true})
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(part, &back); err != nil {
		t.Fatal(err)
	}
	if back["partial"] != true {
		t.Errorf("a record of part of a trace lacks \"partial\": true: %s", part)
	}
	fr, err := json.Marshal(FindingRecord{Schema: FindingSchema, Partial: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(fr), `"partial":true`) {
		t.Errorf("a finding record of part of a trace lacks \"partial\": true: %s", fr)
	}
}
