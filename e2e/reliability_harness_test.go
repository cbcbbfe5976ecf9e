//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/tracespans"
)

// The reliability tests (issue 7) share this harness: a collector config with the knobs
// they turn, an OTLP gRPC client that sends hand-built or generated traces whole, a backend
// that can refuse or hang, tmpfs mounts for filesystem faults, and readers for the summary
// file, /proc and the metrics.

// relConfig is the collector a reliability test runs. Extra blocks are YAML lines already
// indented for where they go.
type relConfig struct {
	OTLPPort, BackendPort, MetricsPort int
	SummaryPath                        string
	DecisionWait, RootGrace            string
	MaxBufferedBytes                   int64 // 0: the default
	NumShards                          int
	CleanPercent                       float64
	// ProcessorExtra goes under retry_storm (4 spaces).
	ProcessorExtra string
	// SummaryExtra goes under storm_summary (4 spaces).
	SummaryExtra string
	// BackendExtra goes under otlp_grpc/backend (4 spaces).
	BackendExtra string
	// BatchMaxSize, when set, adds a batch processor after retry_storm that sends at most
	// this many spans per request.
	BatchMaxSize int
	// NoBackend leaves the OTLP exporter out of the pipeline.
	NoBackend bool
	// Extensions is the extensions block (2 spaces), ExtensionNames the service list.
	Extensions     string
	ExtensionNames string
	LogLevel       string
}

var relTemplate = template.Must(template.New("config").Parse(`
{{- if .Extensions}}
extensions:
{{.Extensions}}
{{- end}}
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{{.OTLPPort}}

processors:
  retry_storm:
    decision_wait: {{.DecisionWait}}
    root_grace: {{.RootGrace}}
    num_shards: {{.NumShards}}
{{- if .MaxBufferedBytes}}
    max_buffered_bytes: {{.MaxBufferedBytes}}
{{- end}}
    sampling:
      clean_percent: {{.CleanPercent}}
{{.ProcessorExtra}}
{{- if .BatchMaxSize}}
  batch:
    send_batch_size: {{.BatchMaxSize}}
    send_batch_max_size: {{.BatchMaxSize}}
    timeout: 200ms
{{- end}}
exporters:
  storm_summary:
    path: {{.SummaryPath}}
    include: [storm, failure, finding]
{{.SummaryExtra}}
{{- if not .NoBackend}}
  otlp_grpc/backend:
    endpoint: 127.0.0.1:{{.BackendPort}}
    tls:
      insecure: true
{{.BackendExtra}}
{{- end}}

service:
{{- if .ExtensionNames}}
  extensions: {{.ExtensionNames}}
{{- end}}
  telemetry:
    logs:
      level: {{.LogLevel}}
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: {{.MetricsPort}}
                without_scope_info: true
                without_units: true
                without_type_suffix: true
  pipelines:
    traces:
      receivers: [otlp]
      processors: [retry_storm{{if .BatchMaxSize}}, batch{{end}}]
      exporters: [{{if not .NoBackend}}otlp_grpc/backend, {{end}}storm_summary]
`))

// newRelConfig fills ports and defaults: a short decision wait, two shards, clean traces
// at 5%.
func newRelConfig(t *testing.T, dir string) relConfig {
	t.Helper()
	ports := freePorts(t, 3)
	return relConfig{
		OTLPPort: ports[0], BackendPort: ports[1], MetricsPort: ports[2],
		SummaryPath:  filepath.Join(dir, "storms", "storms.jsonl"),
		DecisionWait: "3s", RootGrace: "200ms", NumShards: 2, CleanPercent: 5, LogLevel: "info",
	}
}

// write renders the config into dir/name.
func (c relConfig) write(t *testing.T, dir, name string) string {
	t.Helper()
	var b bytes.Buffer
	if err := relTemplate.Execute(&b, c); err != nil {
		t.Fatalf("render collector config: %v", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatalf("write collector config: %v", err)
	}
	return path
}

// startCollectorEnv is startCollector with extra environment variables and a log file the
// caller chooses (appended to, so a restarted collector keeps one log).
func startCollectorEnv(t *testing.T, config, logPath string, env ...string) *collectorProcess {
	t.Helper()
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("open collector log: %v", err)
	}
	defer logFile.Close()
	cmd := exec.Command(collectorBinary(t), "--config", config)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start collector: %v", err)
	}
	p := &collectorProcess{cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("collector log (%s):\n%s", logPath, tail(p.log(), 40))
		}
	})
	return p
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *collectorProcess) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("send SIGKILL to collector: %v", err)
	}
	select {
	case <-p.exited:
	case <-time.After(shutdownTimeout):
		t.Fatalf("collector still running %s after SIGKILL", shutdownTimeout)
	}
}

// alive fails the test when the collector has exited.
func (p *collectorProcess) alive(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
		t.Fatalf("collector exited: %v", p.waitErr)
	default:
	}
}

// ---- OTLP client ----

// otlpClient sends traces to the collector's OTLP gRPC receiver, as an agent SDK would.
type otlpClient struct {
	conn   *grpc.ClientConn
	client ptraceotlp.GRPCClient
}

// sendTimeout bounds one export; a healthy collector answers in milliseconds.
const sendTimeout = 30 * time.Second

func dialOTLP(t *testing.T, port int) *otlpClient {
	t.Helper()
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", port),
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

// ---- generated traffic ----

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

// ---- hand-built traces ----

// spanBuilder writes one trace span by span. Span ids count up from 1; times are
// millisecond offsets from a base a minute ago.
type spanBuilder struct {
	td     ptrace.Traces
	spans  ptrace.SpanSlice
	id     pcommon.TraceID
	base   time.Time
	nextID uint64
}

// newSpanBuilder starts a trace whose id is derived from name, so tests never share one.
func newSpanBuilder(name string) *spanBuilder {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", agentService)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("reliability")
	sum := sha256.Sum256([]byte("reliability/" + name))
	var id pcommon.TraceID
	copy(id[:], sum[:16])
	return &spanBuilder{td: td, spans: ss.Spans(), id: id, base: time.Now().Add(-time.Minute)}
}

func (b *spanBuilder) traceID() string { return b.id.String() }

// span adds a span and returns its id.
func (b *spanBuilder) span(name string, parent pcommon.SpanID, startMS, endMS int64, attrs map[string]any) pcommon.SpanID {
	b.nextID++
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], b.nextID)
	s := b.spans.AppendEmpty()
	s.SetName(name)
	s.SetTraceID(b.id)
	s.SetSpanID(id)
	s.SetParentSpanID(parent)
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(b.base.Add(time.Duration(startMS) * time.Millisecond)))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(b.base.Add(time.Duration(endMS) * time.Millisecond)))
	for k, v := range attrs {
		if err := s.Attributes().PutEmpty(k).FromRaw(v); err != nil {
			panic(fmt.Sprintf("attribute %s: %v", k, err))
		}
	}
	return id
}

// last returns the span added last, to set a status or change ids.
func (b *spanBuilder) last() ptrace.Span { return b.spans.At(b.spans.Len() - 1) }

func (b *spanBuilder) fail(msg string) {
	b.last().Status().SetCode(ptrace.StatusCodeError)
	b.last().Status().SetMessage(msg)
}

// root adds the invoke_agent root span.
func (b *spanBuilder) root(endMS int64) pcommon.SpanID {
	return b.span("invoke_agent checkout", pcommon.SpanID{}, 0, endMS, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "checkout"})
}

// genai adds an OTel GenAI execute_tool attempt.
func (b *spanBuilder) genai(parent pcommon.SpanID, tool, callID, args string, startMS, endMS int64, extra map[string]any) pcommon.SpanID {
	attrs := map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
		"gen_ai.tool.call.id": callID, "gen_ai.tool.call.arguments": args,
	}
	for k, v := range extra {
		attrs[k] = v
	}
	return b.span("execute_tool "+tool, parent, startMS, endMS, attrs)
}

// stormTrace is a whole trace holding one executor storm: call `call` of `tool` failed,
// then succeeded on its second attempt (class transient_dependency).
func stormTrace(name, tool, args string) *spanBuilder {
	b := newSpanBuilder(name)
	root := b.root(1000)
	b.genai(root, tool, "call_"+name, args, 10, 100, nil)
	b.fail("upstream 503")
	b.genai(root, tool, "call_"+name, args, 200, 300, map[string]any{"gen_ai.tool.call.result": `{"ok":true}`})
	return b
}

// ---- backend ----

// startBackendConsumer is startBackend with any consumer behind the receiver.
func startBackendConsumer(t *testing.T, port int, next consumer.Traces) {
	t.Helper()
	factory := otlpreceiver.NewFactory()
	cfg := factory.CreateDefaultConfig().(*otlpreceiver.Config)
	grpcCfg := configgrpc.NewDefaultServerConfig()
	grpcCfg.NetAddr.Endpoint = fmt.Sprintf("127.0.0.1:%d", port)
	grpcCfg.MaxRecvMsgSizeMiB = 64
	cfg.Protocols.GRPC = configoptional.Some(grpcCfg)
	cfg.Protocols.HTTP = configoptional.None[otlpreceiver.HTTPConfig]()
	rcv, err := factory.CreateTraces(context.Background(), receivertest.NewNopSettings(factory.Type()), cfg, next)
	if err != nil {
		t.Fatalf("create backend OTLP receiver: %v", err)
	}
	if err := rcv.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatalf("start backend OTLP receiver on %s: %v", grpcCfg.NetAddr.Endpoint, err)
	}
	t.Cleanup(func() {
		if err := rcv.Shutdown(context.Background()); err != nil {
			t.Errorf("shut down backend OTLP receiver: %v", err)
		}
	})
}

// Backend behaviours.
const (
	backendAccept int32 = iota
	backendRefuse       // answer UNAVAILABLE at once
	backendHang         // hold the call until the client gives up, then fail it
)

// faultyBackend is a tracing backend that can refuse or hang; what it accepts lands in sink.
type faultyBackend struct {
	mode     atomic.Int32
	refused  atomic.Int64
	hung     atomic.Int64
	accepted atomic.Int64
	sink     consumertest.TracesSink
}

var errBackendDown = errors.New("backend refuses: test fault")

func (b *faultyBackend) consume(ctx context.Context, td ptrace.Traces) error {
	switch b.mode.Load() {
	case backendRefuse:
		b.refused.Add(1)
		return errBackendDown
	case backendHang:
		b.hung.Add(1)
		select {
		case <-ctx.Done():
		case <-time.After(sendTimeout):
		}
		// Nothing is kept: the client timed out, so a kept copy would come back as a
		// duplicate of its retry.
		return errBackendDown
	}
	b.accepted.Add(1)
	return b.sink.ConsumeTraces(ctx, td)
}

func startFaultyBackend(t *testing.T, port int) *faultyBackend {
	t.Helper()
	b := &faultyBackend{}
	next, err := consumer.NewTraces(b.consume)
	if err != nil {
		t.Fatalf("create backend consumer: %v", err)
	}
	startBackendConsumer(t, port, next)
	return b
}

// spanCounts counts what the sink received per trace id and per (trace, span) id, without
// copying spans.
func spanCounts(sink *consumertest.TracesSink) (perTrace map[string]int, perSpan map[[2]string]int) {
	perTrace, perSpan = map[string]int{}, map[[2]string]int{}
	for _, td := range sink.AllTraces() {
		for _, s := range tracespans.All(td) {
			tid := s.TraceID().String()
			perTrace[tid]++
			perSpan[[2]string{tid, s.SpanID().String()}]++
		}
	}
	return perTrace, perSpan
}

// ---- summary file ----

// summaryFile is the summary file as read back: every line must be a whole record.
type summaryFile struct {
	records []stormrecord.Record
	// findings are the finding records (retrystorm.finding/v1).
	findings []stormrecord.FindingRecord
	raw      []byte
	byID     map[string]int // line count per record id, of both schemas
}

// readSummaryFile reads path (missing = empty) and fails on a partial or broken line.
func readSummaryFile(t *testing.T, path string) summaryFile {
	t.Helper()
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return summaryFile{byID: map[string]int{}}
	}
	if err != nil {
		t.Fatalf("read storm summary file: %v", err)
	}
	f := summaryFile{raw: raw, byID: map[string]int{}}
	if len(raw) > 0 && raw[len(raw)-1] != '\n' {
		t.Errorf("the summary file ends in a partial line: %q", tail(string(raw), 1))
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		var head struct {
			Schema string `json:"schema"`
		}
		if err := json.Unmarshal(sc.Bytes(), &head); err == nil && head.Schema == stormrecord.FindingSchema {
			var r stormrecord.FindingRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.ID == "" {
				t.Errorf("summary line %d is not a whole finding record (%v): %.200s", n, err, sc.Text())
				continue
			}
			f.findings = append(f.findings, r)
			f.byID[r.ID]++
			continue
		}
		var r stormrecord.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.ID == "" {
			t.Errorf("summary line %d is not a whole record (%v): %.200s", n, err, sc.Text())
			continue
		}
		f.records = append(f.records, r)
		f.byID[r.ID]++
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan storm summary file: %v", err)
	}
	return f
}

// count is the number of records of both schemas.
func (f summaryFile) count() int { return len(f.records) + len(f.findings) }

// duplicates lists record ids written more than once.
func (f summaryFile) duplicates() []string {
	var out []string
	for id, n := range f.byID {
		if n > 1 {
			out = append(out, fmt.Sprintf("%s ×%d", id, n))
		}
	}
	return out
}

// recordsOf returns the records of one trace.
func (f summaryFile) recordsOf(traceID string) []stormrecord.Record {
	var out []stormrecord.Record
	for _, r := range f.records {
		if r.TraceID == traceID {
			out = append(out, r)
		}
	}
	return out
}

// expectedRecordIDs lists the ids of the records the truth implies. A call without a call
// id gets a key the processor derives, so those are matched by attempt span ids instead:
// the second result lists them.
func expectedRecords(truth []agenttraffic.Truth) (ids map[string]string, bySpans map[string]string) {
	ids, bySpans = map[string]string{}, map[string]string{}
	for _, tr := range truth {
		for _, rec := range tr.Records {
			what := fmt.Sprintf("trace %s (%s, %s) call %s", tr.TraceID, tr.Scenario, tr.Shape, callName(rec))
			if rec.CallKey != "" {
				ids[stormrecord.RecordID(tr.TraceID, rec.CallKey)] = what
			} else {
				bySpans[tr.TraceID+"/"+strings.Join(rec.AttemptSpanIDs, ",")] = what
			}
		}
	}
	return ids, bySpans
}

// missingRecords lists the expected records the file lacks.
func missingRecords(truth []agenttraffic.Truth, f summaryFile) []string {
	ids, bySpans := expectedRecords(truth)
	have := map[string]bool{}
	for _, r := range f.records {
		have[r.TraceID+"/"+strings.Join(r.AttemptSpanIDs, ",")] = true
	}
	var out []string
	for id, what := range ids {
		if f.byID[id] == 0 {
			out = append(out, what)
		}
	}
	for key, what := range bySpans {
		if !have[key] {
			out = append(out, what)
		}
	}
	return out
}

// ---- metrics ----

// waitMetrics polls the metrics until cond holds; it fails the test on timeout or when
// the collector exits, and returns the last scrape.
func waitMetrics(t *testing.T, p *collectorProcess, port int, timeout time.Duration, what string, cond func(metrics) bool) metrics {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last metrics
	var lastErr error
	for {
		m, err := scrape(port)
		if err == nil {
			last = m
			if cond(m) {
				return m
			}
		}
		lastErr = err
		select {
		case <-p.exited:
			t.Fatalf("collector exited while waiting for %s: %v", what, p.waitErr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s (last scrape error: %v); relevant metrics:\n%s", what, timeout, lastErr, last.retrystormLines())
		}
		time.Sleep(pollInterval)
	}
}

// retrystormLines prints the samples of the processor, the summary exporter and the
// exporters' send counters, for failure messages.
func (m metrics) retrystormLines() string {
	var b strings.Builder
	for _, s := range m {
		if strings.Contains(s.name, "retry_storm") || strings.Contains(s.name, "storm_summary") ||
			strings.HasPrefix(s.name, "otelcol_exporter_") {
			if strings.HasSuffix(s.name, "_bucket") {
				continue
			}
			fmt.Fprintf(&b, "  %s%v %v\n", s.name, s.labels, s.value)
		}
	}
	return b.String()
}

// accounted checks received = forwarded + dropped + buffered spans.
func accounted(m metrics) (received, forwarded, dropped, buffered int, ok bool) {
	received = int(m.sum(metricSpansReceived, nil))
	forwarded = int(m.sum(metricSpansForwarded, nil))
	dropped = int(m.sum(metricSpansDropped, nil))
	buffered = int(m.sum(metricPrefix+"buffered_spans", nil))
	return received, forwarded, dropped, buffered, received == forwarded+dropped+buffered
}

// Exporter metrics the reliability tests read.
const (
	metricRecordsWritten = "otelcol_exporter_storm_summary_records_written"
	metricRecordsDedup   = "otelcol_exporter_storm_summary_records_deduplicated"
	metricWriteErrors    = "otelcol_exporter_storm_summary_write_errors"
	metricSentSpans      = "otelcol_exporter_sent_spans"
	metricSendFailed     = "otelcol_exporter_send_failed_spans"
	metricQueueSize      = "otelcol_exporter_queue_size"
)

// ---- /proc ----

// procStatusKB reads a kB field (VmRSS, VmHWM) of /proc/<pid>/status.
func procStatusKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read /proc/%d/status: %v", pid, err)
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("parse %s in /proc/%d/status: %q", field, pid, line)
			}
			return v
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// rssSampler records the highest VmRSS seen while it runs (VmHWM gives the peak too; the
// samples show how it moved).
type rssSampler struct {
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	samples []int64
}

func sampleRSS(pid int, every time.Duration) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			if err == nil {
				for line := range strings.Lines(string(raw)) {
					if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
						v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
						s.mu.Lock()
						s.samples = append(s.samples, v)
						s.mu.Unlock()
					}
				}
			}
			select {
			case <-s.stop:
				return
			case <-ticker.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) finish() (maxKB int64, n int) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.samples {
		maxKB = max(maxKB, v)
	}
	return maxKB, len(s.samples)
}

// ---- tmpfs ----

// mountTmpfs mounts a tmpfs of sizeKB on a new directory under dir and unmounts it at
// cleanup. CI runs as root on this machine type: a refused mount fails the test (it must
// not silently skip the filesystem faults).
func mountTmpfs(t *testing.T, dir string, sizeKB int) string {
	t.Helper()
	mnt := filepath.Join(dir, "tmpfs")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		t.Fatalf("create mount point: %v", err)
	}
	opts := fmt.Sprintf("size=%dk,mode=0700", sizeKB)
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		t.Fatalf("mount a %d KiB tmpfs on %s: %v — the filesystem fault tests need root (CAP_SYS_ADMIN), as CI has on this machine type", sizeKB, mnt, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, 0); err != nil {
			// The collector may still hold a file: detach so the test directory can go.
			if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmount tmpfs %s: %v", mnt, err)
			}
		}
	})
	return mnt
}

// remountTmpfs switches the tmpfs read-only or back to read-write.
func remountTmpfs(t *testing.T, mnt string, readOnly bool, sizeKB int) {
	t.Helper()
	flags := uintptr(syscall.MS_REMOUNT | syscall.MS_NOSUID | syscall.MS_NODEV)
	if readOnly {
		flags |= syscall.MS_RDONLY
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", flags, fmt.Sprintf("size=%dk,mode=0700", sizeKB)); err != nil {
		t.Fatalf("remount tmpfs %s (read-only %v): %v", mnt, readOnly, err)
	}
}

// fillFilesystem writes a file under dir until the filesystem is full and returns its path.
func fillFilesystem(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatalf("create filler: %v", err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for range 1 << 20 {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return path
			}
			t.Fatalf("fill filesystem: %v", err)
		}
	}
	t.Fatalf("filesystem under %s never filled up", dir)
	return ""
}

// withoutTrace drops the records of the given traces (canaries the truth does not know).
func withoutTrace(records []stormrecord.Record, traceIDs ...string) []stormrecord.Record {
	var out []stormrecord.Record
	for _, r := range records {
		if !slices.Contains(traceIDs, r.TraceID) {
			out = append(out, r)
		}
	}
	return out
}

// waitForRecord polls the summary file until it holds a record of the trace.
func waitForRecord(t *testing.T, p *collectorProcess, path, traceID string, timeout time.Duration) []stormrecord.Record {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if recs := readSummaryFile(t, path).recordsOf(traceID); len(recs) > 0 {
			return recs
		}
		p.alive(t)
		if time.Now().After(deadline) {
			t.Fatalf("no summary record of trace %s after %s", traceID, timeout)
		}
		time.Sleep(pollInterval)
	}
}

// request copies spans [from, to) of the trace, with its resource and scope, into a
// request of their own.
func (b *spanBuilder) request(from, to int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	b.td.ResourceSpans().At(0).Resource().CopyTo(rs.Resource())
	ss := rs.ScopeSpans().AppendEmpty()
	b.td.ResourceSpans().At(0).ScopeSpans().At(0).Scope().CopyTo(ss.Scope())
	for i := from; i < to; i++ {
		b.spans.At(i).CopyTo(ss.Spans().AppendEmpty())
	}
	return td
}

// waitBackendHas waits until the sink holds every span of every trace a correct
// retry_storm keeps: the signal traces and the clean traces the threshold passes.
func waitBackendHas(t *testing.T, sink *consumertest.TracesSink, truth []agenttraffic.Truth, th sampling.Threshold) {
	t.Helper()
	want := map[string]int{}
	for _, tr := range truth {
		if tr.Keep || keepsClean(t, th, tr.TraceID) {
			want[tr.TraceID] = tr.Spans
		}
	}
	deadline := time.Now().Add(settleTimeout)
	for {
		perTrace, _ := spanCounts(sink)
		incomplete := 0
		for id, n := range want {
			if perTrace[id] < n {
				incomplete++
			}
		}
		if incomplete == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d kept traces still incomplete in the backend after %s", incomplete, len(want), settleTimeout)
		}
		time.Sleep(pollInterval)
	}
}

// waitBackendDrained waits until the OTLP exporter has sent (or given up) every span
// retry_storm forwarded, and every late-finding span it made (counted apart, in
// late_findings: a stale read decided before the trace it copied), so the backend holds
// all that it will get.
func waitBackendDrained(t *testing.T, p *collectorProcess, port int) metrics {
	t.Helper()
	backend := map[string]string{"exporter": "otlp_grpc/backend"}
	return waitMetrics(t, p, port, settleTimeout, "the backend exporter drained", func(m metrics) bool {
		out := m.sum(metricSentSpans, backend) + m.sum(metricSendFailed, backend)
		made := m.sum(metricSpansForwarded, nil) + m.sum(metricLateFindings, map[string]string{"outcome": "forwarded"})
		return out == made && m.sum(metricQueueSize, backend) == 0
	})
}

// oneShot is a collector started for a few hand-built traces.
type oneShot struct {
	cfg    relConfig
	p      *collectorProcess
	client *otlpClient
	sink   *consumertest.TracesSink
}

// startOneShot starts a collector (configured by adjust) with a 64 MiB backend.
func startOneShot(t *testing.T, adjust func(*relConfig)) *oneShot {
	t.Helper()
	dir := t.TempDir()
	cfg := newRelConfig(t, dir)
	cfg.DecisionWait, cfg.RootGrace = "3s", "200ms"
	if adjust != nil {
		adjust(&cfg)
	}
	s := &oneShot{cfg: cfg}
	if !cfg.NoBackend {
		s.sink = &startFaultyBackend(t, cfg.BackendPort).sink
	}
	s.p = startCollectorEnv(t, cfg.write(t, dir, "collector.yaml"), filepath.Join(dir, "collector.log"))
	s.p.waitListening(t, cfg.OTLPPort)
	s.client = dialOTLP(t, cfg.OTLPPort)
	return s
}

// send exports the requests and waits until retry_storm has decided every span sent so
// far and the backend exporter has drained.
func (s *oneShot) send(t *testing.T, requests ...ptrace.Traces) metrics {
	t.Helper()
	m, err := scrape(s.cfg.MetricsPort)
	if err != nil {
		t.Fatalf("scrape before sending: %v", err)
	}
	spans := int(m.sum(metricSpansReceived, nil))
	for _, td := range requests {
		spans += td.SpanCount()
		s.client.mustExport(t, td)
	}
	m = waitSettled(t, s.p, s.cfg.MetricsPort, spans)
	if !s.cfg.NoBackend {
		m = waitBackendDrained(t, s.p, s.cfg.MetricsPort)
	}
	return m
}

// appendRoot adds the invoke_agent root with a chosen id as the trace's last span.
func appendRoot(b *spanBuilder, id pcommon.SpanID) {
	s := b.spans.AppendEmpty()
	s.SetTraceID(b.id)
	s.SetSpanID(id)
	s.SetName("invoke_agent checkout")
	s.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(b.base))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(b.base.Add(2 * time.Second)))
}
