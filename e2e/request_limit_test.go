//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// requestLimit is the request size docs/reliability.md promises the shipped configs refuse
// above, on both OTLP protocols.
const requestLimit = 4 << 20

// TestShippedConfigsRefuseRequestsOver4MiB: each shipped config's OTLP receivers, as
// written (only their endpoints moved to free loopback ports), run in the built collector.
// On every protocol the config opens, a request 4 KiB under 4 MiB is taken and one 4 KiB
// over is refused: gRPC with RESOURCE_EXHAUSTED, HTTP with 400 "request body too large",
// also when the body is gzip-compressed to a few KiB (the bound is on what it decompresses
// to).
func TestShippedConfigsRefuseRequestsOver4MiB(t *testing.T) {
	var configs []string
	for _, pattern := range []string{"*.yaml", filepath.Join("two-tier", "*.yaml")} {
		found, err := filepath.Glob(filepath.Join(repoRoot, "config", pattern))
		if err != nil {
			t.Fatalf("list configs: %v", err)
		}
		configs = append(configs, found...)
	}
	if len(configs) < 7 {
		t.Fatalf("found %d shipped configs, want at least 7: %v", len(configs), configs)
	}
	under, over := sizedRequest(t, requestLimit-4<<10), sizedRequest(t, requestLimit+4<<10)
	for _, path := range configs {
		name, _ := filepath.Rel(filepath.Join(repoRoot, "config"), path)
		t.Run(name, func(t *testing.T) {
			grpcPorts, httpPorts := startShippedReceivers(t, path)
			for _, port := range grpcPorts {
				client := dialOTLP(t, port)
				if err := client.export(under); err != nil {
					t.Errorf("gRPC :%d: a request 4 KiB under 4 MiB: %v, want it taken", port, err)
				}
				if err := client.export(over); status.Code(err) != codes.ResourceExhausted {
					t.Errorf("gRPC :%d: a request 4 KiB over 4 MiB: %v, want RESOURCE_EXHAUSTED", port, err)
				}
			}
			for _, port := range httpPorts {
				if code, _ := postOTLP(t, port, under, false); code != http.StatusOK {
					t.Errorf("HTTP :%d: a request 4 KiB under 4 MiB: status %d, want 200", port, code)
				}
				for _, gz := range []bool{false, true} {
					code, body := postOTLP(t, port, over, gz)
					if code != http.StatusBadRequest || !strings.Contains(body, "request body too large") {
						t.Errorf("HTTP :%d (gzip %v): a request 4 KiB over 4 MiB: status %d %q, want 400 request body too large",
							port, gz, code, body)
					}
				}
			}
		})
	}
}

// startShippedReceivers starts the built collector with the OTLP receivers of the config
// at path, endpoints on free loopback ports, into a debug exporter, and returns the ports
// of their gRPC and HTTP servers.
func startShippedReceivers(t *testing.T, path string) (grpcPorts, httpPorts []int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var shipped struct {
		Receivers yamlMap `yaml:"receivers"`
	}
	if err := yaml.Unmarshal(raw, &shipped); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	receivers := yamlMap{}
	for name, r := range shipped.Receivers {
		if name != "otlp" && !strings.HasPrefix(name, "otlp/") {
			continue
		}
		protocols, _ := r.(yamlMap)["protocols"].(yamlMap)
		for proto, settings := range protocols {
			port := freePorts(t, 1)[0]
			if settings == nil { // "http:" alone: the protocol's defaults
				settings = yamlMap{}
				protocols[proto] = settings
			}
			settings.(yamlMap)["endpoint"] = loopback(port)
			switch proto {
			case "grpc":
				grpcPorts = append(grpcPorts, port)
			case "http":
				httpPorts = append(httpPorts, port)
			}
		}
		receivers[name] = r
	}
	if len(receivers) == 0 {
		t.Fatalf("%s has no OTLP receiver", path)
	}
	names := slices.Sorted(maps.Keys(receivers))
	cfg := collectorConfig{
		Receivers: receivers,
		Exporters: yamlMap{"debug": yamlMap{"verbosity": "basic"}},
		Service: serviceConfig{
			Telemetry: telemetry(freePorts(t, 1)[0], ""),
			Pipelines: map[string]pipeline{"traces": {Receivers: names, Exporters: []string{"debug"}}},
		},
	}
	ports := slices.Concat(grpcPorts, httpPorts)
	p := launchCollector(t, t.TempDir(), "limits", cfg, ports[0])
	for _, port := range ports[1:] {
		p.waitListening(t, port)
	}
	return grpcPorts, httpPorts
}

// sizedRequest is one span whose request encodes to size bytes of OTLP protobuf.
func sizedRequest(t *testing.T, size int) ptrace.Traces {
	t.Helper()
	td := ptrace.NewTraces()
	span := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetName("oversized")
	span.Attributes().PutStr("blob", "")
	m := &ptrace.ProtoMarshaler{}
	for range 3 { // the length prefix of the value grows with it
		blob := size - (m.TracesSize(td) - len(span.Attributes().AsRaw()["blob"].(string)))
		span.Attributes().PutStr("blob", strings.Repeat("z", blob))
	}
	if got := m.TracesSize(td); got != size {
		t.Fatalf("sized request of %d bytes encodes to %d", size, got)
	}
	return td
}

// postOTLP posts td as OTLP/HTTP protobuf to port, gzip-compressed when gz, and returns
// the status and the body of the answer.
func postOTLP(t *testing.T, port int, td ptrace.Traces, gz bool) (int, string) {
	t.Helper()
	body, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatalf("encode request: %v", err)
	}
	if gz {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		_ = zw.Close()
		body = b.Bytes()
	}
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://%s/v1/traces", loopback(port)), bytes.NewReader(body))
	if err != nil {
		t.Fatalf("build request: %v", err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	client := &http.Client{Timeout: sendTimeout}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("post %d bytes to :%d: %v", len(body), port, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}
