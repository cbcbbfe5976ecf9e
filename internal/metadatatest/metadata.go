// Package metadatatest holds a component's hand-written telemetry metadata to its code and
// README: the instruments its TelemetryBuilder registers, the attribute constants of its
// internal/metadata and the README's telemetry table must say what metadata.yaml says.
package metadatatest // import "github.com/retrystorm/retrystorm/internal/metadatatest"

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

// Metadata is the part of mdatagen's metadata.yaml schema the components use.
type Metadata struct {
	Type       string               `mapstructure:"type"`
	ScopeName  string               `mapstructure:"scope_name"`
	Status     Status               `mapstructure:"status"`
	Attributes map[string]Attribute `mapstructure:"attributes"`
	Telemetry  Telemetry            `mapstructure:"telemetry"`
}

// Status is the component's class, stability by level and where it ships.
type Status struct {
	Class         string              `mapstructure:"class"`
	Stability     map[string][]string `mapstructure:"stability"`
	Distributions []string            `mapstructure:"distributions"`
	Codeowners    Codeowners          `mapstructure:"codeowners"`
}

// Codeowners are the GitHub owners of the component.
type Codeowners struct {
	Active []string `mapstructure:"active"`
}

// Attribute is one metric attribute; its key is the name unless NameOverride is set.
type Attribute struct {
	NameOverride string   `mapstructure:"name_override"`
	Description  string   `mapstructure:"description"`
	Type         string   `mapstructure:"type"`
	Enum         []string `mapstructure:"enum"`
}

// Telemetry lists the component's own metrics by key (the name without otelcol_).
type Telemetry struct {
	Metrics map[string]Metric `mapstructure:"metrics"`
}

// Metric is one metric: exactly one of Sum, Gauge and Histogram is set.
type Metric struct {
	Enabled     bool        `mapstructure:"enabled"`
	Stability   string      `mapstructure:"stability"`
	Description string      `mapstructure:"description"`
	Unit        string      `mapstructure:"unit"`
	Sum         *Instrument `mapstructure:"sum"`
	Gauge       *Instrument `mapstructure:"gauge"`
	Histogram   *Instrument `mapstructure:"histogram"`
	// Attributes are keys of Metadata.Attributes.
	Attributes []string `mapstructure:"attributes"`
}

// Instrument is a metric's data type.
type Instrument struct {
	ValueType        string    `mapstructure:"value_type"`
	Monotonic        bool      `mapstructure:"monotonic"`
	Async            bool      `mapstructure:"async"`
	BucketBoundaries []float64 `mapstructure:"bucket_boundaries"`
}

// Load reads a metadata.yaml; a key outside the schema above fails the test.
func Load(t testing.TB, path string) Metadata {
	t.Helper()
	conf, err := confmaptest.LoadConf(path)
	require.NoError(t, err)
	var md Metadata
	require.NoError(t, conf.Unmarshal(&md), "%s does not fit the schema", path)
	return md
}

// name is the attribute's name on the metric.
func (a Attribute) name(key string) string {
	if a.NameOverride != "" {
		return a.NameOverride
	}
	return key
}

// kind names the metric's data type as the README's type column does.
func (m Metric) kind() string {
	switch {
	case m.Sum != nil && m.Sum.Monotonic:
		return "counter"
	case m.Sum != nil:
		return "updowncounter"
	case m.Gauge != nil:
		return "gauge"
	case m.Histogram != nil:
		return "histogram"
	}
	return ""
}

// instrument is the metric's Sum, Gauge or Histogram.
func (m Metric) instrument() *Instrument {
	switch {
	case m.Sum != nil:
		return m.Sum
	case m.Gauge != nil:
		return m.Gauge
	}
	return m.Histogram
}
