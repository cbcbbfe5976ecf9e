package toolspan

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
)

func TestArgumentAndResultHashes(t *testing.T) {
	canonical := `{"city":"Oslo","units":"c"}`
	asJSON := extract(t, "span", map[string]any{"gen_ai.tool.call.arguments": `{ "units": "c", "city": "Oslo" }`})
	asMap := extract(t, "span", map[string]any{"gen_ai.tool.call.arguments": map[string]any{"city": "Oslo", "units": "c"}})
	assert.Equal(t, sha(canonical), asJSON.ArgsHash, "SHA-256 of canonical JSON")
	assert.Equal(t, asJSON.ArgsHash, asMap.ArgsHash, "a JSON string and the same map hash alike")

	cases := []struct {
		name     string
		attrs    map[string]any
		wantArgs string
		wantRes  string
	}{
		{"given args_hash is taken as is", map[string]any{"args_hash": "deadbeef", "gen_ai.tool.call.arguments": canonical}, "deadbeef", ""},
		{"empty args_hash falls back to hashing the arguments", map[string]any{"args_hash": "", "gen_ai.tool.call.arguments": canonical}, sha(canonical), ""},
		{"given result_hash is taken as is", map[string]any{"result_hash": "cafe", "gen_ai.tool.call.result": `{"t":1}`}, "", "cafe"},
		{"result hashed canonically", map[string]any{"gen_ai.tool.call.result": `{"b":2,"a":1}`}, "", sha(`{"a":1,"b":2}`)},
		{"plain text is hashed as a JSON string", map[string]any{"gen_ai.tool.call.arguments": "Oslo"}, sha(`"Oslo"`), ""},
		{"invalid JSON is hashed as a JSON string", map[string]any{"gen_ai.tool.call.arguments": `{"city":`}, sha(`"{\"city\":"`), ""},
		{"an int argument is hashed as a number", map[string]any{"gen_ai.tool.call.arguments": int64(5)}, sha(`5`), ""},
		{"a bool result is hashed as a literal", map[string]any{"gen_ai.tool.call.result": true}, "", sha(`true`)},
		{"an empty argument string is hashed", map[string]any{"gen_ai.tool.call.arguments": ""}, sha(`""`), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := extract(t, "span", c.attrs)
			assert.Equal(t, c.wantArgs, a.ArgsHash)
			assert.Equal(t, c.wantRes, a.ResultHash)
			assert.Equal(t, c.wantArgs != "", a.Has(FieldArgsHash))
			assert.Equal(t, c.wantRes != "", a.Has(FieldResultHash))
		})
	}

	t.Run("an HMAC key changes every hash", func(t *testing.T) {
		attrs := map[string]any{
			"gen_ai.tool.call.arguments": canonical,
			"gen_ai.tool.call.result":    `{"ok":true}`,
			"idempotency_key":            "order-42",
		}
		plain := extract(t, "span", attrs)
		keyed := NewExtractor(DefaultConfig(), []byte("s3cret"), true).Extract(newSpan(t, "span", attrs), pcommon.NewResource())
		assert.Equal(t, hmacSHA("s3cret", canonical), keyed.ArgsHash)
		assert.Equal(t, hmacSHA("s3cret", `{"ok":true}`), keyed.ResultHash)
		assert.Equal(t, hmacSHA("s3cret", "order-42"), keyed.IdemHash)
		assert.NotEqual(t, plain.ArgsHash, keyed.ArgsHash)
		assert.NotEqual(t, plain.ResultHash, keyed.ResultHash)
		assert.NotEqual(t, plain.IdemHash, keyed.IdemHash)
	})
	t.Run("a given hash is not rehashed under a key", func(t *testing.T) {
		keyed := NewExtractor(DefaultConfig(), []byte("s3cret"), true).Extract(
			newSpan(t, "span", map[string]any{"args_hash": "abc", "idem_hash": "def"}), pcommon.NewResource())
		assert.Equal(t, "abc", keyed.ArgsHash)
		assert.Equal(t, "def", keyed.IdemHash)
	})
}

func TestIdempotencyKeyIsHashedAndIdemHashTakenAsGiven(t *testing.T) {
	cases := []struct {
		name  string
		attrs map[string]any
		want  string
	}{
		{"key hashed raw, not as JSON", map[string]any{"idempotency_key": "order-42"}, sha("order-42")},
		{"JSON-looking key hashed raw", map[string]any{"idempotency_key": `{"b":1, "a":2}`}, sha(`{"b":1, "a":2}`)},
		{"idem_hash as given", map[string]any{"idem_hash": "given"}, "given"},
		{"idem_hash wins over a key", map[string]any{"idem_hash": "given", "idempotency_key": "order-42"}, "given"},
		{"empty idem_hash falls back to the key", map[string]any{"idem_hash": "", "idempotency_key": "order-42"}, sha("order-42")},
		{"empty key gives no hash", map[string]any{"idempotency_key": ""}, ""},
		{"int key is hashed as its text", map[string]any{"idempotency_key": int64(42)}, sha("42")},
		{"nothing", map[string]any{}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := extract(t, "span", c.attrs)
			assert.Equal(t, c.want, a.IdemHash)
			assert.Equal(t, c.want != "", a.Has(FieldIdemHash))
		})
	}
}

func TestAttemptNumbers(t *testing.T) {
	valid := func(n int64) AttemptNumber { return AttemptNumber{Value: n, Set: true} }
	invalid := AttemptNumber{Set: true, Invalid: true}
	cases := []struct {
		name  string
		value any
		want  AttemptNumber
	}{
		{"int 2", int64(2), valid(2)},
		{"int 1", int64(1), valid(1)},
		{"string 3", "3", valid(3)},
		{"string with spaces", " 4 ", valid(4)},
		{"string with plus sign", "+5", valid(5)},
		{"double 2.0", 2.0, valid(2)},
		{"double 2^53", float64(1 << 53), valid(1 << 53)},
		{"huge string", "9223372036854775807", valid(math.MaxInt64)},
		{"huge int", int64(math.MaxInt64), valid(math.MaxInt64)},
		{"negative int", int64(-1), invalid},
		{"negative string", "-1", invalid},
		{"zero", int64(0), invalid},
		{"zero string", "0", invalid},
		{"not a number", "abc", invalid},
		{"empty string", "", invalid},
		{"fraction", 2.5, invalid},
		{"fraction string", "2.5", invalid},
		{"NaN", math.NaN(), invalid},
		{"+Inf", math.Inf(1), invalid},
		{"-Inf", math.Inf(-1), invalid},
		{"1e300", 1e300, invalid},
		{"double above 2^53", float64(1<<53) * 2, invalid},
		{"overflowing string", "9223372036854775808", invalid},
		{"bool", true, invalid},
		{"map", map[string]any{"n": int64(2)}, invalid},
		{"slice", []any{int64(2)}, invalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := extract(t, "span", map[string]any{"attempt": c.value})
			assert.Equal(t, c.want, a.Number)
			assert.Equal(t, !c.want.Invalid, a.Has(FieldAttempt), "only a usable attempt number counts as carried")
		})
	}
	t.Run("absent", func(t *testing.T) {
		a := extract(t, "span", nil)
		assert.Equal(t, AttemptNumber{}, a.Number)
		assert.False(t, a.Has(FieldAttempt))
	})
	t.Run("an invalid first source hides a valid later one", func(t *testing.T) {
		a := extract(t, "span", map[string]any{"attempt": "abc", "retry.attempt": int64(2)})
		assert.Equal(t, invalid, a.Number)
	})
}

func TestTokens(t *testing.T) {
	cases := []struct {
		name    string
		value   any
		want    int64
		present bool
	}{
		{"int", int64(120), 120, true},
		{"zero", int64(0), 0, true},
		{"string", "77", 77, true},
		{"integral double", 12.0, 12, true},
		{"huge", int64(math.MaxInt64), math.MaxInt64, true},
		{"negative int", int64(-5), 0, false},
		{"negative string", "-5", 0, false},
		{"fraction", 1.5, 0, false},
		{"not a number", "many", 0, false},
		{"bool", true, 0, false},
		{"NaN", math.NaN(), 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := extract(t, "span", map[string]any{"gen_ai.usage.input_tokens": c.value, "gen_ai.usage.output_tokens": c.value})
			assert.Equal(t, c.want, a.TokensIn)
			assert.Equal(t, c.want, a.TokensOut)
			assert.Equal(t, c.present, a.Has(FieldTokensIn))
			assert.Equal(t, c.present, a.Has(FieldTokensOut))
		})
	}
	t.Run("an invalid first source hides a valid later one", func(t *testing.T) {
		a := extract(t, "span", map[string]any{"token_in": "abc", "gen_ai.usage.input_tokens": int64(5)})
		assert.Zero(t, a.TokensIn)
		assert.False(t, a.Has(FieldTokensIn))
	})
}

func TestSideEffectIsLowercased(t *testing.T) {
	a := extract(t, "span", map[string]any{"side_effect": "EXTERNAL"})
	assert.Equal(t, "external", a.SideEffect)
	a = extract(t, "span", map[string]any{"side_effect": ""})
	assert.False(t, a.Has(FieldSideEffect))
}

func TestRedactKeysListThePayloadKeysPresent(t *testing.T) {
	cfg := DefaultConfig()
	raw := attrsource.RawKeys(cfg.Sources.Arguments, cfg.Sources.Result, cfg.Sources.IdempotencyKey)
	for _, key := range raw {
		t.Run(key, func(t *testing.T) {
			a := extract(t, "span", map[string]any{key: `{"x":1}`, "tool_name": "t", "args_hash": "h"})
			assert.Equal(t, []string{key}, a.RedactKeys)
		})
	}
	a := extract(t, "span", map[string]any{
		"idempotency_key":            "k",
		"gen_ai.tool.call.result":    "r",
		"request":                    "{}",
		"gen_ai.tool.call.arguments": "{}",
		"args_hash":                  "h",
		"tool_name":                  "t",
	})
	assert.Equal(t, []string{"gen_ai.tool.call.arguments", "request", "gen_ai.tool.call.result", "idempotency_key"}, a.RedactKeys)
	assert.Empty(t, extract(t, "span", map[string]any{"args_hash": "h", "idem_hash": "i", "tool_name": "t"}).RedactKeys,
		"hashes and identity attributes are not payloads")
}

func TestPresenceBits(t *testing.T) {
	full := extract(t, "pay", map[string]any{
		"run_id": "run-1", "span_id": "span_19", "attempt": int64(2), "tool_name": "charge_card",
		"args_hash": "a", "result_hash": "r", "idem_hash": "i", "status": "ok",
		"token_in": int64(10), "token_out": int64(5), "side_effect": "write",
	})
	for name, f := range FieldNames {
		assert.True(t, full.Has(f), name)
	}

	bare := ptrace.NewSpan()
	a := NewExtractor(DefaultConfig(), nil, true).Extract(bare, pcommon.NewResource())
	assert.Equal(t, Field(0), a.Present, "a bare span carries nothing")
	assert.Equal(t, outcome.Unknown, a.Status, "a span that never ended has no outcome")

	unset := extract(t, "execute_tool x", map[string]any{"gen_ai.operation.name": "execute_tool"})
	assert.False(t, unset.Has(FieldStatus), "UNSET with no error signal carries no status")
	assert.Equal(t, outcome.OK, unset.Status)
}

func TestDurationNanos(t *testing.T) {
	a := extract(t, "span", nil)
	assert.Equal(t, int64(endNanos-startNanos), a.DurationNanos())
	a.End = a.Start - 1
	assert.Zero(t, a.DurationNanos())
}

func TestHostileValuesHaveDocumentedOutcomes(t *testing.T) {
	huge := strings.Repeat("A", 1<<20)
	deep := strings.Repeat(`{"result":`, 10000) + `{"isError":true}` + strings.Repeat("}", 10000)
	cases := []struct {
		name  string
		attrs map[string]any
		check func(t *testing.T, a Attempt)
	}{
		{"huge argument string is hashed", map[string]any{"gen_ai.tool.call.arguments": huge}, func(t *testing.T, a Attempt) {
			assert.Len(t, a.ArgsHash, 64)
		}},
		{"deeply nested arguments past the canonical depth hash as a string", map[string]any{"gen_ai.tool.call.arguments": strings.Repeat("[", 100) + strings.Repeat("]", 100)}, func(t *testing.T, a Attempt) {
			assert.Equal(t, sha(`"`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`"`), a.ArgsHash)
		}},
		{"isError nested past the scan depth is not seen", map[string]any{"gen_ai.tool.call.result": deep}, func(t *testing.T, a Attempt) {
			assert.Equal(t, outcome.OK, a.Status)
			assert.Nil(t, a.Remap)
		}},
		{"invalid JSON result with isError text is not an error", map[string]any{"gen_ai.tool.call.result": "{\"isError\": tru\xff"}, func(t *testing.T, a Attempt) {
			assert.Equal(t, outcome.OK, a.Status)
			assert.Len(t, a.ResultHash, 64)
		}},
		{"map-valued tool name is read as its JSON text", map[string]any{"gen_ai.tool.name": map[string]any{"a": int64(1)}}, func(t *testing.T, a Attempt) {
			assert.Equal(t, `{"a":1}`, a.ToolName)
		}},
		{"int call id is read as its text", map[string]any{"gen_ai.tool.call.id": int64(12)}, func(t *testing.T, a Attempt) {
			assert.Equal(t, "12", a.CallID)
		}},
		{"bytes result is hashed and not scanned", map[string]any{"gen_ai.tool.call.result": []byte(`{"isError":true}`)}, func(t *testing.T, a Attempt) {
			assert.Equal(t, outcome.OK, a.Status)
			assert.Len(t, a.ResultHash, 64)
		}},
		{"invalid UTF-8 tool name is kept as given", map[string]any{"tool_name": "pay\xff"}, func(t *testing.T, a Attempt) {
			assert.Equal(t, "pay\xff", a.ToolName)
		}},
		{"path source on a slice value is not read", map[string]any{"request": []any{"params"}}, func(t *testing.T, a Attempt) {
			assert.Empty(t, a.ToolName)
			assert.Empty(t, a.ArgsHash)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, extract(t, "span", c.attrs))
		})
	}
}
