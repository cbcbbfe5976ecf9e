package redact

import (
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

// TestPathSourcesHuntWhatTheHashReads: a path source is read by redaction through the
// reader the hash reads it with (payload.Elements, payload.FuzzPathSourceReadings): the
// element the hash reads is the last one redaction hunts, in a JSON string and in a map
// attribute that repeats a key, with keys spelled by escapes; an array is not indexed by
// either; a member the hash passes over (the path missing in the last of a repeated key)
// is still hunted.
func TestPathSourcesHuntWhatTheHashReads(t *testing.T) {
	cases := []struct {
		name, path, doc string
		// otlp writes the document as a map attribute (OTLP JSON kvlistValue) instead.
		otlp    bool
		hashed  bool
		hunted  []string
		ignored []string
	}{
		{name: "repeated member", path: "arguments", hashed: true,
			doc:    `{"arguments":{"card":"SECRET-AAA-111"},"kwargs":{},"arguments":{"card":"SECRET-BBB-222"}}`,
			hunted: []string{"SECRET-AAA-111", "SECRET-BBB-222"}},
		{name: "escaped key", path: "params.arguments", hashed: true,
			doc:    `{"p\u0061rams":{"\u0061rguments":{"q":"SECRET-CCC-333"}},"params ":{"arguments":{"q":"OTHER-DDD-444"}}}`,
			hunted: []string{"SECRET-CCC-333"}, ignored: []string{"OTHER-DDD-444"}},
		{name: "repeated member, the last escaped", path: "arguments", hashed: true,
			doc:    `{"arguments":{"q":"SECRET-EEE-555"},"\u0061rguments":{"q":"SECRET-FFF-666"}}`,
			hunted: []string{"SECRET-EEE-555", "SECRET-FFF-666"}},
		{name: "array not indexed", path: "args.0", hashed: false,
			doc:     `{"args":["OTHER-GGG-777"]}`,
			ignored: []string{"OTHER-GGG-777"}},
		{name: "array read whole", path: "args", hashed: true,
			doc:    `{"args":["SECRET-HHH-888",{"b":"SECRET-III-999"}]}`,
			hunted: []string{"SECRET-HHH-888", "SECRET-III-999"}},
		{name: "path missing in the last member", path: "params.arguments", hashed: false,
			doc:    `{"params":{"arguments":{"q":"SECRET-JJJ-000"}},"params":{"name":"lookup"}}`,
			hunted: []string{"SECRET-JJJ-000"}},
		{name: "map repeating a key", path: "arguments", hashed: true, otlp: true,
			doc: `{"kvlistValue":{"values":[{"key":"arguments","value":{"kvlistValue":{"values":[{"key":"card","value":{"stringValue":"SECRET-KKK-121"}}]}}},` +
				`{"key":"arguments","value":{"kvlistValue":{"values":[{"key":"card","value":{"stringValue":"SECRET-LLL-343"}}]}}}]}}`,
			hunted: []string{"SECRET-KKK-121", "SECRET-LLL-343"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const key = "traceloop.entity.input"
			tool := sourceSpan(t, key, c.doc, c.otlp)
			v, _ := tool.Attributes().Get(key)
			path := strings.Split(c.path, ".")
			hashed, ok := payload.CanonicalValuePath(v, path)
			if ok != c.hashed {
				t.Fatalf("the hash reads %q %v, want found %v", hashed, ok, c.hashed)
			}
			src := parseSources([]string{key + "#" + c.path})[0]
			var read []string
			for el := range src.read(key, v) {
				read = append(read, string(payload.CanonicalValue(el)))
			}
			if ok && (len(read) == 0 || read[len(read)-1] != string(hashed)) {
				t.Errorf("the hash reads %s, redaction reads %q: not the last of them", hashed, read)
			}
			cfg := testConfig()
			cfg.PayloadKeys, cfg.PayloadSources = []string{key}, []string{key + "#" + c.path}
			b := cfg.new().Values()
			b.Add(tool)
			vals := b.Done(&Stats{})
			for _, s := range c.hunted {
				if !vals.Holds("copied " + s) {
					t.Errorf("%s is not hunted (read %q)", s, read)
				}
			}
			for _, s := range c.ignored {
				if vals.Holds("copied " + s) {
					t.Errorf("%s is hunted, but the path does not reach it", s)
				}
			}
		})
	}
}

// sourceSpan is a span whose attribute key holds doc: a string, or with otlp the OTLP
// JSON value doc decodes to, which may repeat a map's key (pdata's Put cannot).
func sourceSpan(t *testing.T, key, doc string, otlp bool) ptrace.Span {
	t.Helper()
	if !otlp {
		span := ptrace.NewSpan()
		span.Attributes().PutStr(key, doc)
		return span
	}
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"s","attributes":[` +
		`{"key":"` + key + `","value":` + doc + `}]}]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	span := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	if v, _ := span.Attributes().Get(key); v.Type() != pcommon.ValueTypeMap || v.Map().Len() != 2 {
		t.Fatalf("the decoder made %v of %s, want a map keeping both members", v.AsRaw(), doc)
	}
	return span
}
