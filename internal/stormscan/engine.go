package stormscan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	nooptrace "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/retrystorm/retrystorm/exporter/stormsummaryexporter"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor"
)

// engine is the retry_storm processor, in its offline mode, in front of the storm_summary
// exporter writing the records file: the components a collector runs, in one process.
type engine struct {
	proc     processor.Traces
	exp      exporter.Traces
	reader   *sdkmetric.ManualReader
	provider *sdkmetric.MeterProvider

	mu        sync.Mutex
	recordErr error // the first error writing records
}

// nopHost is the host of the two components: neither uses extensions.
type nopHost struct{}

func (nopHost) GetExtensions() map[component.ID]component.Component { return nil }

func newEngine(ctx context.Context, ec engineConfig, recordsPath string, stderr io.Writer) (*engine, error) {
	e := &engine{reader: sdkmetric.NewManualReader()}
	e.provider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.reader))
	// The processor's warnings (late signals, a short hashing key) go to stderr as a
	// collector would log them.
	logger := zap.New(zapcore.NewCore(
		zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()),
		zapcore.Lock(zapcore.AddSync(stderr)), zapcore.WarnLevel))
	tel := component.TelemetrySettings{Logger: logger, MeterProvider: e.provider, TracerProvider: nooptrace.NewTracerProvider()}
	build := component.NewDefaultBuildInfo()

	expFactory := stormsummaryexporter.NewFactory()
	expCfg := expFactory.CreateDefaultConfig().(*stormsummaryexporter.Config)
	expCfg.Path, expCfg.Include, expCfg.TraceURL = recordsPath, ec.include, ec.traceURL
	// Written as the processor forwards: no queue that could refuse a batch, no retry that
	// would hold the scan minutes on a full disk (the first error ends it), and one file,
	// not rotated, moved into place when the scan ends.
	expCfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	expCfg.RetryConfig.Enabled = false
	expCfg.Rotation.MaxMegabytes = unrotated
	if err := expCfg.Validate(); err != nil {
		return nil, fmt.Errorf("records file: %w", err)
	}
	exp, err := expFactory.CreateTraces(ctx, exporter.Settings{ID: component.NewID(expFactory.Type()), TelemetrySettings: tel, BuildInfo: build}, expCfg)
	if err != nil {
		return nil, fmt.Errorf("records file: %w", err)
	}
	e.exp = exp
	next, err := consumer.NewTraces(func(ctx context.Context, td ptrace.Traces) error {
		err := exp.ConsumeTraces(ctx, td)
		if err != nil {
			e.mu.Lock()
			e.recordErr = cmpErr(e.recordErr, err)
			e.mu.Unlock()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	procFactory := retrystormprocessor.NewFactory()
	proc, err := retrystormprocessor.NewOfflineTraces(processor.Settings{ID: component.NewID(procFactory.Type()), TelemetrySettings: tel, BuildInfo: build}, ec.processor, next)
	if err != nil {
		return nil, fmt.Errorf("retry_storm settings: %w", err)
	}
	e.proc = proc
	if err := exp.Start(ctx, nopHost{}); err != nil {
		return nil, &recordsError{fmt.Errorf("records file: %w", err)}
	}
	if err := proc.Start(ctx, nopHost{}); err != nil {
		_ = exp.Shutdown(ctx)
		return nil, err
	}
	return e, nil
}

// unrotated is a rotation size (MB) no scan reaches.
const unrotated = 1 << 30

// recordsError is a failure to write the records: the scan could not do its work (exit
// status 1), as opposed to a configuration it was given that is wrong (2).
type recordsError struct{ err error }

func (e *recordsError) Error() string { return e.err.Error() }
func (e *recordsError) Unwrap() error { return e.err }

// failed returns the first error writing records, nil while there is none.
func (e *engine) failed() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.recordErr
}

func cmpErr(first, next error) error {
	if first != nil {
		return first
	}
	return next
}

// consume hands one request to the processor; once writing records has failed it refuses,
// so the scan stops instead of analysing what it cannot record.
func (e *engine) consume(ctx context.Context, td ptrace.Traces) error {
	if err := e.failed(); err != nil {
		return &recordsError{fmt.Errorf("write records: %w", err)}
	}
	return e.proc.ConsumeTraces(ctx, td)
}

// finish decides every trace still buffered, writes the remaining records and reports the
// first error writing records.
func (e *engine) finish(ctx context.Context) error {
	errs := errors.Join(e.proc.Shutdown(ctx), e.exp.Shutdown(ctx))
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.recordErr != nil {
		return fmt.Errorf("write records: %w", e.recordErr)
	}
	return errs
}

// close lets go of the telemetry, once the counts are read.
func (e *engine) close(ctx context.Context) { _ = e.provider.Shutdown(ctx) }

// counts is what the processor's telemetry says of the scan so far.
type counts struct {
	traces         map[string]int64 // by decision
	earlyDecisions map[string]int64 // by cause, shutdown left out
	lateSpans      int64
	droppedSpans   map[string]int64 // by cause, sampled_out left out
}

// Telemetry names of the retry_storm processor the summary reads (its README's Telemetry).
const (
	metricTraces         = "otelcol_processor_retry_storm_traces"
	metricEarlyDecisions = "otelcol_processor_retry_storm_early_decisions"
	metricLateSpans      = "otelcol_processor_retry_storm_late_spans"
	metricSpansDropped   = "otelcol_processor_retry_storm_spans_dropped"
)

func (e *engine) counts(ctx context.Context) (counts, error) {
	c := counts{traces: map[string]int64{}, earlyDecisions: map[string]int64{}, droppedSpans: map[string]int64{}}
	var rm metricdata.ResourceMetrics
	if err := e.reader.Collect(ctx, &rm); err != nil {
		return c, err
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				// The processor exports its bounded series at 0 from the start; a count
				// that never moved says nothing here, as before that series existed.
				if dp.Value == 0 {
					continue
				}
				switch m.Name {
				case metricTraces:
					c.traces[attr(dp, "decision")] += dp.Value
				case metricEarlyDecisions:
					if cause := attr(dp, "cause"); cause != "shutdown" {
						c.earlyDecisions[cause] += dp.Value
					}
				case metricLateSpans:
					if attr(dp, "decision") != "provisional" {
						c.lateSpans += dp.Value
					}
				case metricSpansDropped:
					if cause := attr(dp, "cause"); cause != "sampled_out" && cause != "late" {
						c.droppedSpans[cause] += dp.Value
					}
				}
			}
		}
	}
	return c, nil
}

func attr(dp metricdata.DataPoint[int64], key string) string {
	v, _ := dp.Attributes.Value(attribute.Key(key))
	return v.AsString()
}
