// Package metadata holds the retry_storm policy extension's type, stability and instrument
// names (metadata.yaml, written by hand as the repository's other components are).
package metadata // import "github.com/retrystorm/retrystorm/extension/retrystormpolicyextension/internal/metadata"

import "go.opentelemetry.io/collector/component"

var (
	// Type is the extension's component type, the policy type tail_sampling names.
	Type = component.MustNewType("retry_storm")
	// ScopeName is the instrumentation scope of the extension's telemetry.
	ScopeName = "github.com/retrystorm/retrystorm/extension/retrystormpolicyextension"
)

// ExtensionStability is the stability of the extension.
const ExtensionStability = component.StabilityLevelAlpha

// Evaluations counts the traces tail_sampling asked a retry_storm policy to decide, with
// the attributes AttributeDecision and AttributeReason.
const Evaluations = "otelcol_extension_retry_storm_evaluations"

// Attribute keys of Evaluations.
const (
	AttributeDecision = "decision"
	AttributeReason   = "reason"
)

// Values of AttributeDecision.
const (
	DecisionSampled    = "sampled"
	DecisionNotSampled = "not_sampled"
	DecisionError      = "error"
)

// Reasons are the values of AttributeReason.
var Reasons = []string{"storm", "tool_error", "divergence", "span_error", "incomplete", "clean"}
