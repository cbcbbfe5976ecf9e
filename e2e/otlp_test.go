//go:build e2e

package e2e

import (
	"context"
	"encoding/hex"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

// otlpClient sends traces to the collector's OTLP gRPC receiver, as an agent SDK would.
type otlpClient struct {
	conn   *grpc.ClientConn
	client ptraceotlp.GRPCClient
}

// sendTimeout bounds one export; a healthy collector answers in milliseconds.
const sendTimeout = 30 * time.Second

// dialOTLP connects to the OTLP gRPC receiver on port; the connection is closed at cleanup.
func dialOTLP(t *testing.T, port int) *otlpClient {
	t.Helper()
	conn, err := grpc.NewClient(loopback(port),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		t.Fatalf("dial collector OTLP: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return &otlpClient{conn: conn, client: ptraceotlp.NewGRPCClient(conn)}
}

func (c *otlpClient) export(td ptrace.Traces) error {
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	_, err := c.client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
	return err
}

func (c *otlpClient) mustExport(t *testing.T, td ptrace.Traces) {
	t.Helper()
	n := td.SpanCount()
	if err := c.export(td); err != nil {
		t.Fatalf("export %d spans to the collector: %v", n, err)
	}
}

// generate draws n traces (n+1 when the last draw is a stale_cache pair) with their truth.
// Every trace starts a minute ago on the traces' clock, so each looks finished.
func generate(t *testing.T, cfg agenttraffic.Config, n int) []agenttraffic.Trace {
	t.Helper()
	if cfg.Service == "" {
		cfg.Service = agentService
	}
	cfg.Base = time.Now().Add(-time.Minute)
	gen, err := agenttraffic.NewGenerator(cfg)
	if err != nil {
		t.Fatalf("generate agent traffic: %v", err)
	}
	return gen.Generate(n)
}

// withoutStaleCache is the realistic mix less stale_cache, whose finding depends on the
// order in which two traces on different shards are decided.
func withoutStaleCache() agenttraffic.ScenarioWeights {
	w := agenttraffic.DefaultScenarioWeights()
	delete(w, agenttraffic.ScenarioStaleCache)
	return w
}

// truthOf lists the traces' ground truth.
func truthOf(traces []agenttraffic.Trace) []agenttraffic.Truth {
	out := make([]agenttraffic.Truth, len(traces))
	for i := range traces {
		out[i] = traces[i].Truth
	}
	return out
}

// sendWhole sends the traces perRequest at a time, each trace whole inside one request.
func sendWhole(t *testing.T, c *otlpClient, traces []agenttraffic.Trace, perRequest int) (spans, bytes int) {
	t.Helper()
	var sizer ptrace.ProtoMarshaler
	for start := 0; start < len(traces); start += perRequest {
		td := ptrace.NewTraces()
		for i := start; i < min(start+perRequest, len(traces)); i++ {
			agenttraffic.AppendPdata(td, &traces[i])
		}
		spans += td.SpanCount()
		bytes += sizer.TracesSize(td)
		c.mustExport(t, td)
	}
	return spans, bytes
}

// sendTraceParts sends the spans of tr listed in ids (hex) to a collector's OTLP gRPC port.
func sendTraceParts(t *testing.T, port int, tr *agenttraffic.Trace, ids []string) {
	t.Helper()
	part := *tr
	part.Spans = slices.DeleteFunc(slices.Clone(tr.Spans), func(s agenttraffic.Span) bool {
		return !slices.Contains(ids, hex.EncodeToString(s.ID[:]))
	})
	if err := dialOTLP(t, port).export(agenttraffic.TraceToPdata(&part)); err != nil {
		t.Fatalf("send %d spans to %s: %v", len(part.Spans), loopback(port), err)
	}
}

// regenerate replays agentsim's generator for the flags a test passed (--seed,
// --every-scenario, --count, --rate: traces interval apart, 10ms for --rate 0; defaults
// otherwise), so the test knows every span as it was sent. The generator is deterministic
// for a config; the trace ids are checked against the truth file to prove the two agree.
func regenerate(t *testing.T, seed uint64, count int, interval time.Duration, truth []agenttraffic.Truth) map[string]*agenttraffic.Trace {
	t.Helper()
	gen, err := agenttraffic.NewGenerator(agenttraffic.Config{
		Seed: seed, EveryScenario: true, Interval: interval, Service: agentService,
		Base: time.Now().Add(-time.Minute),
	})
	if err != nil {
		t.Fatalf("regenerate agent traffic: %v", err)
	}
	traces := gen.Generate(count)
	if len(traces) != len(truth) {
		t.Fatalf("regenerated %d traces, agentsim's truth has %d", len(traces), len(truth))
	}
	out := make(map[string]*agenttraffic.Trace, len(traces))
	for i := range traces {
		if id := traces[i].ID.String(); id != truth[i].TraceID {
			t.Fatalf("regenerated trace %d is %s, agentsim sent %s: the generator config differs from agentsim's", i, id, truth[i].TraceID)
		}
		out[traces[i].ID.String()] = &traces[i]
	}
	return out
}
