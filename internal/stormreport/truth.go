package stormreport

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

// truthTrace is what the comparison reads of one line of agentsim's --truth file
// (agenttraffic.Truth): the findings injected into the trace, trace-level ones included,
// and the storms among the records a correct collector writes for it.
type truthTrace struct {
	TraceID  string   `json:"trace_id"`
	Scenario string   `json:"scenario"`
	Findings []string `json:"findings"`
	Records  []struct {
		Storm bool   `json:"storm"`
		Class string `json:"class"`
	} `json:"records"`
}

// TruthComparison holds the records to the ground truth of the run that produced them:
// storms (by class) and findings (by kind) injected against recorded.
type TruthComparison struct {
	Traces   int         `json:"traces"`
	Storms   TruthCounts `json:"storms"`
	Findings TruthCounts `json:"findings"`
	// ByClass and ByKind list every storm class and finding kind seen on either side.
	ByClass []TruthCount `json:"by_class"`
	ByKind  []TruthCount `json:"by_kind"`
	Match   bool         `json:"match"`
	// Line is the comparison in one line, as the text report ends.
	Line string `json:"line"`
}

// TruthCounts are the totals of one side of the comparison.
type TruthCounts struct {
	Injected int `json:"injected"`
	Recorded int `json:"recorded"`
}

// TruthCount compares one storm class or finding kind. Matched counts the recorded ones in
// a trace the truth injected them into (at most as many as injected there); Unexpected
// counts the others: recorded in a trace that had fewer of them, or none.
type TruthCount struct {
	Kind       string `json:"kind"`
	Injected   int    `json:"injected"`
	Recorded   int    `json:"recorded"`
	Matched    int    `json:"matched"`
	Unexpected int    `json:"unexpected"`
}

func (c TruthCount) differs() bool { return c.Matched != c.Injected || c.Unexpected > 0 }

// ReadTruth reads agentsim's ground truth: one JSON object per line and trace.
func ReadTruth(path string) ([]truthTrace, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open ground truth: %w", err)
	}
	defer file.Close()
	var out []truthTrace
	scanner := bufio.NewScanner(file)
	scanner.Buffer(nil, 64<<20) // a trace's truth lists its secrets: lines can be long
	for scanner.Scan() {
		if strings.TrimSpace(scanner.Text()) == "" {
			continue
		}
		var tr truthTrace
		if err := json.Unmarshal(scanner.Bytes(), &tr); err != nil {
			return nil, fmt.Errorf("read ground truth %s line %d: %w", path, len(out)+1, err)
		}
		if tr.TraceID == "" || tr.Scenario == "" {
			return nil, fmt.Errorf("read ground truth %s line %d: no trace_id or scenario: not agentsim's --truth output", path, len(out)+1)
		}
		out = append(out, tr)
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("read ground truth %s: %w", path, err)
	}
	return out, nil
}

// tally counts kinds per trace: trace id → kind → n.
type tally map[string]map[string]int

func (t tally) add(traceID, kind string) {
	if t[traceID] == nil {
		t[traceID] = map[string]int{}
	}
	t[traceID][kind]++
}

// CompareTruth holds what was read to the truth, trace by trace: a finding recorded in
// another trace than the one it was injected into neither matches nor hides a miss.
func CompareTruth(truth []truthTrace, input *Input) *TruthComparison {
	injectedStorms, injectedFindings := tally{}, tally{}
	for _, tr := range truth {
		for _, f := range tr.Findings {
			injectedFindings.add(tr.TraceID, f)
		}
		for _, r := range tr.Records {
			if r.Storm {
				injectedStorms.add(tr.TraceID, cmp.Or(r.Class, unclassified))
			}
		}
	}
	recordedStorms, recordedFindings := tally{}, tally{}
	for i := range input.Records {
		r := &input.Records[i]
		if r.Storm {
			recordedStorms.add(r.TraceID, ClassName(r))
		}
		for _, f := range r.Findings {
			recordedFindings.add(r.TraceID, f.Kind)
		}
	}
	for i := range input.Findings {
		for _, f := range input.Findings[i].Findings {
			recordedFindings.add(input.Findings[i].TraceID, f.Kind)
		}
	}
	c := &TruthComparison{
		Traces:  len(truth),
		ByClass: compareTallies(injectedStorms, recordedStorms),
		ByKind:  compareTallies(injectedFindings, recordedFindings),
	}
	c.Storms, c.Findings = totals(c.ByClass), totals(c.ByKind)
	c.Match = !slices.ContainsFunc(c.ByClass, TruthCount.differs) && !slices.ContainsFunc(c.ByKind, TruthCount.differs)
	c.Line = truthLine(c)
	return c
}

func compareTallies(injected, recorded tally) []TruthCount {
	counts := map[string]*TruthCount{}
	count := func(kind string) *TruthCount {
		return entry(counts, kind, func() *TruthCount { return &TruthCount{Kind: kind} })
	}
	for traceID, kinds := range injected {
		for kind, n := range kinds {
			c := count(kind)
			c.Injected += n
			c.Matched += min(n, recorded[traceID][kind])
		}
	}
	for traceID, kinds := range recorded {
		for kind, n := range kinds {
			c := count(kind)
			c.Recorded += n
			c.Unexpected += max(0, n-injected[traceID][kind])
		}
	}
	return sortedTotals(counts, func(a, b *TruthCount) int { return cmp.Compare(a.Kind, b.Kind) })
}

func totals(counts []TruthCount) TruthCounts {
	var t TruthCounts
	for _, c := range counts {
		t.Injected += c.Injected
		t.Recorded += c.Recorded
	}
	return t
}

// truthLine says in one line whether the records hold to the truth and, where not, which
// finding kinds and storm classes differ: "kind M of N" (M of the N injected were
// recorded in their trace), and what was recorded without being injected.
func truthLine(c *TruthComparison) string {
	head := fmt.Sprintf("ground truth: %d findings injected, %d recorded; %d storms injected, %d recorded",
		c.Findings.Injected, c.Findings.Recorded, c.Storms.Injected, c.Storms.Recorded)
	if c.Match {
		return head + " — match"
	}
	var diffs []string
	describe := func(prefix string, counts []TruthCount) {
		for _, tc := range counts {
			if !tc.differs() {
				continue
			}
			var d string
			switch {
			case tc.Injected == 0:
				d = fmt.Sprintf("%s%s %d recorded but none injected", prefix, tc.Kind, tc.Recorded)
			case tc.Unexpected > 0:
				d = fmt.Sprintf("%s%s %d of %d (+%d not injected)", prefix, tc.Kind, tc.Matched, tc.Injected, tc.Unexpected)
			default:
				d = fmt.Sprintf("%s%s %d of %d", prefix, tc.Kind, tc.Matched, tc.Injected)
			}
			diffs = append(diffs, d)
		}
	}
	describe("", c.ByKind)
	describe("storm class ", c.ByClass)
	return head + " — differ: " + strings.Join(diffs, ", ")
}
