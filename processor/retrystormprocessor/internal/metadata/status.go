// Package metadata holds the retry_storm processor's type, stability, telemetry
// instruments and attribute values, written by hand in the shape mdatagen generates from
// the component's metadata.yaml.
package metadata // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"

import "go.opentelemetry.io/collector/component"

var (
	// Type is the component type users write in the collector configuration.
	Type = component.MustNewType("retry_storm")
	// ScopeName is the instrumentation scope of the processor's own telemetry.
	ScopeName = "github.com/retrystorm/retrystorm/processor/retrystormprocessor"
)

// TracesStability is the stability of the traces pipeline of the processor.
const TracesStability = component.StabilityLevelAlpha
