package agenttraffic

import (
	"strings"
	"testing"
)

func TestSummaryTalliesTruth(t *testing.T) {
	var s Summary
	s.Add(&Truth{Scenario: ScenarioClean, Spans: 50, Findings: []FindingKind{}})
	s.Add(&Truth{Scenario: ScenarioExhaustedGreen, Spans: 60, Keep: true, Storms: 1,
		Findings: []FindingKind{FindingUnrecoveredFailure}})
	s.Add(&Truth{Scenario: ScenarioExhaustedGreen, Spans: 61, Keep: true, Storms: 1,
		Findings: []FindingKind{FindingUnrecoveredFailure}})
	rows := s.Rows()
	if len(rows) != 2 || rows[0].Scenario != ScenarioClean || rows[1].Traces != 2 || rows[1].Storms != 2 {
		t.Fatalf("rows %+v", rows)
	}
	if total := s.Total(); total.Traces != 3 || total.Spans != 171 || total.Kept != 2 || total.Findings != 2 {
		t.Errorf("total %+v", total)
	}
	var out strings.Builder
	if err := s.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[2], "exhausted_green") || !strings.Contains(lines[3], "171") {
		t.Errorf("table:\n%s", out.String())
	}
}
