package metadatatest

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component"
)

// Component is one component's metadata and what must agree with it.
type Component struct {
	// Metadata and Readme are the paths of metadata.yaml and README.md.
	Metadata, Readme string
	// ReadmePrefix is what the README's metric column leaves out of each name.
	ReadmePrefix string
	// Dir holds the Go sources of the component's internal/metadata.
	Dir string
	// Type and Stability (by signal) are internal/metadata's.
	Type      component.Type
	Stability map[string]component.StabilityLevel
	// Collected is what the TelemetryBuilder reported after RecordOnce.
	Collected Collected
}

// Check holds c's code, constants and README to its metadata.yaml, one subtest each.
func Check(t *testing.T, c Component) {
	md := Load(t, c.Metadata)
	t.Run("metadata.yaml", func(t *testing.T) { md.checkReferences(t) })
	t.Run("status", func(t *testing.T) { md.checkStatus(t, c.Type, c.Stability) })
	t.Run("instruments", func(t *testing.T) { md.CheckInstruments(t, c.Collected) })
	t.Run("attribute constants", func(t *testing.T) { md.CheckAttributeConstants(t, c.Dir) })
	t.Run("descriptions", func(t *testing.T) { md.CheckDescriptions(t) })
	t.Run("README table", func(t *testing.T) { md.CheckReadme(t, c.Readme, c.ReadmePrefix) })
	t.Run("README stability", func(t *testing.T) { md.CheckReadmeStability(t, c.Readme) })
}

// checkReferences checks metadata.yaml against itself: every metric has one data type and
// names defined attributes, and every attribute is some metric's.
func (md Metadata) checkReferences(t testing.TB) {
	t.Helper()
	used := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(md.Telemetry.Metrics)) {
		m := md.Telemetry.Metrics[key]
		types := 0
		for _, inst := range []*Instrument{m.Sum, m.Gauge, m.Histogram} {
			if inst != nil {
				types++
			}
		}
		if types != 1 || m.instrument().ValueType == "" {
			t.Errorf("metric %s: needs exactly one of sum, gauge, histogram, with a value_type", key)
		}
		for _, a := range m.Attributes {
			used[a] = true
			if _, ok := md.Attributes[a]; !ok {
				t.Errorf("metric %s: attribute %s is not defined under attributes", key, a)
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(md.Attributes)) {
		if !used[key] {
			t.Errorf("attribute %s: no metric has it", key)
		}
	}
}

// checkStatus compares type and stability with internal/metadata's.
func (md Metadata) checkStatus(t testing.TB, typ component.Type, stability map[string]component.StabilityLevel) {
	t.Helper()
	if md.Type != typ.String() {
		t.Errorf("type: metadata.yaml %q, internal/metadata %q", md.Type, typ)
	}
	want := map[string][]string{}
	for _, signal := range slices.Sorted(maps.Keys(stability)) {
		level := strings.ToLower(stability[signal].String())
		want[level] = append(want[level], signal)
	}
	if !maps.EqualFunc(md.Status.Stability, want, slices.Equal[[]string]) {
		t.Errorf("stability: metadata.yaml %v, internal/metadata %v", md.Status.Stability, want)
	}
}
