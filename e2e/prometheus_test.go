//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// prometheusServer is a real Prometheus (the Debian package's binary, installed by
// .ci/ensure-prometheus) on loopback, scraping collectors every second and evaluating the
// shipped alert rules every second; stopped with the test.
type prometheusServer struct {
	port int
	log  string
}

// startPrometheus starts Prometheus scraping targets (job name → host:port) with the rule
// files, its data under dir; it returns once Prometheus answers ready.
func startPrometheus(t *testing.T, dir string, targets map[string]string, ruleFiles ...string) *prometheusServer {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus is not on PATH (make test installs it with .ci/ensure-prometheus): %v", err)
	}
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n")
	for _, f := range ruleFiles {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&cfg, "  - %q\n", abs)
	}
	cfg.WriteString("scrape_configs:\n")
	for job, target := range targets {
		fmt.Fprintf(&cfg, "  - job_name: %q\n    static_configs:\n      - targets: [%q]\n", job, target)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &prometheusServer{port: freePorts(t, 1)[0], log: filepath.Join(dir, "prometheus.log")}
	logFile, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+loopback(p.port), "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start prometheus: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("prometheus log:\n%s", tail(string(b), 30))
		}
	})
	eventually(t, 30*time.Second, "prometheus ready", func() (bool, string) {
		resp, err := http.Get(p.url("/-/ready"))
		if err != nil {
			return false, err.Error()
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return p
}

func (p *prometheusServer) url(path string) string {
	return "http://" + loopback(p.port) + path
}

// apiGet calls the HTTP API and decodes its data field into out.
func (p *prometheusServer) apiGet(path string, out any) error {
	resp, err := http.Get(p.url(path))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var envelope struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &envelope); err != nil {
		return fmt.Errorf("%s: %s: %.200s", path, resp.Status, body)
	}
	if envelope.Status != "success" {
		return fmt.Errorf("%s: %s", path, envelope.Error)
	}
	return json.Unmarshal(envelope.Data, out)
}

// promSample is one element of an instant vector.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query evaluates an instant query; a query of another result type returns no samples.
func (p *prometheusServer) query(expr string) ([]promSample, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.apiGet("/api/v1/query?query="+url.QueryEscape(expr), &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: result type %s, want vector", expr, data.ResultType)
	}
	var out []promSample
	return out, json.Unmarshal(data.Result, &out)
}

// promAlert is one active alert.
type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// alerts lists the active alerts (pending and firing).
func (p *prometheusServer) alerts() ([]promAlert, error) {
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	return data.Alerts, p.apiGet("/api/v1/alerts", &data)
}

// ruleHealth returns the rules whose last evaluation failed, with their error.
func (p *prometheusServer) ruleHealth() (map[string]string, error) {
	var data struct {
		Groups []struct {
			Rules []struct {
				Name      string `json:"name"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := p.apiGet("/api/v1/rules", &data); err != nil {
		return nil, err
	}
	bad := map[string]string{}
	n := 0
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			n++
			if r.Health == "err" {
				bad[r.Name] = r.LastError
			}
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("prometheus loaded no rules")
	}
	return bad, nil
}

// sampleValue is a sample's value; Prometheus writes NaN and ±Inf as "NaN", "+Inf", "-Inf".
func sampleValue(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", v)
	}
	return strconv.ParseFloat(s, 64)
}

// queryAt evaluates an instant query at at.
func (p *prometheusServer) queryAt(expr string, at time.Time) ([]promSample, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	q := url.Values{"query": {expr}, "time": {strconv.FormatInt(at.Unix(), 10)}}
	if err := p.apiGet("/api/v1/query?"+q.Encode(), &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: result type %s, want vector", expr, data.ResultType)
	}
	var out []promSample
	return out, json.Unmarshal(data.Result, &out)
}

// promSeries is one series of a range query.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

// queryRange evaluates expr from start to end every step, as a Grafana time series panel
// does.
func (p *prometheusServer) queryRange(expr string, start, end time.Time, step time.Duration) ([]promSeries, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	q := url.Values{"query": {expr}, "start": {strconv.FormatInt(start.Unix(), 10)},
		"end": {strconv.FormatInt(end.Unix(), 10)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	if err := p.apiGet("/api/v1/query_range?"+q.Encode(), &data); err != nil {
		return nil, err
	}
	if data.ResultType != "matrix" {
		return nil, fmt.Errorf("query %q: result type %s, want matrix", expr, data.ResultType)
	}
	var out []promSeries
	return out, json.Unmarshal(data.Result, &out)
}
