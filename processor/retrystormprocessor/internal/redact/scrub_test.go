package redact

import (
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// TestScrubbedMessagesStillParse: a payload value found in a message structure outside a
// tool call (a number a user quoted, a string cut in the middle of an escape) is scrubbed
// and the message still parses.
func TestScrubbedMessagesStillParse(t *testing.T) {
	c := collector{}
	c.reset(8, DefaultMaxValues)
	c.addValue(pcommon.NewValueStr(`{"order":123456789012,"note":"quoted\"value"}`), 0)
	vals := &Values{}
	c.build(vals)
	for _, doc := range []string{
		`[{"role":"user","content":"see order","n":123456789012}]`,
		`[{"role":"user","n":-123456789012.5e3}]`,
		`[{"role":"user","content":"it said quoted\"value twice: quoted\"value"}]`,
		`[{"role":"user","content":"order 123456789012 please"}]`,
	} {
		out, n := scrubJSON(doc, vals)
		if n == 0 {
			t.Errorf("%s: nothing scrubbed", doc)
		}
		if !json.Valid([]byte(out)) {
			t.Errorf("%s became %s, which does not parse", doc, out)
		}
		if strings.Contains(out, "123456789012") || strings.Contains(out, `quoted\"value`) {
			t.Errorf("%s became %s: a value survived", doc, out)
		}
	}
}
