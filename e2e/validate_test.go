//go:build e2e

package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// repoRoot is where the collector runs, so relative paths in the configs (./_run/…)
// resolve as they do for a user starting it from a checkout.
const repoRoot = ".."

// collectorBinary returns the absolute path of the built distribution.
func collectorBinary(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(repoRoot, "_build", "otelcol-retrystorm"))
	if err != nil {
		t.Fatalf("resolve collector binary path: %v", err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("collector binary %s is missing: run make build first (%v)", bin, err)
	}
	return bin
}

// runCollector runs the binary with args and returns its combined output and exit code.
func runCollector(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, collectorBinary(t), args...)
	cmd.Dir = repoRoot
	// What production.yaml requires from its environment; nothing here is contacted.
	cmd.Env = append(os.Environ(),
		"OTLP_BACKEND_ENDPOINT=backend.invalid:4317",
		"RETRYSTORM_HASH_KEY=e2e-not-a-secret",
		"RETRYSTORM_DATA_DIR="+t.TempDir(),
	)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exitErr) && ctx.Err() == nil:
		return string(out), exitErr.ExitCode()
	default:
		t.Fatalf("run %s %s: %v\n%s", cmd.Path, strings.Join(args, " "), err, out)
		return "", -1
	}
}

func TestShippedConfigsValidate(t *testing.T) {
	configs, err := filepath.Glob(filepath.Join(repoRoot, "config", "*.yaml"))
	if err != nil {
		t.Fatalf("list configs: %v", err)
	}
	var names []string
	for _, path := range configs {
		names = append(names, filepath.Base(path))
	}
	for _, want := range []string{"demo.yaml", "jaeger.yaml", "production.yaml"} {
		if !slices.Contains(names, want) {
			t.Errorf("config/%s is missing; found %v", want, names)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			out, code := runCollector(t, "validate", "--config", filepath.Join("config", name))
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
	out, code := runCollector(t, "validate", "--config", config)
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
	out, code := runCollector(t, "components")
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
		"retry_storm", "batch", "memory_limiter",
		"storm_summary", "debug", "otlp_grpc", "otlp_http", "load_balancing",
		"health_check", "file_storage",
	} {
		if !listed[want] {
			t.Errorf("component %s is not in the distribution:\n%s", want, out)
		}
	}
}
