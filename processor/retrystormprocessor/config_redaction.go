package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"
)

// RedactionConfig says where, beyond the tool spans, a kept trace's tool payloads are
// removed when hashing.redact_payloads is on. Setting a list replaces its whole default.
type RedactionConfig struct {
	// MessageAttributes hold message structures (JSON, or attribute maps) on spans and span
	// events; inside them a tool call's arguments and a tool response's content become a
	// marker with their hash. `*` matches any run of characters. Default: the GenAI semconv,
	// Vercel AI SDK, Mastra, OpenInference and OpenLLMetry message attributes (README).
	MessageAttributes []string `mapstructure:"message_attributes"`
	// FlattenedMessages are prefixes of messages flattened into one attribute per field
	// (prefix.N.role, prefix.N.content, prefix.N.tool_calls.M.arguments). Default
	// [llm.input_messages, llm.output_messages, gen_ai.prompt, gen_ai.completion].
	FlattenedMessages []string `mapstructure:"flattened_messages"`
	// MessageEvents are span events whose attributes are one message. Default: the GenAI
	// message events (gen_ai.user.message, gen_ai.tool.message, gen_ai.choice, …).
	MessageEvents []string `mapstructure:"message_events"`
	// DeleteAttributes are deleted from every span, span event and link of kept traces
	// (`*` globs), e.g. whole prompts. Default [].
	DeleteAttributes []string `mapstructure:"delete_attributes"`
	// KeepPromptText keeps the text users, systems and models wrote in messages; false
	// replaces it with "[redacted]" too, keeping roles, tool names and ids. Default true.
	KeepPromptText bool `mapstructure:"keep_prompt_text"`
	// MinValueLength is the shortest tool payload value (a string or number leaf) hunted
	// verbatim in every string of the trace. Default 8; at least 4.
	MinValueLength int `mapstructure:"min_value_length"`
	// MaxHuntedValues is the most distinct tool payload values (of at least
	// min_value_length) scrubbing hunts in one kept trace, or one batch of its late spans,
	// each with its escaped forms: the first ones met. The rest are counted in
	// otelcol_processor_retry_storm_payload_values_not_hunted. Default 2048; at least 1.
	MaxHuntedValues int `mapstructure:"max_hunted_values"`
}

func defaultRedaction() RedactionConfig {
	d := redact.DefaultConfig()
	return RedactionConfig{
		MessageAttributes: d.MessageAttributes,
		FlattenedMessages: d.FlattenedMessages,
		MessageEvents:     d.MessageEvents,
		DeleteAttributes:  []string{},
		KeepPromptText:    d.KeepPromptText,
		MinValueLength:    d.MinValueLength,
		MaxHuntedValues:   d.MaxValues,
	}
}

// minRedactValueLength: shorter values ("ok", "USD", "true") occur everywhere.
const minRedactValueLength = 4

func (r *RedactionConfig) validate() error {
	var errs error
	if r.MinValueLength < minRedactValueLength {
		errs = fmt.Errorf("redaction.min_value_length must be at least %d", minRedactValueLength)
	}
	if r.MaxHuntedValues < 1 {
		errs = errors.Join(errs, errors.New("redaction.max_hunted_values must be at least 1"))
	}
	for name, list := range map[string][]string{"message_attributes": r.MessageAttributes, "flattened_messages": r.FlattenedMessages,
		"message_events": r.MessageEvents, "delete_attributes": r.DeleteAttributes} {
		for i, k := range list {
			if strings.TrimSpace(k) == "" || strings.Trim(k, "*") == "" && name != "delete_attributes" {
				errs = errors.Join(errs, fmt.Errorf("redaction.%s[%d] must name an attribute, got %q", name, i, k))
			}
		}
	}
	return errs
}

// redactConfig is the redaction engine's configuration.
func (cfg *Config) redactConfig() redact.Config {
	a, r := cfg.Attributes, cfg.Redaction
	return redact.Config{
		PayloadKeys:       attrsource.RawKeys(a.Payload()...),
		PayloadSources:    slices.Concat(a.Payload()...),
		IdempotencyKeys:   attrsource.RawKeys(a.IdempotencyKey),
		MessageAttributes: r.MessageAttributes,
		FlattenedMessages: r.FlattenedMessages,
		MessageEvents:     r.MessageEvents,
		DeleteAttributes:  r.DeleteAttributes,
		KeepPromptText:    r.KeepPromptText,
		MinValueLength:    r.MinValueLength,
		MaxValues:         r.MaxHuntedValues,
	}
}
