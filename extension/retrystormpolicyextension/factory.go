// Package retrystormpolicyextension offers the retry_storm processor's verdict as a policy
// of the contrib tail_sampling processor: a policy of type retry_storm samples the traces
// the retry_storm analysis finds a storm, a tool error or a finding in.
package retrystormpolicyextension // import "github.com/retrystorm/retrystorm/extension/retrystormpolicyextension"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/retrystorm/retrystorm/extension/retrystormpolicyextension/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor"
)

// NewFactory returns the factory of the retry_storm policy extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, createExtension, metadata.ExtensionStability)
}

func createDefaultConfig() component.Config {
	return retrystormprocessor.NewDefaultPolicyConfig()
}

func createExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newPolicyExtension(set, cfg.(*Config))
}
