//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"

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

func (c tier1Config) collector() collectorConfig {
	var hostnames []string
	for _, port := range c.Tier2Ports {
		hostnames = append(hostnames, loopback(port))
	}
	cfg := collectorConfig{
		Receivers: yamlMap{"otlp": otlpGRPCReceiver(c.OTLPPort)},
		Exporters: yamlMap{"load_balancing": yamlMap{
			"routing_key": "traceID",
			"protocol": yamlMap{"otlp": yamlMap{
				"tls": yamlMap{"insecure": true}, "timeout": "5s",
				"sending_queue":    yamlMap{"num_consumers": 1, "queue_size": 5000},
				"retry_on_failure": yamlMap{"initial_interval": "100ms", "max_interval": "500ms", "max_elapsed_time": "60s"},
			}},
			"resolver": yamlMap{"static": yamlMap{"hostnames": hostnames}},
		}},
		Service: serviceConfig{Telemetry: telemetry(c.MetricsPort, "")},
	}
	exporters := []string{"load_balancing"}
	if c.SinglePort != 0 {
		single := otlpGRPCExporter(c.SinglePort)
		single["sending_queue"] = yamlMap{"num_consumers": 1, "queue_size": 5000}
		cfg.Exporters["otlp_grpc/single"] = single
		exporters = append(exporters, "otlp_grpc/single")
	}
	cfg.Service.Pipelines = map[string]pipeline{"traces": {Receivers: []string{"otlp"}, Exporters: exporters}}
	return cfg
}

// startTier1 starts tier 1 in front of the tier-2 collectors (and, when single is not 0,
// the single collector on that port) and returns it once it listens, with its OTLP and
// metrics ports.
func startTier1(t *testing.T, dir string, single int, tier2 ...*tier2Collector) (p *collectorProcess, otlpPort, metricsPort int) {
	t.Helper()
	ports := freePorts(t, 2)
	cfg := tier1Config{OTLPPort: ports[0], MetricsPort: ports[1], SinglePort: single}
	for _, c := range tier2 {
		cfg.Tier2Ports = append(cfg.Tier2Ports, c.cfg.OTLPPort)
	}
	return launchCollector(t, dir, "tier1", cfg.collector(), cfg.OTLPPort), cfg.OTLPPort, cfg.MetricsPort
}

// tier2Collector is one tier-2 instance: its process (the current incarnation), the
// backend its kept traces go to (shared by its incarnations, like its summary file), and
// one tap per incarnation.
type tier2Collector struct {
	name    string
	dir     string
	cfg     stormConfig
	proc    *collectorProcess
	backend *consumertest.TracesSink
	taps    []*consumertest.TracesSink
}

// startTier2 starts a tier-2 collector named name, the pipeline test's collector (changed
// by adjust), with a fresh backend and, when tap is set, a tap; it returns once the
// collector listens.
func startTier2(t *testing.T, dir, name string, tap bool, adjust ...func(*stormConfig)) *tier2Collector {
	t.Helper()
	c := &tier2Collector{name: name, dir: filepath.Join(dir, name)}
	c.cfg = pipelineConfig(t, c.dir, cleanPercent, numShards)
	c.cfg.SummaryPath = filepath.Join(c.dir, "storms.jsonl")
	for _, f := range adjust {
		f(&c.cfg)
	}
	c.backend = startBackend(t, c.cfg.BackendPort)
	if tap {
		c.cfg.TapPort = freePorts(t, 1)[0]
		c.taps = append(c.taps, startBackend(t, c.cfg.TapPort))
	}
	c.proc = startStormCollector(t, c.dir, c.cfg)
	return c
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
	c.proc = startStormCollector(t, c.dir, c.cfg)
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

// settled reports whether retry_storm in the current incarnation has settled, and how many
// spans it received.
func (c *tier2Collector) settled() (bool, int, string) {
	m, err := scrape(c.cfg.MetricsPort)
	if err != nil {
		return false, 0, c.name + ": " + err.Error()
	}
	ok, received, status := settled(m)
	return ok, received, c.name + ": " + status
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
