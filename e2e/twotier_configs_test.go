//go:build e2e

package e2e

import (
	"path/filepath"
	"testing"
)

// TestTwoTierConfigsValidate: the shipped two-tier configs (config/two-tier/, outside the
// config/*.yaml that TestShippedConfigsValidate covers) load and validate with the built
// distribution, tier 2 with its environment defaults.
func TestTwoTierConfigsValidate(t *testing.T) {
	for _, name := range []string{"tier1.yaml", "tier2.yaml"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("config", "two-tier", name)
			out, code := runCollector(t, nil, "validate", "--config", path)
			if code != 0 {
				t.Fatalf("validate %s exited %d:\n%s", path, code, out)
			}
		})
	}
}
