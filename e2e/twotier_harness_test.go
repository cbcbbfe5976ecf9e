//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/tracespans"
)

// The two-tier deployment under test (README.md, "Scaling out"): tier 1 routes by trace id
// with the load_balancing exporter to tier-2 collectors running retry_storm. The configs
// follow config/two-tier/ on free loopback ports, with these test-only differences:
//   - tier 1 sends to each tier-2 endpoint with one queue consumer, so a tier-2 collector
//     receives its traces in the order agentsim sent them (stale_cache_suspect needs the
//     warm-up trace analysed before the stale one, as in the single-collector test);
//   - tier 1 retries a failed send after 100ms instead of 1s, to keep the restart test short;
//   - each tier-2 collector has a second pipeline, the tap, that copies every span it
//     receives, before retry_storm decides anything, to an in-process sink: the test knows
//     which collector process received which span, dropped traces included.

// tier1Config is tier 1: OTLP in, load_balancing to the tier-2 ports; SinglePort, when
// set, also copies every span to a single retry_storm collector for comparison.
type tier1Config struct {
	OTLPPort    int
	MetricsPort int
	Tier2Ports  []int
	SinglePort  int
}

var tier1Template = template.Must(template.New("tier1").Parse(`
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{{.OTLPPort}}

exporters:
  load_balancing:
    routing_key: traceID
    protocol:
      otlp:
        tls:
          insecure: true
        timeout: 5s
        sending_queue:
          num_consumers: 1
          queue_size: 5000
        retry_on_failure:
          initial_interval: 100ms
          max_interval: 500ms
          max_elapsed_time: 60s
    resolver:
      static:
        hostnames:
{{- range .Tier2Ports}}
          - 127.0.0.1:{{.}}
{{- end}}
{{- if .SinglePort}}
  otlp_grpc/single:
    endpoint: 127.0.0.1:{{.SinglePort}}
    tls:
      insecure: true
    sending_queue:
      num_consumers: 1
      queue_size: 5000
{{- end}}

service:
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: {{.MetricsPort}}
                without_scope_info: true
                without_units: true
                without_type_suffix: true
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [load_balancing{{if .SinglePort}}, otlp_grpc/single{{end}}]
`))

// tier2Config is one tier-2 collector: the pipeline test's retry_storm pipeline plus, when
// TapPort is set, the tap.
type tier2Config struct {
	OTLPPort     int
	BackendPort  int
	TapPort      int
	MetricsPort  int
	SummaryPath  string
	CleanPercent float64
	NumShards    int
}

var tier2Template = template.Must(template.New("tier2").Parse(`
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{{.OTLPPort}}

processors:
  retry_storm:
    decision_wait: 2s
    root_grace: 200ms
    num_shards: {{.NumShards}}
    sampling:
      clean_percent: {{.CleanPercent}}

exporters:
  storm_summary:
    path: {{.SummaryPath}}
    include: [storm, failure, finding]
  otlp_grpc/backend:
    endpoint: 127.0.0.1:{{.BackendPort}}
    tls:
      insecure: true
{{- if .TapPort}}
  otlp_grpc/tap:
    endpoint: 127.0.0.1:{{.TapPort}}
    tls:
      insecure: true
{{- end}}

service:
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: {{.MetricsPort}}
                without_scope_info: true
                without_units: true
                without_type_suffix: true
  pipelines:
    traces:
      receivers: [otlp]
      processors: [retry_storm]
      exporters: [otlp_grpc/backend, storm_summary]
{{- if .TapPort}}
    traces/tap:
      receivers: [otlp]
      exporters: [otlp_grpc/tap]
{{- end}}
`))

// renderTwoTierConfig renders data with tmpl into dir/name and returns the path.
func renderTwoTierConfig(t *testing.T, dir, name string, tmpl *template.Template, data any) string {
	t.Helper()
	var b bytes.Buffer
	if err := tmpl.Execute(&b, data); err != nil {
		t.Fatalf("render %s: %v", name, err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	return path
}

// tier2Collector is one tier-2 instance: its process (the current incarnation), the
// backend its kept traces go to (shared by its incarnations, like its summary file), and
// one tap per incarnation.
type tier2Collector struct {
	name    string
	dir     string
	cfg     tier2Config
	proc    *collectorProcess
	backend *consumertest.TracesSink
	taps    []*consumertest.TracesSink
}

// startTier2 starts a tier-2 collector named name with a fresh backend and, when tap is
// set, a tap; it returns once the collector listens.
func startTier2(t *testing.T, dir, name string, tap bool) *tier2Collector {
	t.Helper()
	ports := freePorts(t, 4)
	c := &tier2Collector{name: name, dir: dir, cfg: tier2Config{
		OTLPPort: ports[0], BackendPort: ports[1], MetricsPort: ports[2],
		SummaryPath:  filepath.Join(dir, name, "storms.jsonl"),
		CleanPercent: cleanPercent, NumShards: numShards,
	}}
	c.backend = startBackend(t, c.cfg.BackendPort)
	if tap {
		c.cfg.TapPort = ports[3]
		c.taps = append(c.taps, startBackend(t, c.cfg.TapPort))
	}
	c.start(t)
	return c
}

func (c *tier2Collector) start(t *testing.T) {
	t.Helper()
	config := renderTwoTierConfig(t, c.dir, fmt.Sprintf("tier2-%s-%d.yaml", c.name, len(c.taps)), tier2Template, c.cfg)
	c.proc = startCollector(t, config)
	c.proc.waitListening(t, c.cfg.OTLPPort)
}

// restart stops the collector with SIGTERM and starts it again on the same ports and the
// same summary file, with a new tap so the test can tell the incarnations apart. It returns
// how long the OTLP port was closed.
func (c *tier2Collector) restart(t *testing.T) time.Duration {
	t.Helper()
	begin := time.Now()
	c.proc.stop(t)
	c.cfg.TapPort = freePorts(t, 1)[0]
	c.taps = append(c.taps, startBackend(t, c.cfg.TapPort))
	c.start(t)
	return time.Since(begin)
}

// tapName names the tap of incarnation i (0-based): "a" for a collector never restarted,
// "b#1", "b#2" for the incarnations of a restarted one.
func (c *tier2Collector) tapName(i int) string {
	if len(c.taps) == 1 {
		return c.name
	}
	return fmt.Sprintf("%s#%d", c.name, i+1)
}

// settled reports whether retry_storm in the current incarnation decided every span it
// received and holds none, and how many it received.
func (c *tier2Collector) settled() (bool, int, string) {
	m, err := scrape(c.cfg.MetricsPort)
	if err != nil {
		return false, 0, fmt.Sprintf("%s: %v", c.name, err)
	}
	received := int(m.sum(metricSpansReceived, nil))
	done := int(m.sum(metricSpansForwarded, nil) + m.sum(metricSpansDropped, nil))
	buffered := int(m.sum(metricBufferedTraces, nil))
	return done == received && buffered == 0, received,
		fmt.Sprintf("%s: received %d, decided %d, buffered traces %d", c.name, received, done, buffered)
}

// twoTierWait polls cond until it holds; on timeout it fails the test with cond's last status.
// It fails at once when one of procs exits.
func twoTierWait(t *testing.T, what string, timeout time.Duration, procs []*collectorProcess, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, status := cond()
		if ok {
			return
		}
		for _, p := range procs {
			select {
			case <-p.exited:
				t.Fatalf("a collector exited while waiting for %s: %v (%s)", what, p.waitErr, status)
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached after %s: %s", what, timeout, status)
		}
		time.Sleep(pollInterval)
	}
}

// tapSpanSets maps trace id → span id → true for everything a sink received.
func tapSpanSets(sink *consumertest.TracesSink) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, td := range sink.AllTraces() {
		for _, span := range tracespans.All(td) {
			id := span.TraceID().String()
			if out[id] == nil {
				out[id] = map[string]bool{}
			}
			out[id][span.SpanID().String()] = true
		}
	}
	return out
}

// tierRouting is what the taps saw: which collector process received which spans of a trace.
type tierRouting struct {
	// byTrace: trace id → tap name → spans received there.
	byTrace map[string]map[string]int
	// spans counts distinct (trace, span) pairs over all taps.
	spans int
}

func tapRouting(collectors ...*tier2Collector) tierRouting {
	r := tierRouting{byTrace: map[string]map[string]int{}}
	seen := map[string]map[string]bool{}
	for _, c := range collectors {
		for i, tap := range c.taps {
			name := c.tapName(i)
			for trace, spans := range tapSpanSets(tap) {
				if r.byTrace[trace] == nil {
					r.byTrace[trace] = map[string]int{}
					seen[trace] = map[string]bool{}
				}
				r.byTrace[trace][name] = len(spans)
				for span := range spans {
					if !seen[trace][span] {
						seen[trace][span] = true
						r.spans++
					}
				}
			}
		}
	}
	return r
}

// tier2Instance is the tier-2 collector a tap belongs to ("b" for "b#2").
func tier2Instance(tap string) string {
	name, _, _ := strings.Cut(tap, "#")
	return name
}

// process returns the one tap (collector process) that received every span of the trace,
// or "" when its spans are spread over several or it reached none.
func (r tierRouting) process(traceID string) string {
	if len(r.byTrace[traceID]) != 1 {
		return ""
	}
	for tap := range r.byTrace[traceID] {
		return tap
	}
	return ""
}

// backgroundAgentsim is agentsim running in the background.
type backgroundAgentsim struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan error
}

// startAgentsimBackground starts agentsim; wait collects it. It is killed at cleanup if
// still running.
func startAgentsimBackground(t *testing.T, bin string, args ...string) *backgroundAgentsim {
	t.Helper()
	r := &backgroundAgentsim{done: make(chan error, 1)}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start agentsim: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		r.done <- r.cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = r.cmd.Process.Kill()
			<-exited
		}
	})
	return r
}

// wait waits for agentsim to exit and fails the test unless every span was exported.
func (r *backgroundAgentsim) wait(t *testing.T) string {
	t.Helper()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("agentsim: %v\nstdout:\n%s\nstderr:\n%s", err, tail(r.stdout.String(), 30), r.stderr.String())
		}
	case <-time.After(agentsimTimeout):
		t.Fatalf("agentsim still running after %s", agentsimTimeout)
	}
	return r.stdout.String()
}

// twoTierRegenerate is regenerate for a paced agentsim run: --rate r plans traces 1/r apart.
func twoTierRegenerate(t *testing.T, seed uint64, count int, interval time.Duration, truth []agenttraffic.Truth) map[string]*agenttraffic.Trace {
	t.Helper()
	gen, err := agenttraffic.NewGenerator(agenttraffic.Config{
		Seed: seed, EveryScenario: true, Interval: interval, Service: agentService,
		Base: time.Now().Add(-time.Minute),
	})
	if err != nil {
		t.Fatalf("regenerate agent traffic: %v", err)
	}
	traces := gen.Generate(count)
	if len(traces) != len(truth) {
		t.Fatalf("regenerated %d traces, agentsim's truth has %d", len(traces), len(truth))
	}
	out := make(map[string]*agenttraffic.Trace, len(traces))
	for i := range traces {
		if id := traces[i].ID.String(); id != truth[i].TraceID {
			t.Fatalf("regenerated trace %d is %s, agentsim sent %s: the generator config differs from agentsim's", i, id, truth[i].TraceID)
		}
		out[traces[i].ID.String()] = &traces[i]
	}
	return out
}
