//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

// The shipped alert rules and dashboard (README.md, "Alerting").
var (
	alertRules = filepath.Join(repoRoot, "config", "alerting", "retrystorm.rules.yml")
	dashboard  = filepath.Join(repoRoot, "config", "grafana", "retrystorm.json")
)

// alertCase is agentsim traffic of one scenario and the alert it must fire ("" for clean
// traffic, which must fire none).
type alertCase struct {
	name, scenario string
	count          int
	alert          string
	// budgets, when set, replaces the number after the last `>` of the named alerts in a
	// copy of the rules: a budget tuned down as the rules file says to, so a short run
	// reaches it.
	budgets map[string]string
	// processor, when set, is the retry_storm settings the case's collector runs with.
	processor yamlMap
	// shapes, when set, are agentsim's --shapes; otherwise every shape.
	shapes []agenttraffic.Shape
}

// How long an alert with `for: 1m` takes to fire after its cause, with the scrape and
// evaluation intervals (1 s each here), the connector's flush and the decision wait.
const alertTimeout = 150 * time.Second

// TestAlertsFireOnTheirScenarioAndStaySilentOnClean runs each scenario through the built
// collector with the storms connector, has a real Prometheus scrape the connector's
// metrics and evaluate the shipped rules, and checks the scenario's alert fires; clean
// traffic fires none. The dashboard is TestDashboardShowsTheIncident's.
func TestAlertsFireOnTheirScenarioAndStaySilentOnClean(t *testing.T) {
	dir := t.TempDir()
	agentsim := buildAgentsim(t, dir)
	cases := []alertCase{
		{name: "storms over budget", scenario: "executor_storm", count: 250, alert: "RetryStormBudgetExceeded"},
		{name: "unrecovered failure", scenario: "exhausted_green", count: 20, alert: "RetryStormUnrecoveredFailure"},
		{name: "duplicate side effect", scenario: "duplicate_side_effect", count: 20, alert: "RetryStormDuplicateSideEffect"},
		{name: "incomplete attempts", scenario: "incomplete_record", count: 20, alert: "RetryStormIncompleteAttempts"},
		// The default budget (100000 tokens per tool per hour) takes hours of agentsim's
		// traffic; the copy's budget is reached in seconds.
		{name: "tokens burned on failed attempts", scenario: "agent_storm", count: 60, alert: "RetryStormFailedAttemptTokens",
			budgets: map[string]string{"RetryStormFailedAttemptTokens": "1000"}},
		// A decision cache of one kept trace a shard: every kept decision is a signal one,
		// so each past the first in a shard forgets one.
		{name: "signal decisions evicted", scenario: "exhausted_green", count: 20, alert: "RetryStormSignalDecisionsEvicted",
			processor: yamlMap{"decision_cache": yamlMap{"kept_traces": 1}}},
		// A framework whose SDK records no payload: every call is seen without its
		// arguments and result, and said so.
		{name: "tool calls unseen", scenario: "clean", count: 10, alert: "RetryStormToolCallsUnseen",
			shapes: []agenttraffic.Shape{agenttraffic.ShapeUnlistedOffered}},
		// The attempt record's attempts carry no result: each is counted result_unread.
		{name: "tool results unseen", scenario: "clean", count: 10, alert: "RetryStormToolCallsUnseen",
			shapes: []agenttraffic.Shape{agenttraffic.ShapeAttemptRecord}},
		// Clean traffic of every shape whose calls retry_storm sees whole; the others fire
		// RetryStormToolCallsUnseen, as the cases above hold.
		{name: "clean traffic", scenario: "clean", count: 200, shapes: slices.DeleteFunc(agenttraffic.AllShapes(),
			func(s agenttraffic.Shape) bool { return !s.RecordsWholeCalls() })},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			caseDir := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
			collector, prom := startAlertingPair(t, caseDir, rulesFor(t, caseDir, c.budgets), func(cfg *stormConfig) {
				if c.processor != nil {
					cfg.Processor = c.processor
				}
			})
			args := []string{"--endpoint", loopback(collector.cfg.OTLPPort), "--rate", "0",
				"--count", strconv.Itoa(c.count), "--scenarios", c.scenario + "=1", "--seed", "5", "--service", agentService}
			if len(c.shapes) > 0 {
				var names []string
				for _, s := range c.shapes {
					names = append(names, string(s))
				}
				args = append(args, "--shapes", strings.Join(names, ","))
			}
			runAgentsim(t, agentsim, args...)
			checkRulesHealthy(t, prom)
			if c.alert == "" {
				checkSilent(t, prom, collector)
				return
			}
			eventually(t, alertTimeout, c.alert+" firing", func() (bool, string) {
				collector.proc.alive(t)
				alerts, err := prom.alerts()
				if err != nil {
					return false, err.Error()
				}
				for _, a := range alerts {
					if a.Labels["alertname"] == c.alert && a.State == "firing" {
						return true, ""
					}
				}
				return false, fmt.Sprintf("active alerts: %v", alertNames(alerts))
			})
		})
	}
}

// alertingCollector is a collector with the storms connector and the Prometheus that
// scrapes it.
type alertingCollector struct {
	cfg  stormConfig
	proc *collectorProcess
}

func startAlertingPair(t *testing.T, dir, rules string, tune ...func(*stormConfig)) (*alertingCollector, *prometheusServer) {
	t.Helper()
	cfg := pipelineConfig(t, dir, cleanPercent, numShards)
	cfg.NoBackend = true
	for _, f := range tune {
		f(&cfg)
	}
	logsPort := freePorts(t, 1)[0]
	startLogsBackend(t, logsPort)
	withSignals(t, &cfg, logsPort)
	c := &alertingCollector{cfg: cfg, proc: startStormCollector(t, dir, cfg)}
	prom := startPrometheus(t, filepath.Join(dir, "prometheus"), map[string]string{
		"retrystorm": loopback(cfg.Signals.PrometheusPort),
		"otelcol":    loopback(cfg.MetricsPort),
	}, rules)
	// Prometheus scrapes a new target only seconds after it is ready: traffic sent before
	// that would reach it as series already holding their counts, which increase() does not
	// count (config/alerting/README.md, "Series start at zero"). An incident comes to a
	// Prometheus that is already scraping.
	eventually(t, 30*time.Second, "prometheus scraping the collector", func() (bool, string) {
		c.proc.alive(t)
		up, err := prom.query("up == 1")
		if err != nil {
			return false, err.Error()
		}
		return len(up) == 2, fmt.Sprintf("%d of 2 targets up", len(up))
	})
	return c, prom
}

// rulesFor returns the shipped rules, or a copy under dir with the budgets replaced.
func rulesFor(t *testing.T, dir string, budgets map[string]string) string {
	t.Helper()
	if len(budgets) == 0 {
		return alertRules
	}
	b, err := os.ReadFile(alertRules)
	if err != nil {
		t.Fatalf("read the alert rules: %v", err)
	}
	text := string(b)
	for alert, budget := range budgets {
		start := strings.Index(text, "alert: "+alert+"\n")
		if start < 0 {
			t.Fatalf("no alert %s in %s", alert, alertRules)
		}
		end := strings.Index(text[start:], "\n        for:")
		if end < 0 {
			t.Fatalf("alert %s has no for:", alert)
		}
		expr := text[start : start+end]
		re := regexp.MustCompile(`>\s*[0-9.e+]+\s*$`)
		if !re.MatchString(expr) {
			t.Fatalf("alert %s: its expression does not end in a budget: %s", alert, expr)
		}
		text = text[:start] + re.ReplaceAllString(expr, "> "+budget) + text[start+end:]
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "retrystorm.rules.yml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func alertNames(alerts []promAlert) []string {
	var out []string
	for _, a := range alerts {
		out = append(out, a.Labels["alertname"]+"/"+a.State)
	}
	slices.Sort(out)
	return out
}

// checkRulesHealthy: Prometheus loaded the rules and evaluates each without error.
func checkRulesHealthy(t *testing.T, prom *prometheusServer) {
	t.Helper()
	eventually(t, 30*time.Second, "rules evaluated", func() (bool, string) {
		bad, err := prom.ruleHealth()
		if err != nil {
			return false, err.Error()
		}
		if len(bad) > 0 {
			t.Fatalf("rules failed to evaluate: %v", bad)
		}
		return true, ""
	})
}

// checkSilent: no alert is pending or firing at any time while the clean traffic is
// counted and for a minute and a half after (longer than any `for:`).
func checkSilent(t *testing.T, prom *prometheusServer, c *alertingCollector) {
	t.Helper()
	sawCalls := false
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		c.proc.alive(t)
		alerts, err := prom.alerts()
		if err != nil {
			t.Fatalf("alerts: %v", err)
		}
		if len(alerts) > 0 {
			t.Fatalf("clean traffic raised alerts: %v", alertNames(alerts))
		}
		if calls, err := prom.query("sum(retrystorm_calls_total)"); err == nil && len(calls) > 0 {
			sawCalls = true
		}
		time.Sleep(2 * time.Second)
	}
	if !sawCalls {
		t.Fatal("Prometheus never saw retrystorm_calls_total: the silence proves nothing")
	}
}
