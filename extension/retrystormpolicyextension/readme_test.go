package retrystormpolicyextension

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/tailsamplingprocessor"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.yaml.in/yaml/v3"

	"github.com/retrystorm/retrystorm/extension/retrystormpolicyextension/internal/metadata"
)

// TestREADMEExample: the README's example decodes, its extension block validates, and
// tail_sampling starts with its policies (every retry_storm one made by this extension).
func TestREADMEExample(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(raw), "```yaml\n")
	require.True(t, ok)
	block, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	var example map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(block), &example))
	conf := confmap.NewFromStringMap(example)

	extConf, err := conf.Sub("extensions::retry_storm")
	require.NoError(t, err)
	cfg := createDefaultConfig()
	require.NoError(t, extConf.Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))

	ctx := context.Background()
	// The example's key file is not here: the extension runs on its defaults.
	ext, err := NewFactory().Create(ctx, extensiontest.NewNopSettings(metadata.Type), createDefaultConfig())
	require.NoError(t, err)
	require.NoError(t, ext.Start(ctx, extensionHost{}))
	defer func() { require.NoError(t, ext.Shutdown(ctx)) }()

	tsConf, err := conf.Sub("processors::tail_sampling")
	require.NoError(t, err)
	factory := tailsamplingprocessor.NewFactory()
	tsCfg := factory.CreateDefaultConfig()
	require.NoError(t, tsConf.Unmarshal(tsCfg))
	require.NoError(t, confmap.Validate(tsCfg))
	p, err := factory.CreateTraces(ctx, processortest.NewNopSettings(factory.Type()), tsCfg, &consumertest.TracesSink{})
	require.NoError(t, err)
	host := extensionHost{extensions: map[component.ID]component.Component{component.NewID(metadata.Type): ext}}
	require.NoError(t, p.Start(ctx, host))
	require.NoError(t, p.Shutdown(ctx))
}
