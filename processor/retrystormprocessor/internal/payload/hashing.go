package payload

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"go.opentelemetry.io/collector/confmap"
)

// HashingConfig configures payload hashing: the processor's hashing block. The HMAC key
// never sits in the YAML: it is read at start from KeyFile or KeyEnv (ReadKey) and never
// logged.
type HashingConfig struct {
	// KeyFile is a file holding the HMAC-SHA256 key (a trailing newline is ignored).
	// Default "" (no key file).
	KeyFile string `mapstructure:"key_file"`
	// KeyEnv is the name of an environment variable holding the HMAC-SHA256 key. Default ""
	// (no variable). With neither KeyFile nor KeyEnv, hashes are plain SHA-256.
	KeyEnv string `mapstructure:"key_env"`
	// RedactPayloads deletes raw arguments, results and idempotency keys from kept spans
	// after hashing. Default true.
	RedactPayloads bool `mapstructure:"redact_payloads"`
}

// DefaultHashing hashes with plain SHA-256 and redacts payloads.
func DefaultHashing() HashingConfig { return HashingConfig{RedactPayloads: true} }

// errInlineKey is returned for `hashing: {key: …}`; the value is never echoed.
var errInlineKey = errors.New("hashing.key is not allowed: put the key in key_file or key_env")

// Unmarshal refuses an inline key before it is decoded anywhere.
func (h *HashingConfig) Unmarshal(conf *confmap.Conf) error {
	if conf.IsSet("key") {
		return errInlineKey
	}
	return conf.Unmarshal(h)
}

// ValidateAt checks the block found at key (hashing) without touching the file system or
// the environment. It is not Validate: confmap would call that too, and put the path
// before errors that name it.
func (h *HashingConfig) ValidateAt(key string) error {
	if h.KeyFile != "" && h.KeyEnv != "" {
		return fmt.Errorf("%[1]s.key_file and %[1]s.key_env are mutually exclusive: set one", key)
	}
	return nil
}

// MinKeyBytes is the key length below which the HMAC adds little: hashes of low-entropy
// arguments are then easier to brute-force.
const MinKeyBytes = 16

// ReadKey reads the HMAC key the block names; nil means plain SHA-256. Errors name the
// file or the variable, never the key.
func (h *HashingConfig) ReadKey() ([]byte, error) {
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
