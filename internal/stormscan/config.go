package stormscan

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"

	"github.com/retrystorm/retrystorm/exporter/stormsummaryexporter"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor"
)

// engineConfig is what a collector configuration gives the scan: the retry_storm
// processor's settings and the storm_summary exporter's record selection.
type engineConfig struct {
	processor *retrystormprocessor.Config
	// include and traceURL come from a storm_summary exporter of the file, when it has one.
	include  []string
	traceURL string
	// maxBufferedSet: the file sets max_buffered_bytes.
	maxBufferedSet bool
}

// defaultEngineConfig is the processor's defaults and every record kind the scan writes by
// default: storms and findings.
func defaultEngineConfig() engineConfig {
	return engineConfig{
		processor: retrystormprocessor.NewFactory().CreateDefaultConfig().(*retrystormprocessor.Config),
		include:   []string{"storm", "finding"},
	}
}

// loadEngineConfig reads a collector configuration file the way the collector does (its
// ${env:...} and ${file:...} references resolved) and takes the retry_storm processor
// section named name ("" = the only one) and the storm_summary exporter section, if any.
func loadEngineConfig(path, name string) (engineConfig, error) {
	ec := defaultEngineConfig()
	abs, err := filepath.Abs(path)
	if err != nil {
		return ec, fmt.Errorf("config %s: %w", path, err)
	}
	resolver, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs:              []string{"file:" + abs},
		ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
		DefaultScheme:     "env",
	})
	if err != nil {
		return ec, fmt.Errorf("config %s: %w", path, err)
	}
	conf, err := resolver.Resolve(context.Background())
	if err != nil {
		return ec, fmt.Errorf("config %s: %w", path, err)
	}
	procKey, err := pickComponent(conf, "processors", "retry_storm", name)
	if err != nil {
		return ec, fmt.Errorf("config %s: %w", path, err)
	}
	if procKey == "" {
		return ec, fmt.Errorf("config %s: no retry_storm processor under processors", path)
	}
	if err := unmarshalSection(conf, "processors", procKey, ec.processor); err != nil {
		return ec, fmt.Errorf("config %s: processors::%s: %w", path, procKey, err)
	}
	ec.maxBufferedSet = conf.IsSet("processors" + confmap.KeyDelimiter + procKey + confmap.KeyDelimiter + "max_buffered_bytes")
	// With no storm_summary exporter, or several to choose from, the scan keeps its own
	// record selection (--include chooses one).
	expKey, severalOrNone := pickComponent(conf, "exporters", "storm_summary", "")
	if severalOrNone != nil || expKey == "" {
		return ec, nil
	}
	exp := stormsummaryexporter.NewFactory().CreateDefaultConfig().(*stormsummaryexporter.Config)
	if err := unmarshalSection(conf, "exporters", expKey, exp); err != nil {
		return ec, fmt.Errorf("config %s: exporters::%s: %w", path, expKey, err)
	}
	ec.include, ec.traceURL = exp.Include, exp.TraceURL
	return ec, nil
}

// pickComponent returns the key under section of the component of type typ called name,
// or of the only component of that type when name is empty ("" when there is none).
func pickComponent(conf *confmap.Conf, section, typ, name string) (string, error) {
	sub, err := conf.Sub(section)
	if err != nil {
		return "", err
	}
	var keys []string
	for key := range sub.ToStringMap() {
		var id component.ID
		if id.UnmarshalText([]byte(key)) != nil || id.Type().String() != typ {
			continue
		}
		if name != "" && key != name && id.Name() != name {
			continue
		}
		keys = append(keys, key)
	}
	slices.Sort(keys)
	switch {
	case len(keys) == 0 && name != "":
		return "", fmt.Errorf("no %s %q under %s", typ, name, section)
	case len(keys) == 0:
		return "", nil
	case len(keys) > 1:
		return "", fmt.Errorf("several %s under %s (%s): name one with --processor", typ, section, strings.Join(keys, ", "))
	}
	return keys[0], nil
}

func unmarshalSection(conf *confmap.Conf, section, key string, into any) error {
	sub, err := conf.Sub(section + confmap.KeyDelimiter + key)
	if err != nil {
		return err
	}
	return sub.Unmarshal(into)
}
