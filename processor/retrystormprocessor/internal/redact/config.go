package redact // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
)

// Config says where, beyond the tool spans, a kept trace's tool payloads are removed when
// hashing.redact_payloads is on: the processor's redaction block. Setting a list replaces
// its whole default.
type Config struct {
	// MessageAttributes hold message structures (JSON, or attribute maps) on spans and span
	// events; inside them a tool call's arguments and a tool response's content become a
	// marker with their hash. `*` matches any run of characters. Default: the GenAI semconv,
	// Vercel AI SDK, Mastra, OpenInference and OpenLLMetry message attributes (README).
	MessageAttributes []string `mapstructure:"message_attributes"`
	// FlattenedMessages are prefixes of messages flattened into one attribute per field
	// (prefix.N.role, prefix.N.content, prefix.N.tool_calls.M.arguments). Default
	// [llm.input_messages, llm.output_messages, gen_ai.prompt, gen_ai.completion].
	FlattenedMessages []string `mapstructure:"flattened_messages"`
	// MessageEvents are span events whose attributes are one message (role, content,
	// tool_calls, message). Default: the GenAI message events (gen_ai.user.message,
	// gen_ai.tool.message, gen_ai.choice, …).
	MessageEvents []string `mapstructure:"message_events"`
	// DeleteAttributes are deleted from every span, span event and link of kept traces
	// (`*` globs), e.g. whole prompts. Default [].
	DeleteAttributes []string `mapstructure:"delete_attributes"`
	// KeepPromptText keeps the text users, systems and models wrote in messages; false
	// replaces it with "[redacted]" too, keeping roles, tool names and ids. Default true.
	KeepPromptText bool `mapstructure:"keep_prompt_text"`
	// MinValueLength is the shortest tool payload value (a string or number leaf) hunted
	// verbatim in every string of the trace. Default 8 (DefaultMinValueLength); at least 4.
	MinValueLength int `mapstructure:"min_value_length"`
	// MaxHuntedValues is the most distinct tool payload values (of at least
	// min_value_length) scrubbing hunts in one kept trace, or one batch of its late spans,
	// each with its escaped forms: the first ones met. The rest are counted in
	// Stats.NotHunted (otelcol_processor_retry_storm_payload_values_not_hunted). Default
	// 2048 (DefaultMaxValues); at least 1.
	MaxHuntedValues int `mapstructure:"max_hunted_values"`
}

// DefaultConfig returns the documented defaults (processor README, "Redaction").
func DefaultConfig() Config {
	return Config{
		MessageAttributes: []string{
			"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
			"gen_ai.prompt", "gen_ai.completion",
			"ai.prompt", "ai.prompt.messages", "ai.response.toolCalls", "ai.response.text", "ai.response.object",
			"mastra.*.input", "mastra.*.output",
			"input.value", "output.value",
			"traceloop.entity.input", "traceloop.entity.output",
			"gcp.vertex.agent.llm_request", "gcp.vertex.agent.llm_response",
		},
		FlattenedMessages: []string{"llm.input_messages", "llm.output_messages", "gen_ai.prompt", "gen_ai.completion"},
		MessageEvents: []string{
			"gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message",
			"gen_ai.choice", "gen_ai.content.prompt", "gen_ai.content.completion",
			"gen_ai.client.inference.operation.details",
		},
		DeleteAttributes: []string{},
		KeepPromptText:   true,
		MinValueLength:   DefaultMinValueLength,
		MaxHuntedValues:  DefaultMaxValues,
	}
}

// minValueLength: shorter values ("ok", "USD", "true") occur everywhere.
const minValueLength = 4

// ValidateAt checks the block found at key (redaction), naming each key in full. It is
// not Validate: confmap would call that too, and put the path before errors that name it.
func (c *Config) ValidateAt(key string) error {
	var errs error
	if c.MinValueLength < minValueLength {
		errs = fmt.Errorf("%s.min_value_length must be at least %d", key, minValueLength)
	}
	if c.MaxHuntedValues < 1 {
		errs = errors.Join(errs, fmt.Errorf("%s.max_hunted_values must be at least 1", key))
	}
	for _, l := range []struct {
		name string
		list []string
	}{
		{"message_attributes", c.MessageAttributes}, {"flattened_messages", c.FlattenedMessages},
		{"message_events", c.MessageEvents}, {"delete_attributes", c.DeleteAttributes},
	} {
		for i, k := range l.list {
			if strings.TrimSpace(k) == "" || strings.Trim(k, "*") == "" && l.name != "delete_attributes" {
				errs = errors.Join(errs, fmt.Errorf("%s.%s[%d] must name an attribute, got %q", key, l.name, i, k))
			}
		}
	}
	return errs
}

// payloads says where a tool span's raw payload sits, as the attribute sources read it.
type payloads struct {
	// keys are a tool span's raw payload attributes (the argument, result and
	// idempotency-key sources): deleted from tool spans, every copy of a repeated key and
	// flattened forms (key.a.b) too; their values are what scrubbing hunts.
	keys []string
	// sources are the argument, result and idempotency-key sources as configured
	// (`key#a.b` reads an element): what a tool span's payload values are read from. The
	// rest of an attribute a source reads an element of (a JSON-RPC request's method and
	// tool name) is deleted with it but not hunted.
	sources []string
	// idempotencyKeys are deleted from every span of the trace (HTTP sends carry the key
	// as a request header).
	idempotencyKeys []string
}

func payloadsOf(a attrsource.Lists) payloads {
	return payloads{
		keys:            attrsource.RawKeys(a.Payload()...),
		sources:         slices.Concat(a.Payload()...),
		idempotencyKeys: attrsource.RawKeys(a.IdempotencyKey),
	}
}
