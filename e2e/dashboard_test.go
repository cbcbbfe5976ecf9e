//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

// The dashboard test's Prometheus scrapes every second; Grafana's $__rate_interval is then
// four scrapes, with one-second steps.
const (
	dashboardScrape       = time.Second
	dashboardRateInterval = 4 * dashboardScrape
	// dashboardTolerance bounds how far a panel's figure over the whole run may read above
	// or below the counters' totals: increase() extrapolates to the end of its window by up
	// to a scrape interval's share of a series' age, and a ratio's two sides by different
	// shares. Every series is more than a minute old when it is checked (the alerts with
	// `for: 1m` have fired), so the share is under 2%.
	dashboardTolerance = 0.05
)

// panelFigure says what a panel's figure after the run is held to.
type panelFigure int

const (
	// totals: evaluated with its windows spanning the whole run, each series equals the
	// same query over the counters' totals (rate over the run is total / run, increase the
	// total), and at least one series is above 0. Every panel not listed in panelFigures.
	totals panelFigure = iota
	// zeros: as totals, and every series is 0 (nothing in the run moves it) and shown.
	zeros
	// gauge: a gauge, above 0 at some point of the run (traces waited for their decision)
	// and 0 at its end (all decided).
	gauge
	// latency: the decision latency quantiles and mean lie between 0 and the decision wait
	// plus a second; the histogram cannot start at 0 (processor README, "Series that start
	// at zero"), so it is not held to its totals.
	latency
)

// panelFigures lists the panels that are not held to totals, by title. A new panel over
// counters needs no entry: traffic that moves it is enough.
var panelFigures = map[string]panelFigure{
	"Early decisions by cause": zeros, // no memory pressure, no oversized trace, no shutdown
	"Buffered bytes":           gauge,
	"Buffered traces":          gauge,
	"Decision latency":         latency,
}

// alertFigures names, for each shipped alert, the panel target that shows the figure the
// alert compares with its budget, and the labels that pick the alert's series there.
var alertFigures = []struct {
	alert, panel, refID string
	where               map[string]string
}{
	{"RetryStormBudgetExceeded", "Storms by tool and class", "B", nil},
	{"RetryStormUnrecoveredFailure", "Findings by tool and kind, dashboard range", "A", map[string]string{"kind": "unrecovered_failure"}},
	{"RetryStormDuplicateSideEffect", "Findings by tool and kind, dashboard range", "A", map[string]string{"kind": "duplicate_side_effect"}},
	{"RetryStormIncompleteAttempts", "Incomplete attempts, dashboard range", "A", nil},
	{"RetryStormFailedAttemptTokens", "Tokens on failed attempts, last hour", "A", nil},
	{"RetryStormToolCallsUnseen", "Tool calls retry_storm cannot see, by scope and reason", "A", nil},
}

// dashboardPhases is the incident: clean calls, then executor storms (each tool's first),
// then every scenario (duplicate side effects, unrecovered failures, incomplete attempts,
// storms that burn tokens on failed attempts, remapped statuses) and the usual mix. Each
// phase is a burst that fits in a flush or two.
var dashboardPhases = []struct {
	name string
	args []string
}{
	{"clean calls", []string{"--scenarios", "clean=1", "--count", "40"}},
	{"executor storms", []string{"--scenarios", "executor_storm=1", "--count", "20"}},
	{"every scenario", []string{"--every-scenario", "--count", "40"}},
	// A framework whose SDK records no payload (agentsim's unlisted_offered): calls
	// retry_storm sees without their arguments or results.
	{"tool calls unseen", []string{"--shapes", "unlisted_offered", "--scenarios", "clean=1", "--count", "10"}},
}

// TestDashboardShowsTheIncident sends the incident of issue 43 in phases through the built
// collector (retry_storm and the storms connector, as config/observability.yaml wires
// them), has a real Prometheus scrape it every second with the shipped rules, waits for
// every alert to fire, and then evaluates every panel of the shipped dashboard as Grafana
// would (its variables filled in, range targets over the run) and holds each to what
// happened: no NaN or Inf at any step; each panel over the whole run equals the counters'
// totals (panelFigures lists the exceptions); every series that counted something shows
// above 0 somewhere; the counters' totals equal agentsim's ground truth and the storm
// records; and each alert's figure is the one its panel shows.
func TestDashboardShowsTheIncident(t *testing.T) {
	dir := t.TempDir()
	agentsim := buildAgentsim(t, dir)
	// Budgets at 0 (any storm, any failed-attempt token), as a copy of the rules may set
	// them, so every alert fires on a short run.
	rules := rulesFor(t, dir, map[string]string{"RetryStormBudgetExceeded": "0", "RetryStormFailedAttemptTokens": "0"})
	// Each phase's traces are held 1.5s after their root, past a scrape of Prometheus (every
	// second): the buffered gauges are seen above 0, whatever the machine's speed.
	collector, prom := startAlertingPair(t, dir, rules, func(c *stormConfig) { c.RootGrace = "1500ms" })

	start := time.Now().Truncate(time.Second)
	happened := sendIncident(t, dir, agentsim, collector, prom)
	eventually(t, settleTimeout, "the storms connector counted every storm and finding", func() (bool, string) {
		m, failed := scrapeWhile(t, collector.proc, collector.cfg.Signals.PrometheusPort)
		if m == nil {
			return false, failed
		}
		return stormSignalsDone(m, expectation{storms: happened.storms, findings: happened.findings})
	})
	waitFiring(t, prom, collector)
	checkRulesHealthy(t, prom)

	at := time.Now().Truncate(time.Second)
	run := at.Sub(start) + 10*time.Second
	if run > 4*time.Minute+30*time.Second {
		t.Fatalf("the run took %s: the panels' 5-minute windows no longer hold all of it", run)
	}
	board := readDashboard(t)
	view := dashboardView{prom: prom, start: start, at: at, run: run}
	t.Run("ground truth", func(t *testing.T) { checkIncidentTotals(t, view, happened, collector.cfg.SummaryPath) })
	t.Run("tool variable", func(t *testing.T) { checkToolVariable(t, view, board) })
	t.Run("panels", func(t *testing.T) {
		for _, p := range board.panels() {
			t.Run(p.Title, func(t *testing.T) { checkPanel(t, view, p) })
		}
	})
	t.Run("alert figures", func(t *testing.T) { checkAlertFigures(t, view, board, rules) })
}

// sendIncident sends dashboardPhases one after the other, each decided before the next,
// and tallies their ground truth. Whether a phase is decided is read through Prometheus,
// the one reader of the processor's telemetry: a series with open attribute values
// (storm_calls, unseen_tool_calls) is observed at 0 by the first collection that sees it,
// and a scrape of the test's own would take that 0 from Prometheus.
func sendIncident(t *testing.T, dir, agentsim string, collector *alertingCollector, prom *prometheusServer) incident {
	t.Helper()
	start := time.Now()
	var truth []agenttraffic.Truth
	spans := 0
	for i, phase := range dashboardPhases {
		path := filepath.Join(dir, fmt.Sprintf("truth-%d.jsonl", i))
		runAgentsim(t, agentsim, append([]string{"--endpoint", loopback(collector.cfg.OTLPPort), "--rate", "0",
			"--seed", strconv.Itoa(40 + i), "--service", agentService, "--truth", path}, phase.args...)...)
		sent := readTruth(t, path)
		for _, tr := range sent {
			spans += tr.Spans
		}
		truth = append(truth, sent...)
		waitSettledInPrometheus(t, prom, collector, spans)
		t.Logf("phase %q: %d traces sent and decided, %s in", phase.name, len(sent), time.Since(start).Round(time.Second))
	}
	return tallyIncident(truth)
}

// waitSettledInPrometheus waits until Prometheus has scraped retry_storm settled with
// exactly spans received (settled's figures, read from Prometheus).
func waitSettledInPrometheus(t *testing.T, prom *prometheusServer, collector *alertingCollector, spans int) {
	t.Helper()
	sum := func(expr string) (int, error) {
		samples, err := prom.query("sum(" + expr + ")")
		if err != nil || len(samples) == 0 {
			return 0, err
		}
		v, err := strconv.ParseFloat(fmt.Sprint(samples[0].Value[1]), 64)
		return int(v), err
	}
	eventually(t, settleTimeout, "retry_storm settled, as Prometheus scraped it", func() (bool, string) {
		collector.proc.alive(t)
		var figures [4]int
		for i, expr := range []string{metricSpansReceived, metricSpansForwarded, metricSpansDropped, metricBufferedTraces} {
			n, err := sum(expr)
			if err != nil {
				return false, err.Error()
			}
			figures[i] = n
		}
		received, forwarded, dropped, buffered := figures[0], figures[1], figures[2], figures[3]
		return received == spans && forwarded+dropped == received && buffered == 0,
			fmt.Sprintf("received %d of %d spans, forwarded %d, dropped %d, buffered traces %d", received, spans, forwarded, dropped, buffered)
	})
}

// waitFiring waits until every alert of alertFigures fires.
func waitFiring(t *testing.T, prom *prometheusServer, collector *alertingCollector) {
	t.Helper()
	eventually(t, alertTimeout, "every alert firing", func() (bool, string) {
		collector.proc.alive(t)
		alerts, err := prom.alerts()
		if err != nil {
			return false, err.Error()
		}
		firing := map[string]bool{}
		for _, a := range alerts {
			firing[a.Labels["alertname"]] = firing[a.Labels["alertname"]] || a.State == "firing"
		}
		for _, f := range alertFigures {
			if !firing[f.alert] {
				return false, fmt.Sprintf("active alerts: %v", alertNames(alerts))
			}
		}
		return true, ""
	})
}

// incident is what the ground truth says happened.
type incident struct {
	storms     map[[2]string]int // (class, tool) → storm records
	findings   map[string]int    // kind → findings
	incomplete int
}

func tallyIncident(truth []agenttraffic.Truth) incident {
	in := incident{storms: map[[2]string]int{}, findings: map[string]int{}}
	for _, tr := range truth {
		for _, f := range tr.Findings {
			in.findings[string(f)]++
		}
		for _, rec := range tr.Records {
			in.incomplete += rec.IncompleteAttempts
			if rec.Storm {
				in.storms[[2]string{string(rec.Class), rec.Tool}]++
			}
		}
	}
	return in
}

// dashboardView is Prometheus as a dashboard over the run sees it: range panels from start
// to at, instant panels at at, $__range the run.
type dashboardView struct {
	prom      *prometheusServer
	start, at time.Time
	run       time.Duration
}

// instant evaluates expr at the end of the run as series labels → value.
func (v dashboardView) instant(t *testing.T, expr string) map[string]float64 {
	t.Helper()
	samples, err := v.prom.queryAt(expr, v.at)
	if err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	out := map[string]float64{}
	for _, s := range samples {
		f, err := sampleValue(s.Value[1])
		if err != nil {
			t.Fatalf("query %s: %v", expr, err)
		}
		out[seriesKey(s.Metric)] = f
	}
	return out
}

// checkIncidentTotals holds what Prometheus holds at the end to the ground truth: storms by
// class and tool, findings by kind and incomplete attempts as agentsim injected them, and
// failed-attempt tokens per tool as the storm records say.
func checkIncidentTotals(t *testing.T, v dashboardView, in incident, summaryPath string) {
	storms := map[string]float64{}
	for k, n := range in.storms {
		storms[seriesKey(map[string]string{"class": k[0], "tool": k[1]})] = float64(n)
	}
	findings := map[string]float64{}
	for k, n := range in.findings {
		findings[seriesKey(map[string]string{"kind": k})] = float64(n)
	}
	tokens := map[string]float64{}
	for _, r := range readSummaryFileMust(t, summaryPath).latest(t) {
		n := int64(0)
		if r.FailedTokensIn != nil {
			n += *r.FailedTokensIn
		}
		if r.FailedTokensOut != nil {
			n += *r.FailedTokensOut
		}
		tool := r.ToolName
		if tool == "" {
			tool = "_unknown" // the connector's name for a call without one
		}
		if n > 0 {
			tokens[seriesKey(map[string]string{"tool": tool})] += float64(n)
		}
	}
	for _, c := range []struct {
		what, expr string
		want       map[string]float64
	}{
		{"storms by class and tool", "sum by (class, tool) (retrystorm_storms_total) > 0", storms},
		{"findings by kind", "sum by (kind) (retrystorm_findings_total) > 0", findings},
		{"incomplete attempts", "sum(retrystorm_attempts_incomplete_total)", map[string]float64{"{}": float64(in.incomplete)}},
		{"failed-attempt tokens by tool (the storm records)", "sum by (tool) (retrystorm_failed_attempts_tokens_total) > 0", tokens},
	} {
		got := v.instant(t, c.expr)
		if !maps.Equal(got, c.want) {
			t.Errorf("%s: Prometheus has %v, truth %v", c.what, got, c.want)
		}
		t.Logf("%s: %v", c.what, got)
	}
	if len(storms) == 0 || len(findings) == 0 || in.incomplete == 0 || len(tokens) == 0 {
		t.Errorf("the incident lacks storms, findings, incomplete attempts or failed-attempt tokens: nothing to show")
	}
}

// checkPanel holds one panel's targets to their figure (panelFigure): as Grafana draws
// them over the run, and evaluated with their windows spanning the run.
func checkPanel(t *testing.T, v dashboardView, p grafanaPanel) {
	figure := panelFigures[p.Title]
	for _, q := range p.Targets {
		if strings.TrimSpace(q.Expr) == "" {
			t.Errorf("target %s has no query", q.RefID)
			continue
		}
		var drawn []promSeries
		if !q.Instant {
			expr := grafanaExpr(t, q.Expr, dashboardRateInterval, v.run)
			var err error
			if drawn, err = v.prom.queryRange(expr, v.start, v.at, dashboardScrape); err != nil {
				t.Fatalf("target %s: %s: %v", q.RefID, expr, err)
			}
			checkDrawnFinite(t, q.RefID, drawn)
		}
		expr := grafanaExpr(t, q.Expr, v.run, v.run)
		got := v.instant(t, expr)
		switch figure {
		case totals, zeros:
			checkTotals(t, v, q.RefID, expr, figure, got, drawn)
		case gauge:
			checkGauge(t, q.RefID, got, drawn)
		case latency:
			checkLatency(t, q.RefID, got)
		}
	}
}

// checkTotals: the figure over the run is the same query over the counters' totals, every
// series that counted something is drawn above 0, and the series are above 0 (totals) or
// all 0 (zeros).
func checkTotals(t *testing.T, v dashboardView, refID, expr string, figure panelFigure, got map[string]float64, drawn []promSeries) {
	t.Helper()
	want := v.instant(t, overTotals(expr, v.run))
	checkFigure(t, refID, got, want)
	checkShown(t, refID, drawn, want)
	above := slices.ContainsFunc(slices.Collect(maps.Values(want)), func(f float64) bool { return f > 0 })
	switch {
	case len(want) == 0:
		t.Errorf("target %s: no series (a panel would say No data): %s", refID, expr)
	case figure == totals && !above:
		t.Errorf("target %s: every series at 0 after the incident; send traffic that moves it, or say in panelFigures why not: %v", refID, want)
	case figure == zeros && above:
		t.Errorf("target %s: expected every series at 0, got %v", refID, want)
	}
	t.Logf("target %s: %v", refID, got)
}

// checkGauge: above 0 at some step of the run, 0 at its end.
func checkGauge(t *testing.T, refID string, got map[string]float64, drawn []promSeries) {
	t.Helper()
	if len(got) == 0 {
		t.Errorf("target %s: no series", refID)
	}
	for k, f := range got {
		if f != 0 {
			t.Errorf("target %s: %s is %g at the end of the run, want 0 (everything decided)", refID, k, f)
		}
	}
	if peak := drawnPeak(drawn); peak <= 0 {
		t.Errorf("target %s: never above 0 during the run", refID)
	} else {
		t.Logf("target %s: peak %g, %v at the end", refID, peak, got)
	}
}

// checkLatency: a latency over the run within (0, 3] seconds: decision_wait 2s, root_grace
// 1.5s.
func checkLatency(t *testing.T, refID string, got map[string]float64) {
	t.Helper()
	if len(got) == 0 {
		t.Errorf("target %s: no value over the run", refID)
	}
	for k, f := range got {
		if f <= 0 || f > 3 {
			t.Errorf("target %s: %s is %gs, want within (0, 3]: decision_wait 2s, root_grace 1.5s", refID, k, f)
		}
	}
	t.Logf("target %s: %v", refID, got)
}

// checkDrawnFinite: no step of any series is NaN or Inf.
func checkDrawnFinite(t *testing.T, refID string, drawn []promSeries) {
	t.Helper()
	for _, s := range drawn {
		for _, point := range s.Values {
			f, err := sampleValue(point[1])
			if err != nil {
				t.Fatalf("target %s: %v", refID, err)
			}
			if math.IsNaN(f) || math.IsInf(f, 0) {
				t.Errorf("target %s: %s is %g at %v", refID, seriesKey(s.Metric), f, point[0])
				break
			}
		}
	}
}

// drawnPeak is the largest value any series takes, NaN left out (checkDrawnFinite reports it).
func drawnPeak(drawn []promSeries) float64 {
	peak := math.Inf(-1)
	for _, s := range drawn {
		for _, point := range s.Values {
			if f, err := sampleValue(point[1]); err == nil && !math.IsNaN(f) {
				peak = max(peak, f)
			}
		}
	}
	return peak
}

// checkFigure: the same series, each within dashboardTolerance of its total.
func checkFigure(t *testing.T, refID string, got, want map[string]float64) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("target %s: series %s missing, its total is %g", refID, k, want[k])
		case math.Abs(g-want[k]) > dashboardTolerance*math.Abs(want[k])+1e-9:
			t.Errorf("target %s: series %s reads %g over the run, its total says %g", refID, k, g, want[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("target %s: series %s (%g) is in no total", refID, k, got[k])
		}
	}
}

// checkShown: a range target draws every series whose total is above 0 above 0 somewhere.
func checkShown(t *testing.T, refID string, drawn []promSeries, want map[string]float64) {
	t.Helper()
	if drawn == nil {
		return
	}
	peaks := map[string]float64{}
	for _, s := range drawn {
		peaks[seriesKey(s.Metric)] = drawnPeak([]promSeries{s})
	}
	for k, total := range want {
		if total > 0 && !(peaks[k] > 0) {
			t.Errorf("target %s: series %s counted %g over the run but is never drawn above 0", refID, k, total)
		}
	}
}

// checkToolVariable: the Tool dropdown lists every tool any retrystorm series has, so no
// tool's storms, findings or tokens are out of reach.
func checkToolVariable(t *testing.T, v dashboardView, d grafanaDashboard) {
	var def string
	for _, variable := range d.Templating.List {
		if variable.Name == "tool" {
			def = variable.Definition
		}
	}
	m := regexp.MustCompile(`^label_values\((\w+),\s*tool\)$`).FindStringSubmatch(def)
	if m == nil {
		t.Fatalf("tool variable: %q is not label_values(<metric>, tool)", def)
	}
	listed := slices.Sorted(maps.Keys(v.instant(t, "count by (tool) ("+m[1]+")")))
	want := slices.Sorted(maps.Keys(v.instant(t, `count by (tool) ({__name__=~"retrystorm_.+", tool!=""})`)))
	if len(listed) == 0 || !slices.Equal(listed, want) {
		t.Errorf("tool variable: lists %v, the metrics have tools %v", listed, want)
	}
	t.Logf("tool variable: %v", listed)
}

// checkAlertFigures: evaluated at the same instant, each alert's expression gives, for every
// series it fires on, the figure its panel shows for that series.
func checkAlertFigures(t *testing.T, v dashboardView, d grafanaDashboard, rulesPath string) {
	exprs := alertExprs(t, rulesPath)
	for _, f := range alertFigures {
		expr, ok := exprs[f.alert]
		if !ok {
			t.Errorf("%s: not in %s", f.alert, rulesPath)
			continue
		}
		q, ok := d.target(f.panel, f.refID)
		if !ok {
			t.Errorf("%s: no target %s on panel %q", f.alert, f.refID, f.panel)
			continue
		}
		fired := v.instant(t, expr)
		if len(fired) == 0 {
			t.Errorf("%s: fires on nothing at the end of the run", f.alert)
		}
		shown := v.instant(t, grafanaExpr(t, q.Expr, v.run, v.run))
		for k, value := range fired {
			labels := parseSeriesKey(k)
			maps.Copy(labels, f.where)
			panelValue, ok := shown[seriesKey(labels)]
			switch {
			case !ok:
				t.Errorf("%s fires on %s with %g; panel %q shows no such series: %v", f.alert, k, value, f.panel, shown)
			case math.Abs(panelValue-value) > 1e-9*math.Max(1, math.Abs(value)):
				t.Errorf("%s fires on %s with %g; panel %q shows %g", f.alert, k, value, f.panel, panelValue)
			default:
				t.Logf("%s: %s %g, as panel %q shows", f.alert, k, value, f.panel)
			}
		}
	}
}
