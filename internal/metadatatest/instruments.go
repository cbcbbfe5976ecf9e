package metadatatest

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// RecordOnce records one measurement on every synchronous instrument among the exported
// fields of builder, a pointer to a TelemetryBuilder. Observable instruments report through
// the callbacks the component registers.
func RecordOnce(t testing.TB, builder any) {
	t.Helper()
	ctx := context.Background()
	v := reflect.ValueOf(builder).Elem()
	for i := range v.NumField() {
		field := v.Type().Field(i)
		if !field.IsExported() {
			continue
		}
		switch inst := v.Field(i).Interface(); field.Type {
		case reflect.TypeFor[metric.Int64Counter]():
			inst.(metric.Int64Counter).Add(ctx, 1)
		case reflect.TypeFor[metric.Int64UpDownCounter]():
			inst.(metric.Int64UpDownCounter).Add(ctx, 1)
		case reflect.TypeFor[metric.Int64Histogram]():
			inst.(metric.Int64Histogram).Record(ctx, 1)
		case reflect.TypeFor[metric.Float64Histogram]():
			inst.(metric.Float64Histogram).Record(ctx, 1)
		case reflect.TypeFor[metric.Int64Gauge]():
			inst.(metric.Int64Gauge).Record(ctx, 1)
		case reflect.TypeFor[metric.Int64ObservableGauge](), reflect.TypeFor[metric.Int64ObservableCounter](),
			reflect.TypeFor[metric.Int64ObservableUpDownCounter]():
		default:
			t.Errorf("TelemetryBuilder.%s is a %s, which RecordOnce does not record", field.Name, field.Type)
		}
	}
}

// Collected is what a manual reader collected from one instrumentation scope.
type Collected struct {
	Scope   string
	Metrics []metricdata.Metrics
}

// Builder is a component's TelemetryBuilder.
type Builder interface{ Shutdown() }

// Collect makes a builder with newBuilder on a manual reader, records once on each of its
// synchronous instruments, lets register (when set) register its callbacks, and returns
// what the reader collected, which must be one scope.
func Collect[B Builder](t testing.TB, newBuilder func(component.TelemetrySettings) (B, error), register func(B) error) Collected {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { require.NoError(t, provider.Shutdown(context.Background())) }()
	builder, err := newBuilder(component.TelemetrySettings{MeterProvider: provider})
	require.NoError(t, err)
	defer builder.Shutdown()
	RecordOnce(t, builder)
	if register != nil {
		require.NoError(t, register(builder))
	}
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	require.Len(t, rm.ScopeMetrics, 1, "one instrumentation scope")
	return Collected{Scope: rm.ScopeMetrics[0].Scope.Name, Metrics: rm.ScopeMetrics[0].Metrics}
}

// CheckInstruments compares the registered instruments with md: scope, the set of
// metrics, and each one's description (with mdatagen's stability suffix), unit, data type
// and histogram buckets.
func (md Metadata) CheckInstruments(t testing.TB, got Collected) {
	t.Helper()
	if got.Scope != md.ScopeName {
		t.Errorf("scope: code %q, metadata.yaml %q", got.Scope, md.ScopeName)
	}
	seen := map[string]bool{}
	for _, m := range got.Metrics {
		seen[m.Name] = true
		key, ok := strings.CutPrefix(m.Name, "otelcol_")
		want, listed := md.Telemetry.Metrics[key]
		if !ok || !listed {
			t.Errorf("metric %s: registered by the code, not in metadata.yaml", m.Name)
			continue
		}
		if want.instrument() == nil {
			t.Errorf("metric %s: metadata.yaml gives it no data type", m.Name)
			continue
		}
		if d := want.Description + stabilitySuffix(want.Stability); m.Description != d {
			t.Errorf("metric %s: description in code %q, in metadata.yaml %q", m.Name, m.Description, d)
		}
		if m.Unit != want.Unit {
			t.Errorf("metric %s: unit in code %q, in metadata.yaml %q", m.Name, m.Unit, want.Unit)
		}
		if kind, valueType, monotonic, bounds := dataType(m.Data); kind != want.kind() || valueType != want.instrument().ValueType ||
			kind == "counter" && !monotonic || want.Histogram != nil && want.Histogram.BucketBoundaries != nil && !slices.Equal(bounds, want.Histogram.BucketBoundaries) {
			t.Errorf("metric %s: code records a %s of %s (buckets %v), metadata.yaml says %s of %s (buckets %v)", m.Name,
				kind, valueType, bounds, want.kind(), want.instrument().ValueType, want.instrument().BucketBoundaries)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(md.Telemetry.Metrics)) {
		if !seen["otelcol_"+key] {
			t.Errorf("metric otelcol_%s: in metadata.yaml, not registered (or not recorded) by the code", key)
		}
		if !md.Telemetry.Metrics[key].Enabled {
			t.Errorf("metric otelcol_%s: metadata.yaml disables it, the code always records it", key)
		}
	}
}

// stabilitySuffix is what mdatagen appends to a metric's description.
func stabilitySuffix(level string) string {
	if level == "" {
		level = "alpha"
	}
	return " [" + strings.ToUpper(level[:1]) + level[1:] + "]"
}

// dataType reads the README's name of an aggregation, its value type as metadata.yaml
// writes it, whether a sum is monotonic and a histogram's bucket boundaries.
func dataType(data metricdata.Aggregation) (kind, valueType string, monotonic bool, bounds []float64) {
	switch d := data.(type) {
	case metricdata.Sum[int64]:
		return sumKind(d.IsMonotonic), "int", d.IsMonotonic, nil
	case metricdata.Sum[float64]:
		return sumKind(d.IsMonotonic), "double", d.IsMonotonic, nil
	case metricdata.Gauge[int64]:
		return "gauge", "int", false, nil
	case metricdata.Gauge[float64]:
		return "gauge", "double", false, nil
	case metricdata.Histogram[int64]:
		return "histogram", "int", false, firstBounds(d.DataPoints)
	case metricdata.Histogram[float64]:
		return "histogram", "double", false, firstBounds(d.DataPoints)
	}
	return fmt.Sprintf("%T", data), "", false, nil
}

func sumKind(monotonic bool) string {
	if monotonic {
		return "counter"
	}
	return "updowncounter"
}

func firstBounds[N int64 | float64](points []metricdata.HistogramDataPoint[N]) []float64 {
	if len(points) == 0 {
		return nil
	}
	return points[0].Bounds
}
