package benchharness

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
)

// extensionStage is an extension a variant's processors find through their host.
type extensionStage struct {
	factory extension.Factory
	config  string
}

// processorStage is one processor of a variant's pipeline: config, then overrides (YAML),
// over the factory's defaults.
type processorStage struct {
	factory           processor.Factory
	config, overrides string
}

// pipelineHost offers a variant's extensions to its processors, as the collector's host
// does: tail_sampling looks its policy extensions up there at Start.
type pipelineHost struct {
	component.Host
	extensions map[component.ID]component.Component
}

func (h pipelineHost) GetExtensions() map[component.ID]component.Component { return h.extensions }

// newPipelineSubject builds a pipeline as the collector runs one: processors in order, each
// forwarding to the next and the last to next; extensions started first and stopped last,
// processors started from the last and shut down from the first, so what one flushes at
// shutdown still finds the next one running.
func newPipelineSubject(ctx context.Context, name string, extensions []extensionStage, stages []processorStage, next consumer.Traces) (*subject, error) {
	host := pipelineHost{Host: componenttest.NewNopHost(), extensions: map[component.ID]component.Component{}}
	var exts []component.Component
	for _, e := range extensions {
		cfg, err := loadConfig(e.factory.CreateDefaultConfig(), e.config, "")
		if err != nil {
			return nil, fmt.Errorf("configure %s's %s extension: %w", name, e.factory.Type(), err)
		}
		ext, err := e.factory.Create(ctx, extensiontest.NewNopSettings(e.factory.Type()), cfg)
		if err != nil {
			return nil, fmt.Errorf("create %s's %s extension: %w", name, e.factory.Type(), err)
		}
		host.extensions[component.NewID(e.factory.Type())] = ext
		exts = append(exts, ext)
	}
	procs := make([]processor.Traces, len(stages))
	for i := len(stages) - 1; i >= 0; i-- {
		st := stages[i]
		cfg, err := loadConfig(st.factory.CreateDefaultConfig(), st.config, st.overrides)
		if err != nil {
			return nil, fmt.Errorf("configure %s's %s: %w", name, st.factory.Type(), err)
		}
		p, err := st.factory.CreateTraces(ctx, processortest.NewNopSettings(st.factory.Type()), cfg, next)
		if err != nil {
			return nil, fmt.Errorf("create %s's %s: %w", name, st.factory.Type(), err)
		}
		procs[i], next = p, p
	}
	start := func(ctx context.Context) error {
		for _, c := range slices.Concat(exts, reversed(procs)) {
			if err := c.Start(ctx, host); err != nil {
				return err
			}
		}
		return nil
	}
	shutdown := func(ctx context.Context) error {
		var errs []error
		for _, c := range slices.Concat(asComponents(procs), exts) {
			errs = append(errs, c.Shutdown(ctx))
		}
		return errors.Join(errs...)
	}
	return &subject{name: name, consumer: procs[0], start: start, shutdown: shutdown}, nil
}

func asComponents(procs []processor.Traces) []component.Component {
	out := make([]component.Component, len(procs))
	for i, p := range procs {
		out[i] = p
	}
	return out
}

func reversed(procs []processor.Traces) []component.Component {
	out := asComponents(procs)
	slices.Reverse(out)
	return out
}
