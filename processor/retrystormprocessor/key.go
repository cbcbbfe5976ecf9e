package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"bytes"
	"fmt"
	"os"
)

// minKeyBytes is the key length below which a warning says the HMAC adds little.
const minKeyBytes = 16

// readKey reads the HMAC key named by the configuration; nil means plain SHA-256. Errors
// name the file or the variable, never the key.
func readKey(h HashingConfig) ([]byte, error) {
	switch {
	case h.KeyFile != "":
		raw, err := os.ReadFile(h.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("read hashing.key_file %s: %w", h.KeyFile, err)
		}
		key := bytes.TrimRight(raw, "\r\n")
		if len(key) == 0 {
			return nil, fmt.Errorf("hashing.key_file %s is empty", h.KeyFile)
		}
		return key, nil
	case h.KeyEnv != "":
		v, ok := os.LookupEnv(h.KeyEnv)
		if !ok {
			return nil, fmt.Errorf("hashing.key_env: environment variable %s is not set", h.KeyEnv)
		}
		if v == "" {
			return nil, fmt.Errorf("hashing.key_env: environment variable %s is empty", h.KeyEnv)
		}
		return []byte(v), nil
	}
	return nil, nil
}
