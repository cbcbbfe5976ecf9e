//go:build e2e

package e2e

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestShippedConfigsValidate(t *testing.T) {
	configs, err := filepath.Glob(filepath.Join(repoRoot, "config", "*.yaml"))
	if err != nil {
		t.Fatalf("list configs: %v", err)
	}
	var names []string
	for _, path := range configs {
		names = append(names, filepath.Base(path))
	}
	for _, want := range []string{"capture.yaml", "demo.yaml", "jaeger.yaml", "observability.yaml", "production.yaml", "tail-sampling.yaml"} {
		if !slices.Contains(names, want) {
			t.Errorf("config/%s is missing; found %v", want, names)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			out, code := runCollector(t, nil, "validate", "--config", filepath.Join("config", name))
			if code != 0 {
				t.Fatalf("validate config/%s exited %d:\n%s", name, code, out)
			}
		})
	}
}

func TestValidateNamesUnknownKey(t *testing.T) {
	config, err := filepath.Abs(filepath.Join("testdata", "unknown_key.yaml"))
	if err != nil {
		t.Fatalf("resolve config path: %v", err)
	}
	out, code := runCollector(t, nil, "validate", "--config", config)
	if code == 0 {
		t.Fatalf("validate accepted a config with an unknown retry_storm key:\n%s", out)
	}
	for _, want := range []string{"retry_storm", "clean_percentage"} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output does not name %q:\n%s", want, out)
		}
	}
}

// TestDistributionListsComponents: the built distribution holds every component the
// shipped configs and the READMEs use, each as the kind it is used as.
func TestDistributionListsComponents(t *testing.T) {
	out, code := runCollector(t, nil, "components")
	if code != 0 {
		t.Fatalf("components exited %d:\n%s", code, out)
	}
	// The command prints each kind's components as a YAML list: a name under the wrong
	// kind (the retry_storm extension where the processor should be) is not listed.
	type component struct {
		Name string `yaml:"name"`
	}
	var listing struct {
		Receivers  []component `yaml:"receivers"`
		Processors []component `yaml:"processors"`
		Exporters  []component `yaml:"exporters"`
		Connectors []component `yaml:"connectors"`
		Extensions []component `yaml:"extensions"`
	}
	if err := yaml.Unmarshal([]byte(out), &listing); err != nil {
		t.Fatalf("components output is no YAML: %v\n%s", err, out)
	}
	byKind := map[string][]component{"receivers": listing.Receivers, "processors": listing.Processors,
		"exporters": listing.Exporters, "connectors": listing.Connectors, "extensions": listing.Extensions}
	for kind, want := range map[string][]string{
		"receivers":  {"otlp"},
		"processors": {"retry_storm", "batch", "memory_limiter", "tail_sampling"},
		"exporters":  {"storm_summary", "debug", "otlp_grpc", "otlp_http", "load_balancing", "file", "prometheus"},
		"connectors": {"storms"},
		"extensions": {"retry_storm", "health_check", "file_storage"},
	} {
		listed := map[string]bool{}
		for _, c := range byKind[kind] {
			listed[c.Name] = true
		}
		for _, name := range want {
			if !listed[name] {
				t.Errorf("%s: %s is not in the distribution:\n%s", kind, name, out)
			}
		}
	}
}
