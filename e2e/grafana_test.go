//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// What the dashboard and rules tests read from the shipped files: the Grafana dashboard's
// panels and queries, filled in as Grafana fills them, and the alerts' expressions.

// seriesKey names a series by its labels, the metric name left out.
func seriesKey(labels map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if k != "__name__" {
			parts = append(parts, k+"="+labels[k])
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// grafanaDashboard is the part of the dashboard JSON the test reads.
type grafanaDashboard struct {
	Panels     []grafanaPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	ID      int            `json:"id"`
	Title   string         `json:"title"`
	Type    string         `json:"type"`
	Targets []grafanaQuery `json:"targets"`
	Panels  []grafanaPanel `json:"panels"`
}

type grafanaQuery struct {
	RefID   string `json:"refId"`
	Expr    string `json:"expr"`
	Instant bool   `json:"instant"`
}

func readDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	b, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatalf("read the dashboard: %v", err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	return d
}

// panels lists every panel with queries, rows' nested panels included.
func (d grafanaDashboard) panels() []grafanaPanel {
	var out []grafanaPanel
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if len(p.Targets) > 0 {
				out = append(out, p)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

func (d grafanaDashboard) target(panel, refID string) (grafanaQuery, bool) {
	for _, p := range d.panels() {
		for _, q := range p.Targets {
			if p.Title == panel && q.RefID == refID {
				return q, true
			}
		}
	}
	return grafanaQuery{}, false
}

// grafanaExpr fills in a query's variables as Grafana does for this view: all tools, the
// rate interval, and the range (window) given.
func grafanaExpr(t *testing.T, expr string, rateInterval, window time.Duration) string {
	t.Helper()
	secs := func(d time.Duration) string { return strconv.Itoa(int(d.Seconds())) + "s" }
	out := strings.NewReplacer(
		"${tool:regex}", ".*", "${tool}", ".*", "$tool", ".*",
		"${__rate_interval}", secs(rateInterval), "$__rate_interval", secs(rateInterval),
		"${__interval}", secs(dashboardScrape), "$__interval", secs(dashboardScrape),
		"${__range}", secs(window), "$__range", secs(window),
	).Replace(expr)
	if strings.Contains(out, "$") {
		t.Fatalf("a Grafana variable the test does not fill in: %s", expr)
	}
	return out
}

// windowed is a rate() or increase() of one selector over a window.
var windowed = regexp.MustCompile(`\b(rate|increase)\((\w+(?:\{[^}]*\})?)\[[^\]]+\]\)`)

// overTotals rewrites expr to read each counter's total instead of its rate or increase
// over a window: rate(x[w]) becomes x divided by the run's length, increase(x[w]) x. Every
// series starts at 0 after the run began (or holds 0 until then), so this is what the panel
// shows when its windows span the run, without increase()'s extrapolation.
func overTotals(expr string, run time.Duration) string {
	return windowed.ReplaceAllStringFunc(expr, func(m string) string {
		sub := windowed.FindStringSubmatch(m)
		if sub[1] == "rate" {
			return fmt.Sprintf("(%s / %d)", sub[2], int(run.Seconds()))
		}
		return fmt.Sprintf("(%s + 0)", sub[2])
	})
}

// parseSeriesKey inverts seriesKey.
func parseSeriesKey(k string) map[string]string {
	out := map[string]string{}
	for _, pair := range strings.Split(strings.Trim(k, "{}"), ",") {
		if name, value, ok := strings.Cut(pair, "="); ok {
			out[name] = value
		}
	}
	return out
}

// alertExprs reads the alerts' expressions from a rules file.
func alertExprs(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the rules: %v", err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatalf("parse the rules: %v", err)
	}
	out := map[string]string{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			out[r.Alert] = r.Expr
		}
	}
	return out
}
