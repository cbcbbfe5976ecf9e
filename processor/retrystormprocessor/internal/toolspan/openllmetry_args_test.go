package toolspan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

// TestOpenLLMetryArgumentsAreReadWhereTheyAre: OpenLLMetry's withTool records a function's
// arguments as {"args":[…],"kwargs":{}} when positional and {"args":[],"kwargs":{…}} when
// one object. The arguments hash is that of whichever holds them, so calls with different
// keyword arguments hash apart (they hashed [] alike, and grouped as one call), triage's
// identity agrees with the hash, and a call with no arguments still hashes them empty.
func TestOpenLLMetryArgumentsAreReadWhereTheyAre(t *testing.T) {
	x := NewExtractor(DefaultConfig(), nil, true)
	hasher := payload.NewHasher(nil)
	tool := func(input string) Attempt {
		span := newSpan(t, "charge_card.tool", map[string]any{
			"traceloop.span.kind": "tool", "traceloop.entity.name": "charge_card", "traceloop.entity.input": input,
		})
		return x.Extract(span, pcommon.NewResource())
	}
	card1 := tool(`{"args":[],"kwargs":{"card_number":"3056930009020044","amount_cents":7204}}`)
	card2 := tool(`{"args":[],"kwargs":{"card_number":"3056930009027755","amount_cents":7204}}`)
	assert.Equal(t, hasher.TextDigest(`{"card_number":"3056930009020044","amount_cents":7204}`), card1.ArgsHash, "keyword arguments: the kwargs object")
	assert.NotEqual(t, card1.ArgsHash, card2.ArgsHash, "different keyword arguments hash apart")

	positional := tool(`{"args":["3056930009020044",7204],"kwargs":{}}`)
	assert.Equal(t, hasher.TextDigest(`["3056930009020044",7204]`), positional.ArgsHash, "positional arguments: the args list")

	none := tool(`{"args":[],"kwargs":{}}`)
	assert.Equal(t, hasher.TextDigest(`[]`), none.ArgsHash, "no arguments: the first empty element, as before")

	for _, a := range []Attempt{card1, card2, positional, none} {
		assert.Equal(t, a.ArgsHash, x.ArgsDigest(a.Span), "ArgsDigest reads the same source")
	}
	_, p1, ok1 := x.ArgsIdentity(card1.Span)
	_, p2, ok2 := x.ArgsIdentity(card2.Span)
	assert.True(t, ok1 && ok2)
	assert.NotEqual(t, p1, p2, "triage tells the two calls apart as the hash does")
}
