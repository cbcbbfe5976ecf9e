package stormsummaryexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"
)

func TestFactory(t *testing.T) {
	factory := NewFactory()
	assert.Equal(t, metadata.Type, factory.Type())
	assert.Equal(t, metadata.TracesStability, factory.TracesStability())
}

func TestLifecycle(t *testing.T) {
	cfg := testConfig(t)
	factory := NewFactory()
	exp, err := factory.CreateTraces(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)

	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, exp.ConsumeTraces(context.Background(), summaryTrace(t, stormRecord(traceIDHex(1), "span_19"))))
	require.NoError(t, exp.Shutdown(context.Background()), "shutdown drains the queue")

	assert.Equal(t, []string{"span_19"}, callKeys(readLines(t, cfg.Path)))
}

func TestShutdownWithoutStart(t *testing.T) {
	cfg := testConfig(t)
	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Shutdown(context.Background()))
	assert.NoFileExists(t, cfg.Path, "nothing is created before start")
}

func TestSummaryShutdownIsIdempotent(t *testing.T) {
	e := newTestExporter(t, testConfig(t), newTelemetry(t))
	require.NoError(t, e.shutdown(context.Background()), "before start")
	require.NoError(t, e.start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, e.shutdown(context.Background()))
	require.NoError(t, e.shutdown(context.Background()), "twice")
}

// A failed append goes back to exporterhelper's retry; the retried batch lands once.
func TestFailedWriteIsRetriedByExporterhelperAndLandsOnce(t *testing.T) {
	for _, queued := range []bool{false, true} {
		t.Run(map[bool]string{false: "retry_on_failure", true: "sending_queue"}[queued], func(t *testing.T) {
			cfg := testConfig(t)
			cfg.RetryConfig.InitialInterval = 5 * time.Millisecond
			cfg.RetryConfig.MaxInterval = 10 * time.Millisecond
			cfg.RetryConfig.RandomizationFactor = 0
			cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
			if queued {
				queue := exporterhelper.NewDefaultQueueConfig()
				queue.NumConsumers = 4
				cfg.QueueConfig = configoptional.Some(queue)
			}
			tel := newTelemetry(t)
			var writer *failingWriter
			exp, err := newTracesExporter(context.Background(), settings(tel), cfg, failFirst(2, &writer))
			require.NoError(t, err)
			require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))

			batch := summaryTrace(t, stormRecord(traceIDHex(1), "a"), stormRecord(traceIDHex(2), "b"))
			require.NoError(t, exp.ConsumeTraces(context.Background(), batch))
			if queued {
				require.Eventually(t, func() bool { return counter(t, tel, metadata.MetricRecordsWritten) == 2 }, 5*time.Second, 5*time.Millisecond)
			}
			require.NoError(t, exp.Shutdown(context.Background()))

			assert.Equal(t, []string{"a", "b"}, callKeys(readLines(t, cfg.Path)))
			assert.Equal(t, int64(2), counter(t, tel, metadata.MetricWriteErrors))
			assert.Equal(t, int64(2), counter(t, tel, metadata.MetricRecordsWritten))
			assert.Equal(t, 3, writer.calls, "two torn writes, then the whole batch once")
		})
	}
}
