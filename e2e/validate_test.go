//go:build e2e

package e2e

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
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

func TestDistributionListsComponents(t *testing.T) {
	out, code := runCollector(t, nil, "components")
	if code != 0 {
		t.Fatalf("components exited %d:\n%s", code, out)
	}
	listed := map[string]bool{}
	for line := range strings.Lines(out) {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "- name: "); ok {
			listed[name] = true
		}
	}
	for _, want := range []string{
		"otlp",
		"retry_storm", "batch", "memory_limiter", "tail_sampling",
		"storm_summary", "debug", "otlp_grpc", "otlp_http", "load_balancing", "file", "prometheus",
		"storms",
		"health_check", "file_storage",
	} {
		if !listed[want] {
			t.Errorf("component %s is not in the distribution:\n%s", want, out)
		}
	}
}
