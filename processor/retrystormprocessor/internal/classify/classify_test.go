package classify

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
)

const (
	ok      = outcome.OK
	fail    = outcome.Error
	timeout = outcome.Timeout
	unknown = outcome.Unknown
)

func tries(args []string, statuses ...outcome.Status) []Try {
	out := make([]Try, len(statuses))
	for i, s := range statuses {
		out[i] = Try{Status: s, ArgsHash: args[min(i, len(args)-1)]}
	}
	return out
}

func TestClassOf(t *testing.T) {
	one := []string{"a"}
	cases := []struct {
		name  string
		tries []Try
		want  Class
	}{
		{"example span_19: timeout, error, ok under one args hash", tries(one, timeout, fail, ok), TransientDependency},
		{"near miss: same statuses with two args hashes", tries([]string{"a", "b", "b"}, timeout, fail, ok), ChangedArguments},
		{"changed arguments that never succeeded", tries([]string{"a", "b"}, fail, fail), ChangedArguments},
		{"retry after success", tries(one, ok, ok), RetryAfterSuccess},
		{"retry after success that then failed", tries(one, ok, fail), RetryAfterSuccess},
		{"near miss for retry after success: failure then success is transient", tries(one, fail, ok), TransientDependency},
		{"exhausted", tries(one, fail, timeout, fail), Exhausted},
		{"exhausted with an unresolved last attempt", tries(one, fail, unknown), Exhausted},
		{"unknown arguments count as one hash", tries([]string{""}, fail, ok), TransientDependency},
		{"unknown then ok is not a dependency failure but still classified", tries(one, unknown, ok), TransientDependency},
		{"single ok try (transport storm with all sends ok)", tries(one, ok), RetryAfterSuccess},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, Of(c.tries))
		})
	}
}

func TestDuplicateSideEffectWins(t *testing.T) {
	dup := []Try{
		{Status: ok, ArgsHash: "a", IdemHash: "k", SideEffect: "external"},
		{Status: ok, ArgsHash: "a", IdemHash: "k", SideEffect: "external"},
	}
	assert.Equal(t, DuplicateSideEffect, Of(dup))

	// span_19 of attempt_record.json: one idem hash but only the last attempt had an effect.
	example := []Try{
		{Status: timeout, ArgsHash: "a", IdemHash: "e2b1aa44", SideEffect: "unknown"},
		{Status: fail, ArgsHash: "a", IdemHash: "e2b1aa44", SideEffect: "unknown"},
		{Status: ok, ArgsHash: "a", IdemHash: "e2b1aa44", SideEffect: "external"},
	}
	assert.Equal(t, TransientDependency, Of(example))

	twoKeys := []Try{
		{Status: ok, IdemHash: "k1", SideEffect: "external"},
		{Status: ok, IdemHash: "k2", SideEffect: "external"},
	}
	assert.False(t, DuplicateSideEffects(twoKeys), "different idempotency keys are different operations")
	assert.False(t, DuplicateSideEffects(tries([]string{"a"}, ok, ok)), "no idempotency key, no duplicate claim")
}

func TestStatusFlipAndUniqueArgs(t *testing.T) {
	assert.True(t, StatusFlip(tries([]string{"a"}, timeout, fail, ok)))
	assert.False(t, StatusFlip(tries([]string{"a"}, fail, fail)))
	assert.False(t, StatusFlip(nil))
	assert.Equal(t, 2, UniqueArgs(tries([]string{"a", "b", "a"}, ok, ok, ok)))
	assert.Equal(t, 1, UniqueArgs(tries([]string{""}, ok)))
}
