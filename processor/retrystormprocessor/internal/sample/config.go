package sample // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Config sets the share of traces kept, in percent (0 to 100, fractions allowed): the
// processor's sampling block.
type Config struct {
	// CleanPercent is the share of clean traces kept. Default 5.
	CleanPercent float64 `mapstructure:"clean_percent"`
	// KeepPercent is the share of traces kept for each signal. Default 100 each.
	KeepPercent KeepPercentConfig `mapstructure:"keep_percent"`
	// Tools are per-tool clean rates: a clean trace touching tools listed here is kept at
	// the largest of their rates instead of clean_percent. Default none.
	Tools map[string]ToolConfig `mapstructure:"tools"`
	// TraceStateRandomness reads a trace's randomness from the `ot=rv` of its root span's
	// tracestate when there is one, as OpenTelemetry consistent sampling specifies; false
	// reads it from the trace id alone, so a client cannot keep its traces by writing rv
	// at its maximum (and removes rv from the tracestates it stamps). Default true.
	TraceStateRandomness bool `mapstructure:"tracestate_randomness"`
}

// KeepPercentConfig is the keep rate of each signal.
type KeepPercentConfig struct {
	// Storm is the share of traces with a retry storm kept. Default 100.
	Storm float64 `mapstructure:"storm"`
	// ToolError is the share of traces with a non-ok tool attempt kept. Default 100.
	ToolError float64 `mapstructure:"tool_error"`
	// Divergence is the share of traces with a divergence finding kept. Default 100.
	Divergence float64 `mapstructure:"divergence"`
	// SpanError is the share of traces with a span in status ERROR kept. Default 100.
	SpanError float64 `mapstructure:"span_error"`
	// Incomplete is the share of traces with an incomplete_record finding kept. Default 100.
	Incomplete float64 `mapstructure:"incomplete"`
}

// ToolConfig is the clean rate of traces touching one tool.
type ToolConfig struct {
	// CleanPercent is the share of clean traces touching the tool kept. Required.
	CleanPercent float64 `mapstructure:"clean_percent"`
}

// DefaultConfig keeps every trace with a signal and 5% of clean ones, reading randomness
// from tracestate as the sampling specification says.
func DefaultConfig() Config {
	return Config{
		CleanPercent:         5,
		KeepPercent:          KeepPercentConfig{Storm: 100, ToolError: 100, Divergence: 100, SpanError: 100, Incomplete: 100},
		TraceStateRandomness: true,
	}
}

// keep is the keep percent of each signal, in SignalReasons order.
func (k *KeepPercentConfig) keep() [numSignals]float64 {
	return [numSignals]float64{k.Storm, k.ToolError, k.Divergence, k.SpanError, k.Incomplete}
}

// MaxTools bounds sampling.tools, far above real use: each override is a name and a
// threshold in the policy.
const MaxTools = 10_000

// ValidateAt checks the block found at key (sampling), naming each key in full. It is not
// Validate: confmap would call that too, and put the path before errors that name it.
func (c *Config) ValidateAt(key string) error {
	var errs error
	if n := len(c.Tools); n > MaxTools {
		errs = fmt.Errorf("%s.tools must list at most %d tools, got %d", key, MaxTools, n)
	}
	errs = errors.Join(errs, validPercent(key+".clean_percent", c.CleanPercent), c.KeepPercent.ValidateAt(key+".keep_percent"))
	for _, tool := range sortedTools(c.Tools) {
		if tool == "" {
			errs = errors.Join(errs, fmt.Errorf("%s.tools has an empty tool name", key))
			continue
		}
		errs = errors.Join(errs, validPercent(fmt.Sprintf("%s.tools.%s.clean_percent", key, tool), c.Tools[tool].CleanPercent))
	}
	return errs
}

// ValidateAt checks each rate of the block found at key (sampling.keep_percent, or a
// sampling policy's keep_percent), naming each in full.
func (k *KeepPercentConfig) ValidateAt(key string) error {
	var errs error
	for i, pct := range k.keep() {
		errs = errors.Join(errs, validPercent(fmt.Sprintf("%s.%s", key, SignalReasons[i]), pct))
	}
	return errs
}

func validPercent(key string, pct float64) error {
	if pct < 0 || pct > 100 || pct != pct {
		return fmt.Errorf("%s must be between 0 and 100", key)
	}
	return nil
}

func sortedTools(m map[string]ToolConfig) []string { return slices.Sorted(maps.Keys(m)) }
