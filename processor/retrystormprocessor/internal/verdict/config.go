package verdict // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"

import (
	"errors"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
)

// AnalysisConfig is the analysis's keys, embedded in Stages so that they sit at the root
// of the processor's configuration.
type AnalysisConfig = analysis.Config

// Stages configure the steps of the verdict, each with its package's own block: the
// processor's configuration but for the store's sizes (package buffer).
type Stages struct {
	// AnalysisConfig: storm_threshold, attributes, recognition, status, divergence and
	// completeness (package analysis).
	AnalysisConfig `mapstructure:",squash"`
	// Sampling sets the keep rates (package sample).
	Sampling sample.Config `mapstructure:"sampling"`
	// Hashing configures payload hashing and whether kept payloads are redacted (package
	// payload).
	Hashing payload.HashingConfig `mapstructure:"hashing"`
	// Redaction says where else in a kept trace tool payloads are removed (package
	// redact); the redactor finds payloads where the analysis's attribute sources read them.
	Redaction redact.Config `mapstructure:"redaction"`
}

// DefaultStages are each stage's defaults.
func DefaultStages() Stages {
	return Stages{
		AnalysisConfig: analysis.DefaultConfig(),
		Sampling:       sample.DefaultConfig(),
		Hashing:        payload.DefaultHashing(),
		Redaction:      redact.DefaultConfig(),
	}
}

// ValidateAt checks each stage's block, the keys under parent ("" at the root) named in
// full. It is not Validate: confmap would call that too, and put the path before errors
// that name it.
func (s *Stages) ValidateAt(parent string) error {
	key := func(name string) string {
		if parent == "" {
			return name
		}
		return parent + "." + name
	}
	return errors.Join(s.AnalysisConfig.ValidateAt(parent), s.Sampling.ValidateAt(key("sampling")),
		s.Hashing.ValidateAt(key("hashing")), s.Redaction.ValidateAt(key("redaction")))
}
