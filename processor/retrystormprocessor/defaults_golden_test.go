package retrystormprocessor

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files from the factory's defaults")

// engineDefaultsGolden holds the buffer configuration the factory's defaults give, written
// out (Go syntax). The buffer package cannot import the factory, so its tests' configuration
// (testConfig, the defaults on four shards) is held to this file, and this test holds the
// file to the factory: a default changed in one place and not the other fails one of them.
var engineDefaultsGolden = filepath.Join("internal", "buffer", "testdata", "factory_defaults.golden")

func TestBufferTestConfigFollowsTheFactoryDefaults(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	got := fmt.Sprintf("%#v\n%#v\n", cfg.bufferConfig(), cfg.verdictConfig())
	if *updateGolden {
		require.NoError(t, os.WriteFile(engineDefaultsGolden, []byte(got), 0o600))
	}
	want, err := os.ReadFile(engineDefaultsGolden)
	require.NoError(t, err, "run go test -run %s -update to write it", t.Name())
	assert.Equal(t, string(want), got, "the factory's defaults changed: run go test -run %s -update, then check the buffer's tests", t.Name())
}
