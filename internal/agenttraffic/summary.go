package agenttraffic

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Tally counts what a run sent for one scenario and what a correct retry_storm must report.
type Tally struct {
	Scenario Scenario
	Traces   int
	Spans    int
	Kept     int
	Storms   int
	Findings int
}

func (t *Tally) add(tr *Truth) {
	t.Traces++
	t.Spans += tr.Spans
	t.Storms += tr.Storms
	t.Findings += len(tr.Findings)
	if tr.Keep {
		t.Kept++
	}
}

// Summary tallies a run's ground truth per scenario.
type Summary struct {
	rows map[Scenario]*Tally
}

// Add counts one trace's truth.
func (s *Summary) Add(tr *Truth) {
	if s.rows == nil {
		s.rows = map[Scenario]*Tally{}
	}
	row := s.rows[tr.Scenario]
	if row == nil {
		row = &Tally{Scenario: tr.Scenario}
		s.rows[tr.Scenario] = row
	}
	row.add(tr)
}

// Rows returns the scenarios that were sent, in AllScenarios order.
func (s *Summary) Rows() []Tally {
	var out []Tally
	for _, sc := range AllScenarios() {
		if row := s.rows[sc]; row != nil {
			out = append(out, *row)
		}
	}
	return out
}

// Total sums all rows.
func (s *Summary) Total() Tally {
	total := Tally{Scenario: "total"}
	for _, r := range s.Rows() {
		total.Traces += r.Traces
		total.Spans += r.Spans
		total.Kept += r.Kept
		total.Storms += r.Storms
		total.Findings += r.Findings
	}
	return total
}

// WriteTable prints the per-scenario table: traces sent, spans, and what a correct
// retry_storm keeps, counts as storms and reports as findings.
func (s *Summary) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\ttraces\tspans\texpected kept\texpected storms\texpected findings\t")
	for _, r := range append(s.Rows(), s.Total()) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", r.Scenario, r.Traces, r.Spans, r.Kept, r.Storms, r.Findings)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write summary table: %w", err)
	}
	return nil
}
