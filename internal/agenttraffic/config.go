package agenttraffic

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Shape names one instrumentation style (cmd/agentsim/README.md lists them).
type Shape string

// Shapes.
const (
	ShapeGenAI          Shape = "genai"
	ShapeMastra         Shape = "mastra"
	ShapeMCP            Shape = "mcp"
	ShapeOpenLLMetryMCP Shape = "openllmetry_mcp"
	ShapeOpenInference  Shape = "openinference"
	ShapeVercelV6       Shape = "vercel_v6"
	ShapeClaudeCode     Shape = "claude_code"
	ShapeLogfireMCP     Shape = "logfire_mcp"
	ShapeAttemptRecord  Shape = "attempt_record"

	ShapeStrands                Shape = "strands"
	ShapeOpenInferenceLangChain Shape = "openinference_langchain"
	ShapeOpenAIAgents           Shape = "openai_agents"

	ShapeUnlisted        Shape = "unlisted"
	ShapeUnlistedOffered Shape = "unlisted_offered"
)

// shapeSeedRecord is the deprecated name of ShapeAttemptRecord, still accepted by ParseShapes.
const shapeSeedRecord Shape = "seed_record"

// AllShapes lists every shape in a stable order.
func AllShapes() []Shape {
	all := append([]Shape{ShapeGenAI, ShapeMastra, ShapeMCP, ShapeOpenLLMetryMCP, ShapeOpenInference,
		ShapeVercelV6, ShapeClaudeCode, ShapeLogfireMCP, ShapeAttemptRecord}, FrameworkShapes()...)
	return append(all, UnlistedShapes()...)
}

// FrameworkShapes lists, in a stable order, the shapes of agent frameworks whose signals
// sit in gen_ai.tool.status, OpenInference AGENT spans and Strands' message events:
// Strands, LangChain.js over OpenInference, the OpenAI Agents SDK over OpenInference. They
// follow the nine instrumentation shapes in AllShapes.
func FrameworkShapes() []Shape {
	return []Shape{ShapeStrands, ShapeOpenInferenceLangChain, ShapeOpenAIAgents}
}

// UnlistedShapes lists, in a stable order, the shapes of a framework no recognition rule
// or attribute source of retry_storm names (unlisted.go): with content capture on, and
// off. retry_storm sees their tool calls only by following the model. They end AllShapes.
func UnlistedShapes() []Shape {
	return []Shape{ShapeUnlisted, ShapeUnlistedOffered}
}

// knownShapes lists every shape a config may name.
func knownShapes() []Shape { return AllShapes() }

// Scenario names what one trace injects. The names are stable: flags and ground truth use them.
type Scenario string

// Scenarios.
const (
	ScenarioClean               Scenario = "clean"
	ScenarioTransportStorm      Scenario = "transport_storm"
	ScenarioExecutorStorm       Scenario = "executor_storm"
	ScenarioAgentStorm          Scenario = "agent_storm"
	ScenarioChangedArguments    Scenario = "changed_arguments"
	ScenarioRetryAfterSuccess   Scenario = "retry_after_success"
	ScenarioExhaustedGreen      Scenario = "exhausted_green"
	ScenarioMCPIsError          Scenario = "mcp_is_error"
	ScenarioDuplicateSideEffect Scenario = "duplicate_side_effect"
	ScenarioStaleCache          Scenario = "stale_cache"
	ScenarioNestedDuplicate     Scenario = "nested_duplicate"
	ScenarioUnbackedCitation    Scenario = "unbacked_citation"
	ScenarioIncompleteRecord    Scenario = "incomplete_record"
	ScenarioResultDrift         Scenario = "result_drift"
	ScenarioUnresolvedAttempt   Scenario = "unresolved_attempt"
	ScenarioAttemptGap          Scenario = "attempt_gap"
)

// AllScenarios lists every scenario in a stable order.
func AllScenarios() []Scenario {
	return []Scenario{ScenarioClean, ScenarioTransportStorm, ScenarioExecutorStorm,
		ScenarioAgentStorm, ScenarioChangedArguments, ScenarioRetryAfterSuccess,
		ScenarioExhaustedGreen, ScenarioMCPIsError, ScenarioDuplicateSideEffect,
		ScenarioStaleCache, ScenarioNestedDuplicate, ScenarioUnbackedCitation,
		ScenarioIncompleteRecord, ScenarioResultDrift, ScenarioUnresolvedAttempt, ScenarioAttemptGap}
}

// mixSignals are the signal scenarios the default mix spreads its 10% over. Benchmarks are
// measured on that mix, so scenarios added later (result_drift, unresolved_attempt,
// attempt_gap) weigh 0 in it: they are reached by name or through EveryScenario.
var mixSignals = []Scenario{ScenarioTransportStorm, ScenarioExecutorStorm, ScenarioAgentStorm,
	ScenarioChangedArguments, ScenarioRetryAfterSuccess, ScenarioExhaustedGreen, ScenarioMCPIsError,
	ScenarioDuplicateSideEffect, ScenarioStaleCache, ScenarioNestedDuplicate, ScenarioUnbackedCitation,
	ScenarioIncompleteRecord}

// ScenarioWeights gives each scenario a relative weight; missing scenarios weigh 0.
type ScenarioWeights map[Scenario]float64

// DefaultScenarioWeights is a realistic mix: 90% clean, 10% spread evenly over the signal
// scenarios of mixSignals. Every other scenario is listed with weight 0, so the mix names
// every scenario without drawing the later ones.
func DefaultScenarioWeights() ScenarioWeights {
	w := ScenarioWeights{}
	for _, s := range AllScenarios() {
		w[s] = 0
	}
	w[ScenarioClean] = 90
	for _, s := range mixSignals {
		w[s] = 10 / float64(len(mixSignals))
	}
	return w
}

// Config configures a Generator. The zero value of every field means its default.
type Config struct {
	// Seed makes the run deterministic: one seed, one sequence of traces.
	Seed uint64
	// Base is the start time of the first trace; default 2025-01-01T00:00:00Z.
	Base time.Time
	// Interval is the planned-clock distance between trace starts; default 100ms.
	Interval time.Duration
	// Service is the resource service.name; default "checkout-agent".
	Service string
	// Shapes are the instrumentation shapes to draw from; default AllShapes.
	Shapes []Shape
	// Scenarios are the scenario weights; default DefaultScenarioWeights less the scenarios
	// no configured shape can express.
	Scenarios ScenarioWeights
	// EveryScenario forces every scenario once, in AllScenarios order, before weighted draws.
	EveryScenario bool
	// ToolsPerTrace is the number of logical tool calls a clean trace plans; default 24
	// (about 60 spans per trace over the shape mix).
	ToolsPerTrace int
	// StalePairs is how many pairs of traces (a stale read and the trace it copied) one
	// stale_cache draw yields; default 1, warm trace first. Several come interleaved, the
	// first pair's stale trace before its warm trace. At most MaxStalePairs.
	StalePairs int

	// withoutCopies leaves the payload copies off model, agent and HTTP spans: the test
	// seam that shows copies change no id, time or truth.
	withoutCopies bool
}

func (c Config) withDefaults() Config {
	if c.Base.IsZero() {
		c.Base = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if c.Interval <= 0 {
		c.Interval = 100 * time.Millisecond
	}
	if c.Service == "" {
		c.Service = "checkout-agent"
	}
	if len(c.Shapes) == 0 {
		c.Shapes = AllShapes()
	}
	if len(c.Scenarios) == 0 {
		// The default mix leaves out what the chosen shapes cannot express, so a run
		// restricted to one shape still works without a scenario list.
		c.Scenarios = DefaultScenarioWeights()
		for _, sc := range AllScenarios() {
			if len(c.shapesFor(sc)) == 0 {
				delete(c.Scenarios, sc)
			}
		}
	}
	if c.ToolsPerTrace <= 0 {
		c.ToolsPerTrace = 24
	}
	if c.StalePairs <= 0 {
		c.StalePairs = 1
	}
	return c
}

// MaxStalePairs bounds Config.StalePairs: a draw holds all its traces until they are sent.
const MaxStalePairs = 64

// Validate checks names, weights and that every scenario that can be drawn has a shape able
// to express it.
func (c Config) Validate() error {
	var errs []error
	if c.StalePairs < 0 || c.StalePairs > MaxStalePairs {
		errs = append(errs, fmt.Errorf("stale pairs must be between 1 and %d, got %d", MaxStalePairs, c.StalePairs))
	}
	c = c.withDefaults()
	for _, s := range c.Shapes {
		if !knownShape(s) {
			errs = append(errs, fmt.Errorf("unknown shape %q", s))
		}
	}
	total := 0.0
	for _, sc := range sortedScenarios(c.Scenarios) {
		w := c.Scenarios[sc]
		if !knownScenario(sc) {
			errs = append(errs, fmt.Errorf("unknown scenario %q", sc))
			continue
		}
		if w < 0 {
			errs = append(errs, fmt.Errorf("scenario %s: weight must not be negative", sc))
		}
		total += w
		if w > 0 && len(c.shapesFor(sc)) == 0 {
			errs = append(errs, fmt.Errorf("scenario %s needs one of the shapes %v", sc, scenarioShapes(sc)))
		}
	}
	if total <= 0 && !c.EveryScenario {
		errs = append(errs, errors.New("scenario weights must sum to more than 0"))
	}
	if c.EveryScenario {
		for _, sc := range AllScenarios() {
			if len(c.shapesFor(sc)) == 0 {
				errs = append(errs, fmt.Errorf("every scenario: %s needs one of the shapes %v", sc, scenarioShapes(sc)))
			}
		}
	}
	return errors.Join(errs...)
}

// shapesFor returns the configured shapes that can express the scenario, in config order.
func (c Config) shapesFor(sc Scenario) []Shape {
	var out []Shape
	for _, s := range c.Shapes {
		if scenarioSupports(sc, s) {
			out = append(out, s)
		}
	}
	return out
}

// ParseShapes parses a comma-separated shape list; "mix" or "" means AllShapes.
func ParseShapes(s string) ([]Shape, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "mix" {
		return AllShapes(), nil
	}
	var out []Shape
	for _, part := range strings.Split(s, ",") {
		sh := Shape(strings.TrimSpace(part))
		if sh == shapeSeedRecord {
			sh = ShapeAttemptRecord
		}
		if !knownShape(sh) {
			return nil, fmt.Errorf("unknown shape %q (known: %v)", sh, knownShapes())
		}
		out = append(out, sh)
	}
	return out, nil
}

// ParseScenarioWeights parses "name=weight,…"; a bare name weighs 1, "mix" or "" is the
// default mix.
func ParseScenarioWeights(s string) (ScenarioWeights, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "mix" {
		return DefaultScenarioWeights(), nil
	}
	w := ScenarioWeights{}
	for _, part := range strings.Split(s, ",") {
		name, weight, hasWeight := strings.Cut(strings.TrimSpace(part), "=")
		sc := Scenario(strings.TrimSpace(name))
		if !knownScenario(sc) {
			return nil, fmt.Errorf("unknown scenario %q (known: %v)", sc, AllScenarios())
		}
		v := 1.0
		if hasWeight {
			var err error
			if v, err = strconv.ParseFloat(strings.TrimSpace(weight), 64); err != nil || v < 0 {
				return nil, fmt.Errorf("scenario %s: weight %q is not a non-negative number", sc, weight)
			}
		}
		w[sc] = v
	}
	return w, nil
}

func knownShape(s Shape) bool { return slices.Contains(knownShapes(), s) }

func knownScenario(s Scenario) bool {
	for _, k := range AllScenarios() {
		if k == s {
			return true
		}
	}
	return false
}

// sortedScenarios lists the map's keys, known ones in AllScenarios order first, so draws and
// error messages never depend on map iteration order.
func sortedScenarios(w ScenarioWeights) []Scenario {
	var out []Scenario
	for _, sc := range AllScenarios() {
		if _, ok := w[sc]; ok {
			out = append(out, sc)
		}
	}
	var unknown []string
	for sc := range w {
		if !knownScenario(sc) {
			unknown = append(unknown, string(sc))
		}
	}
	for _, u := range sortStrings(unknown) {
		out = append(out, Scenario(u))
	}
	return out
}
