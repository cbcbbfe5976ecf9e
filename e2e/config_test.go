//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// yamlMap is one mapping of a collector configuration.
type yamlMap = map[string]any

// collectorConfig is a collector's configuration file as data.
type collectorConfig struct {
	Extensions yamlMap       `yaml:"extensions,omitempty"`
	Receivers  yamlMap       `yaml:"receivers"`
	Processors yamlMap       `yaml:"processors,omitempty"`
	Exporters  yamlMap       `yaml:"exporters"`
	Connectors yamlMap       `yaml:"connectors,omitempty"`
	Service    serviceConfig `yaml:"service"`
}

type serviceConfig struct {
	Extensions []string            `yaml:"extensions,omitempty"`
	Telemetry  yamlMap             `yaml:"telemetry"`
	Pipelines  map[string]pipeline `yaml:"pipelines"`
}

type pipeline struct {
	Receivers  []string `yaml:"receivers"`
	Processors []string `yaml:"processors,omitempty"`
	Exporters  []string `yaml:"exporters"`
}

// write marshals the configuration to path and returns path.
func (c collectorConfig) write(t *testing.T, path string) string {
	t.Helper()
	b, err := yaml.Marshal(c)
	if err != nil {
		t.Fatalf("render collector config: %v", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatalf("write collector config: %v", err)
	}
	return path
}

// flowMap is a mapping written in YAML flow style ({k: v, …}), for a test about how a
// configuration is spelled; keys in the order given.
func flowMap(pairs ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	for i := 0; i+1 < len(pairs); i += 2 {
		var k, v yaml.Node
		if err := k.Encode(pairs[i]); err != nil {
			panic(fmt.Sprintf("flow map key %v: %v", pairs[i], err))
		}
		if err := v.Encode(pairs[i+1]); err != nil {
			panic(fmt.Sprintf("flow map value %v: %v", pairs[i+1], err))
		}
		n.Content = append(n.Content, &k, &v)
	}
	return n
}

func loopback(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

// otlpGRPCReceiver is the OTLP receiver, gRPC only, on a loopback port.
func otlpGRPCReceiver(port int) yamlMap {
	return yamlMap{"protocols": yamlMap{"grpc": yamlMap{"endpoint": loopback(port)}}}
}

// otlpGRPCExporter is an OTLP gRPC exporter to a loopback port, without TLS.
func otlpGRPCExporter(port int) yamlMap {
	return yamlMap{"endpoint": loopback(port), "tls": yamlMap{"insecure": true}}
}

// telemetry serves the collector's own metrics in the Prometheus text format on a loopback
// port, names as the tests read them; logLevel "" keeps the default.
func telemetry(metricsPort int, logLevel string) yamlMap {
	out := yamlMap{"metrics": yamlMap{"readers": []any{yamlMap{"pull": yamlMap{"exporter": yamlMap{"prometheus": yamlMap{
		"host": "127.0.0.1", "port": metricsPort,
		"without_scope_info": true, "without_units": true, "without_type_suffix": true,
	}}}}}}}
	if logLevel != "" {
		out["logs"] = yamlMap{"level": logLevel}
	}
	return out
}

// retryFast makes an exporter retry a failed send every 100–500 ms, forever: the tests end
// the fault, not the retry budget.
func retryFast() yamlMap {
	return yamlMap{"retry_on_failure": yamlMap{
		"enabled": true, "initial_interval": "100ms", "max_interval": "500ms", "max_elapsed_time": "0s",
	}}
}

// stormConfig is the collector under test: OTLP in, retry_storm, then the tracing backend
// (OTLP gRPC) and storm_summary.
type stormConfig struct {
	OTLPPort, BackendPort, MetricsPort int
	SummaryPath                        string
	DecisionWait, RootGrace            string
	NumShards                          int
	CleanPercent                       float64
	MaxBufferedBytes                   int64 // 0: the default
	// Processor, Summary and Backend are further settings of retry_storm, storm_summary and
	// otlp_grpc/backend.
	Processor, Summary, Backend yamlMap
	// BatchMaxSize, when set, adds a batch processor after retry_storm that sends at most
	// this many spans per request.
	BatchMaxSize int
	// NoBackend leaves the OTLP exporter out of the pipeline.
	NoBackend bool
	// TapPort, when set, adds the tap: a second pipeline that copies every span received,
	// before retry_storm decides anything, to an OTLP gRPC exporter on that port.
	TapPort int
	// RawFiles, when set, adds file exporters (by name, e.g. "file/json", with their
	// settings) in a second pipeline that writes every span received, before retry_storm
	// decides anything: the input `stormreport scan` reads offline.
	RawFiles yamlMap
	// Extensions are enabled in the service, by name.
	Extensions yamlMap
	LogLevel   string // "": the default
	// Signals, when set, adds the storms connector after retry_storm: its metrics to a
	// prometheus exporter, its records to an OTLP gRPC logs backend.
	Signals *signalsConfig
}

// signalsConfig places the storms connector's outputs.
type signalsConfig struct {
	PrometheusPort, LogsPort int
}

// newStormConfig fills ports and defaults: a short decision wait, two shards, clean traces
// at 5%, the summary file under dir.
func newStormConfig(t *testing.T, dir string) stormConfig {
	t.Helper()
	ports := freePorts(t, 3)
	return stormConfig{
		OTLPPort: ports[0], BackendPort: ports[1], MetricsPort: ports[2],
		SummaryPath:  filepath.Join(dir, "storms", "storms.jsonl"),
		DecisionWait: "3s", RootGrace: "200ms", NumShards: 2, CleanPercent: 5, LogLevel: "info",
	}
}

// collector is the configuration file's content.
func (c stormConfig) collector() collectorConfig {
	retryStorm := yamlMap{
		"decision_wait": c.DecisionWait, "root_grace": c.RootGrace, "num_shards": c.NumShards,
		"sampling": yamlMap{"clean_percent": c.CleanPercent},
	}
	if c.MaxBufferedBytes != 0 {
		retryStorm["max_buffered_bytes"] = c.MaxBufferedBytes
	}
	maps.Copy(retryStorm, c.Processor)
	summary := yamlMap{"path": c.SummaryPath, "include": []string{"storm", "failure", "finding"}}
	maps.Copy(summary, c.Summary)

	cfg := collectorConfig{
		Extensions: c.Extensions,
		Receivers:  yamlMap{"otlp": otlpGRPCReceiver(c.OTLPPort)},
		Processors: yamlMap{"retry_storm": retryStorm},
		Exporters:  yamlMap{"storm_summary": summary},
		Service: serviceConfig{
			Extensions: slices.Sorted(maps.Keys(c.Extensions)),
			Telemetry:  telemetry(c.MetricsPort, c.LogLevel),
		},
	}
	traces := pipeline{Receivers: []string{"otlp"}, Processors: []string{"retry_storm"}, Exporters: []string{"storm_summary"}}
	if c.BatchMaxSize != 0 {
		cfg.Processors["batch"] = yamlMap{"send_batch_size": c.BatchMaxSize, "send_batch_max_size": c.BatchMaxSize, "timeout": "200ms"}
		traces.Processors = append(traces.Processors, "batch")
	}
	if !c.NoBackend {
		backend := otlpGRPCExporter(c.BackendPort)
		maps.Copy(backend, c.Backend)
		cfg.Exporters["otlp_grpc/backend"] = backend
		traces.Exporters = []string{"otlp_grpc/backend", "storm_summary"}
	}
	cfg.Service.Pipelines = map[string]pipeline{"traces": traces}
	if c.TapPort != 0 {
		cfg.Exporters["otlp_grpc/tap"] = otlpGRPCExporter(c.TapPort)
		cfg.Service.Pipelines["traces/tap"] = pipeline{Receivers: []string{"otlp"}, Exporters: []string{"otlp_grpc/tap"}}
	}
	if c.Signals != nil {
		cfg.Connectors = yamlMap{"storms": yamlMap{
			// The tests' Prometheus scrapes every second: a new series at 0 for 2 s is seen.
			"metrics": yamlMap{"flush_interval": "500ms", "new_series_hold": "2s"},
			"logs":    yamlMap{"include": []string{"storm", "failure", "finding"}},
		}}
		cfg.Exporters["prometheus"] = yamlMap{"endpoint": loopback(c.Signals.PrometheusPort)}
		cfg.Exporters["otlp_grpc/records"] = otlpGRPCExporter(c.Signals.LogsPort)
		traces.Exporters = append(traces.Exporters, "storms")
		cfg.Service.Pipelines["traces"] = traces
		cfg.Service.Pipelines["metrics/storms"] = pipeline{Receivers: []string{"storms"}, Exporters: []string{"prometheus"}}
		cfg.Service.Pipelines["logs/storms"] = pipeline{Receivers: []string{"storms"}, Exporters: []string{"otlp_grpc/records"}}
	}
	if len(c.RawFiles) > 0 {
		maps.Copy(cfg.Exporters, c.RawFiles)
		cfg.Service.Pipelines["traces/raw"] = pipeline{Receivers: []string{"otlp"}, Exporters: slices.Sorted(maps.Keys(c.RawFiles))}
	}
	return cfg
}
