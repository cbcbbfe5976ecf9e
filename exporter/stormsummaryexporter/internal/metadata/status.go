// Package metadata holds the storm_summary exporter's type, stability, telemetry
// instruments and attribute values, written by hand in the shape mdatagen generates from
// the component's metadata.yaml.
package metadata // import "github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"

import "go.opentelemetry.io/collector/component"

var (
	// Type is the component type users write in the collector configuration.
	Type = component.MustNewType("storm_summary")
	// ScopeName is the instrumentation scope of the exporter's own telemetry.
	ScopeName = "github.com/retrystorm/retrystorm/exporter/stormsummaryexporter"
)

// TracesStability is the stability of the traces pipeline of the exporter.
const TracesStability = component.StabilityLevelAlpha
