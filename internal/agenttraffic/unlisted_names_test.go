package agenttraffic_test

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor"
)

// retryStormDefaults are the names retry_storm's default configuration reads without
// following the model: attribute keys and event names of its attribute sources, divergence
// attributes and redaction's message attributes, and its recognition rules.
type retryStormDefaults struct {
	keys, events map[string]bool
	keyGlobs     []*regexp.Regexp
	keyPrefixes  []string
	rules        []retrystormprocessor.ToolSpanRuleConfig
	namePrefixes []string
	nameSuffixes []string
}

func loadRetryStormDefaults(t *testing.T) retryStormDefaults {
	t.Helper()
	cfg, ok := retrystormprocessor.NewFactory().CreateDefaultConfig().(*retrystormprocessor.Config)
	if !ok {
		t.Fatal("the default config is no *retrystormprocessor.Config")
	}
	d := retryStormDefaults{keys: map[string]bool{}, events: map[string]bool{}}
	lists := reflect.ValueOf(cfg.Attributes)
	for i := range lists.NumField() {
		sources, ok := lists.Field(i).Interface().([]string)
		if !ok {
			t.Fatalf("attributes.%s is no list", lists.Type().Field(i).Name)
		}
		for _, src := range sources {
			if rest, ok := strings.CutPrefix(src, "event:"); ok {
				name, key, _ := strings.Cut(rest, ":")
				d.events[name], d.keys[key] = true, true
				continue
			}
			key, _, _ := strings.Cut(src, "#")
			d.keys[key] = true
		}
	}
	d.keys[cfg.Divergence.CaveatAttribute] = true
	d.keys[cfg.Divergence.CitedAssetsAttribute] = true
	d.keys[cfg.Divergence.ReadAssetAttribute] = true
	for _, glob := range cfg.Redaction.MessageAttributes {
		d.keyGlobs = append(d.keyGlobs, regexp.MustCompile("^"+strings.ReplaceAll(regexp.QuoteMeta(glob), `\*`, ".*")+"$"))
	}
	for _, prefix := range cfg.Redaction.FlattenedMessages {
		d.keyPrefixes = append(d.keyPrefixes, prefix+".")
	}
	for _, name := range cfg.Redaction.MessageEvents {
		d.events[name] = true
	}
	d.rules = append(append(d.rules, cfg.Recognition.ToolSpans...), cfg.Recognition.AgentSpans...)
	d.namePrefixes, d.nameSuffixes = cfg.Recognition.ToolNamePrefixes, cfg.Recognition.ToolNameSuffixes
	return d
}

// keyNamed reports an attribute key one of the defaults reads.
func (d *retryStormDefaults) keyNamed(k string) bool {
	if d.keys[k] {
		return true
	}
	for _, g := range d.keyGlobs {
		if g.MatchString(k) {
			return true
		}
	}
	for _, p := range d.keyPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// ruleMatches applies a recognition rule as retry_storm does: white space around a value
// ignored, in any case.
func ruleMatches(rule retrystormprocessor.ToolSpanRuleConfig, s *agenttraffic.Span) bool {
	fold := func(v string) string { return strings.ToLower(strings.TrimSpace(v)) }
	switch {
	case rule.Attribute != "":
		v, ok := s.Attr(rule.Attribute)
		return ok && (rule.Value == "" || fold(v.Str) == fold(rule.Value))
	case rule.SpanName != "":
		return fold(s.Name) == fold(rule.SpanName)
	case rule.SpanNamePrefix != "":
		return strings.HasPrefix(fold(s.Name), fold(rule.SpanNamePrefix))
	}
	return false
}

// TestUnlistedShapesNameNothingRetryStormReads: no span of the unlisted shapes, in any
// scenario they express, matches a default recognition rule (tool or agent) or carries an
// attribute key or event a default attribute source, divergence attribute or redaction
// message setting names; no span name wears a tool-name prefix or suffix. retry_storm
// sees these traces only by following the model.
func TestUnlistedShapesNameNothingRetryStormReads(t *testing.T) {
	d := loadRetryStormDefaults(t)
	for _, shape := range agenttraffic.UnlistedShapes() {
		w := agenttraffic.ScenarioWeights{}
		for _, sc := range agenttraffic.AllScenarios() {
			if shape.Expresses(sc) {
				w[sc] = 1
			}
		}
		gen, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: 4, Shapes: []agenttraffic.Shape{shape}, Scenarios: w, ToolsPerTrace: 8})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range gen.Generate(60) {
			for i := range tr.Spans {
				s := &tr.Spans[i]
				for _, rule := range d.rules {
					if ruleMatches(rule, s) {
						t.Errorf("%s: span %q matches the rule %+v", shape, s.Name, rule)
					}
				}
				for _, p := range d.namePrefixes {
					if strings.HasPrefix(s.Name, p) {
						t.Errorf("%s: span %q starts with the tool-name prefix %q", shape, s.Name, p)
					}
				}
				for _, suffix := range d.nameSuffixes {
					if strings.HasSuffix(s.Name, suffix) {
						t.Errorf("%s: span %q ends with the tool-name suffix %q", shape, s.Name, suffix)
					}
				}
				for _, a := range s.Attrs {
					if d.keyNamed(a.Key) {
						t.Errorf("%s: span %q carries %s, which retry_storm reads by default", shape, s.Name, a.Key)
					}
				}
				for _, e := range s.Events {
					if d.events[e.Name] {
						t.Errorf("%s: span %q has the event %s, which retry_storm reads by default", shape, s.Name, e.Name)
					}
					for _, a := range e.Attrs {
						if d.keyNamed(a.Key) {
							t.Errorf("%s: span %q event %s carries %s, which retry_storm reads by default", shape, s.Name, e.Name, a.Key)
						}
					}
				}
			}
		}
	}
}
