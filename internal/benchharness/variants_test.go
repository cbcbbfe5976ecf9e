package benchharness

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
)

func TestEveryVariantStartsAndStops(t *testing.T) {
	for _, v := range Variants {
		for _, overrides := range []string{"", holdAll[v]} {
			sub, err := newSubject(context.Background(), v, consumertest.NewNop(), overrides)
			if err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			if err := sub.start(context.Background()); err != nil {
				t.Fatalf("%s: start: %v", v, err)
			}
			if err := sub.shutdown(context.Background()); err != nil {
				t.Fatalf("%s: shutdown: %v", v, err)
			}
		}
	}
	if _, err := newSubject(context.Background(), "nope", consumertest.NewNop(), ""); err == nil {
		t.Fatal("an unknown variant was built")
	}
}

func TestLoadConfigRejectsInvalidOverrides(t *testing.T) {
	if _, err := newSubject(context.Background(), VariantRetryStorm, consumertest.NewNop(), "decision_wait: 0s"); err == nil {
		t.Fatal("retry_storm accepted decision_wait 0")
	}
	if _, err := newSubject(context.Background(), VariantTailSampling, consumertest.NewNop(), "no_such_key: 1"); err == nil {
		t.Fatal("tail_sampling accepted an unknown key")
	}
}

// The end-to-end collectors run the processors exactly as the in-process comparison does.
func TestBenchConfigsMatchTheHarness(t *testing.T) {
	for name, want := range map[string]string{VariantTailSampling: TailSamplingConfig, VariantRetryStorm: RetryStormConfig} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "bench", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		file := yamlMap(t, string(raw))
		section := file.Get("processors::" + name)
		if section == nil {
			section = map[string]any{}
		}
		if got, want := section, yamlMap(t, want).ToStringMap(); !reflect.DeepEqual(got, want) {
			t.Fatalf("bench/%s.yaml processors.%s = %v, the harness runs %v", name, name, got, want)
		}
		pipeline := file.Get("service::pipelines::traces::processors")
		if !reflect.DeepEqual(pipeline, []any{"memory_limiter", name}) {
			t.Fatalf("bench/%s.yaml pipeline processors = %v", name, pipeline)
		}
	}
}

func yamlMap(t *testing.T, doc string) *confmap.Conf {
	t.Helper()
	r, err := confmap.NewRetrievedFromYAML([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.AsConf()
	if err != nil {
		t.Fatal(err)
	}
	return c
}
