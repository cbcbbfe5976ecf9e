package analysis

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// TestConfigAsTheEngineReadsIt: recognition and extraction read the configured blocks as
// they are, with read_asset_attribute tried before the read_asset sources.
func TestConfigAsTheEngineReadsIt(t *testing.T) {
	cfg := DefaultConfig()
	assert.Equal(t, toolspan.DefaultConfig(), cfg.toolConfig(), "the defaults are the engine's own")
	cfg.Divergence.ReadAssetAttribute = "asset.read"
	cfg.Status.ToolErrorValues = []string{"failed"}
	tc := cfg.toolConfig()
	assert.Equal(t, []string{"asset.read", "retrystorm.read.asset"}, tc.Sources.ReadAsset, "read_asset_attribute is tried first")
	assert.Equal(t, []string{"failed"}, tc.ToolErrorValues)
	assert.Equal(t, []string{"retrystorm.read.asset"}, DefaultConfig().Attributes.ReadAsset, "the default config is not changed")
}

// TestClientInputs: the attributes under retry_storm's namespace the defaults read from
// clients, each once, are the ones the inbound filter leaves on arriving spans.
func TestClientInputs(t *testing.T) {
	cfg := DefaultConfig()
	assert.Equal(t, []string{"retrystorm.read.asset", "retrystorm.answer.caveat", "retrystorm.answer.cited_assets"}, cfg.ClientInputs())
	assert.NoError(t, cfg.ValidateAt(""))
	cfg.Divergence.CaveatAttribute = "retrystorm.call.class"
	assert.EqualError(t, cfg.ValidateAt(""),
		"divergence.caveat_attribute: retrystorm.call.class is written by retry_storm and cannot be read from clients' spans")
}
