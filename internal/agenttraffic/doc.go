// Package agenttraffic generates deterministic AI-agent traces (an invoke_agent root, model
// spans, tool spans in every input shape the processor recognises (ANALYSIS.md, "Recognition")
// and in a framework's it sees only by following the model, injected retry scenarios) together with
// the ground truth a correct retry_storm must report, and emits them as pdata or through an
// OpenTelemetry SDK TracerProvider.
//
// Map-valued attributes are real maps on the pdata path; the Go SDK attribute API has no map
// type, so the SDK path sends them as JSON strings (the processor hashes canonical JSON, so
// both paths yield the same hashes).
package agenttraffic // import "github.com/retrystorm/retrystorm/internal/agenttraffic"
