package agenttraffic

import (
	"math"
	"strings"
	"testing"
)

func TestParseScenarioWeights(t *testing.T) {
	tests := []struct {
		in      string
		want    ScenarioWeights
		wantErr string
	}{
		{in: "clean=9,agent_storm=1", want: ScenarioWeights{ScenarioClean: 9, ScenarioAgentStorm: 1}},
		{in: " stale_cache ", want: ScenarioWeights{ScenarioStaleCache: 1}},
		{in: "clean=0.5", want: ScenarioWeights{ScenarioClean: 0.5}},
		{in: "storm=1", wantErr: `unknown scenario "storm"`},
		{in: "clean=-1", wantErr: "not a non-negative number"},
		{in: "clean=x", wantErr: "not a non-negative number"},
	}
	for _, tt := range tests {
		got, err := ParseScenarioWeights(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || len(got) != len(tt.want) {
			t.Fatalf("%q: %v, %v", tt.in, got, err)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%q: %s=%v, want %v", tt.in, k, got[k], v)
			}
		}
	}
	mix, err := ParseScenarioWeights("mix")
	if err != nil || mix[ScenarioClean] != 90 || len(mix) != len(AllScenarios()) {
		t.Errorf("mix = %v, %v", mix, err)
	}
}

func TestParseShapes(t *testing.T) {
	all, err := ParseShapes("mix")
	if err != nil || len(all) != len(AllShapes()) {
		t.Fatalf("mix = %v, %v", all, err)
	}
	got, err := ParseShapes("genai, mcp")
	if err != nil || len(got) != 2 || got[0] != ShapeGenAI || got[1] != ShapeMCP {
		t.Errorf("genai, mcp = %v, %v", got, err)
	}
	if _, err := ParseShapes("genai,otel"); err == nil || !strings.Contains(err.Error(), `"otel"`) {
		t.Errorf("unknown shape accepted: %v", err)
	}
	// seed_record is the deprecated name of attempt_record.
	for _, name := range []string{"attempt_record", "seed_record"} {
		got, err := ParseShapes("genai," + name)
		if err != nil || len(got) != 2 || got[1] != ShapeAttemptRecord {
			t.Errorf("%s = %v, %v", name, got, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "defaults", cfg: Config{}},
		{name: "default mix fits one shape", cfg: Config{Shapes: []Shape{ShapeLogfireMCP}}},
		{name: "scenario without a capable shape", cfg: Config{Shapes: []Shape{ShapeLogfireMCP},
			Scenarios: ScenarioWeights{ScenarioAgentStorm: 1}}, wantErr: "scenario agent_storm needs one of the shapes"},
		{name: "every scenario needs attempt records", cfg: Config{Shapes: []Shape{ShapeGenAI}, EveryScenario: true},
			wantErr: "every scenario: incomplete_record"},
		{name: "all zero", cfg: Config{Scenarios: ScenarioWeights{ScenarioClean: 0}}, wantErr: "sum to more than 0"},
		{name: "negative", cfg: Config{Scenarios: ScenarioWeights{ScenarioClean: -1}}, wantErr: "must not be negative"},
		{name: "unknown shape", cfg: Config{Shapes: []Shape{"otel"}}, wantErr: `unknown shape "otel"`},
		{name: "unknown scenario", cfg: Config{Scenarios: ScenarioWeights{"boom": 1}}, wantErr: `unknown scenario "boom"`},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if tt.wantErr == "" && err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.wantErr)
		}
		if _, genErr := NewGenerator(tt.cfg); (genErr == nil) != (tt.wantErr == "") {
			t.Errorf("%s: NewGenerator error %v", tt.name, genErr)
		}
	}
}

func TestDefaultMixFitsTheShapes(t *testing.T) {
	traces := generate(t, Config{Seed: 6, Shapes: []Shape{ShapeLogfireMCP},
		Scenarios: nil}, 300)
	for _, tr := range traces {
		if !scenarioSupports(tr.Truth.Scenario, ShapeLogfireMCP) || tr.Truth.Shape != ShapeLogfireMCP {
			t.Fatalf("drew %s in shape %s", tr.Truth.Scenario, tr.Truth.Shape)
		}
	}
}

// TestDefaultMixKeepsItsWeights pins the default mix benchmarks were measured on: 90 clean,
// 10 over the twelve original signal scenarios, 0 for scenarios added since.
func TestDefaultMixKeepsItsWeights(t *testing.T) {
	w := DefaultScenarioWeights()
	if len(w) != len(AllScenarios()) || w[ScenarioClean] != 90 {
		t.Fatalf("default mix %v", w)
	}
	for _, sc := range []Scenario{ScenarioResultDrift, ScenarioUnresolvedAttempt, ScenarioAttemptGap} {
		if weight, ok := w[sc]; !ok || weight != 0 {
			t.Errorf("%s weighs %v (listed %v) in the default mix, want 0", sc, weight, ok)
		}
	}
	signals := 0
	for _, sc := range AllScenarios()[1:] {
		if w[sc] > 0 {
			signals++
			if math.Abs(w[sc]-10.0/12) > 1e-12 {
				t.Errorf("%s weighs %v, want 10/12", sc, w[sc])
			}
		}
	}
	if signals != 12 {
		t.Errorf("%d signal scenarios in the default mix, want 12", signals)
	}
}
