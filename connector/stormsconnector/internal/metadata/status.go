// Package metadata holds the storms connector's type, stability and instrument names
// (metadata.yaml, written by hand as the repository's other components are).
package metadata // import "github.com/retrystorm/retrystorm/connector/stormsconnector/internal/metadata"

import "go.opentelemetry.io/collector/component"

var (
	// Type is the connector's component type.
	Type = component.MustNewType("storms")
	// ScopeName is the instrumentation scope of the metrics it emits and of its telemetry.
	ScopeName = "github.com/retrystorm/retrystorm/connector/stormsconnector"
)

const (
	// TracesToMetricsStability is the stability of the traces → metrics direction.
	TracesToMetricsStability = component.StabilityLevelAlpha
	// TracesToLogsStability is the stability of the traces → logs direction.
	TracesToLogsStability = component.StabilityLevelAlpha
)

// RecordsMalformed is the connector's own counter of call summaries and finding records it
// could not parse and skipped.
const RecordsMalformed = "otelcol_connector_storms_records_malformed"

// AnnotationsUnsealed is the connector's own counter of spans whose annotations no
// retry_storm processor of this collector sealed, skipped.
const AnnotationsUnsealed = "otelcol_connector_storms_annotations_unsealed"
