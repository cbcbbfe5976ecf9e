package conversation

import (
	"slices"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// readOffers reads the tools the model was offered (tool definitions: an object naming a
// tool beside its parameters' schema), from every span skip does not mark, each name once.
func (rd *Reader) readOffers(c *Conversation, t *grouping.Tree, skip []bool) {
	f := &rd.found
	f.offers = f.offers[:0]
	for i := range t.Nodes {
		if skip != nil && skip[i] {
			continue
		}
		for k, v := range t.Nodes[i].Span.Attributes().All() {
			s, ok := messageText(v)
			toolKey := containsFold(k, "tool")
			if !ok && toolKey && (v.Type() == pcommon.ValueTypeStr || v.Type() == pcommon.ValueTypeSlice) {
				// A list of the tools offered, under a key that says so (llm.tools,
				// gen_ai.tool.definitions): definitions, or their names alone.
				s = v.AsString()
				ok = payloadLooksLikeJSON(s)
			}
			if !ok {
				continue
			}
			doc := parseJSON(s)
			if toolKey && doc.isArray() {
				doc.each(func(_ string, el value) bool {
					if el.kind == kindString && toolName(el.text()) {
						f.offers = append(f.offers, el.text())
					}
					return true
				})
			}
			r := reading{full: true, found: f, scratch: &rd.scratch}
			r.walk(doc, lastSegment(k), false, 0)
		}
	}
	f.requests, f.responses = f.requests[:0], f.responses[:0]
	for _, name := range f.offers {
		if name != "" && !slices.Contains(c.Offers, name) {
			c.Offers = append(c.Offers, name)
		}
	}
	f.offers = f.offers[:0]
}

// ReadOffers reads the tools the model was offered into c, as Read does in full mode when
// the trace records no request.
func (rd *Reader) ReadOffers(c *Conversation, t *grouping.Tree, skip []bool) {
	rd.readOffers(c, t, skip)
}
