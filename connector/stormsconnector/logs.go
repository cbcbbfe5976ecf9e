package stormsconnector // import "github.com/retrystorm/retrystorm/connector/stormsconnector"

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/connector/stormsconnector/internal/metadata"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/tracespans"
)

// Log record attributes: the record's index fields (README, "Records").
const (
	attrSchema   = "retrystorm.record.schema"
	attrID       = "retrystorm.record.id"
	attrRevision = "retrystorm.record.revision"
	attrPartial  = "retrystorm.record.partial"
	// Event names of the log records.
	eventStorm   = "retrystorm.storm"
	eventFinding = "retrystorm.finding"
)

// stormRecords turns each selected call summary and finding record on the spans it
// receives into one log record whose body is the JSON record.
type stormRecords struct {
	cfg       LogsConfig
	next      consumer.Logs
	logger    *zap.Logger
	malformed func(context.Context, int64)
	seal      *sealCheck
}

func (r *stormRecords) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func (r *stormRecords) Start(context.Context, component.Host) error { return nil }
func (r *stormRecords) Shutdown(context.Context) error              { return nil }

// ConsumeTraces sends the records of td's spans, one resource per service.
func (r *stormRecords) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	ld := plog.NewLogs()
	scopes := map[string]plog.LogRecordSlice{}
	out := func(service *string) plog.LogRecordSlice {
		name := ""
		if service != nil {
			name = *service
		}
		if s, ok := scopes[name]; ok {
			return s
		}
		rl := ld.ResourceLogs().AppendEmpty()
		if service != nil {
			rl.Resource().Attributes().PutStr("service.name", name)
		}
		sl := rl.ScopeLogs().AppendEmpty()
		sl.Scope().SetName(metadata.ScopeName)
		scopes[name] = sl.LogRecords()
		return scopes[name]
	}
	malformed, unsealed := 0, 0
	now := pcommon.NewTimestampFromTime(time.Now())
	check := r.seal.forCall()
	for _, span := range tracespans.All(td) {
		attrs := span.Attributes()
		if !check.admits(span) {
			unsealed++
			continue
		}
		if v, ok := attrs.Get(stormrecord.AttrCallSummary); ok {
			record, err := stormrecord.ParseCallSummary(v, span)
			if err != nil {
				malformed++
				r.logger.Debug("skip a malformed call summary", zap.Error(err))
			} else if r.selected(&record) {
				lr := out(record.ServiceName).AppendEmpty()
				fill(lr, span, now, &record, record.Schema, record.ID, record.Revision, record.Partial)
				a := lr.Attributes()
				a.PutStr(stormrecord.AttrCallKey, record.CallKey)
				a.PutStr(stormrecord.AttrCallTool, record.ToolName)
				a.PutBool(stormrecord.AttrCallStorm, record.Storm)
				if record.Class != nil {
					a.PutStr(stormrecord.AttrCallClass, *record.Class)
				}
				lr.SetEventName(eventStorm)
				if record.Failed() {
					lr.SetSeverityNumber(plog.SeverityNumberError)
				}
			}
		}
		if v, ok := attrs.Get(stormrecord.AttrFindingSummary); ok {
			record, err := stormrecord.ParseFindingRecord(v, span)
			if err != nil {
				malformed++
				r.logger.Debug("skip a malformed finding record", zap.Error(err))
			} else if r.cfg.includes(includeFinding) && len(record.Findings) > 0 {
				lr := out(record.ServiceName).AppendEmpty()
				fill(lr, span, now, &record, record.Schema, record.ID, record.Revision, record.Partial)
				lr.SetEventName(eventFinding)
			}
		}
	}
	if malformed > 0 {
		r.malformed(ctx, int64(malformed))
	}
	r.seal.skipped(ctx, r.logger, unsealed)
	if ld.LogRecordCount() == 0 {
		return nil
	}
	return r.next.ConsumeLogs(ctx, ld)
}

// fill writes what every record's log record has: the JSON body, the trace context, the
// time the span ended and the index fields.
func fill(lr plog.LogRecord, span ptrace.Span, now pcommon.Timestamp, record any, schema, id string, revision int, partial bool) {
	body, err := json.Marshal(record)
	if err != nil { // a decoded record always encodes; keep the id if it ever does not
		body = []byte(`{"id":"` + id + `"}`)
	}
	lr.Body().SetStr(string(body))
	lr.SetTimestamp(span.EndTimestamp())
	lr.SetObservedTimestamp(now)
	lr.SetTraceID(span.TraceID())
	lr.SetSpanID(span.SpanID())
	lr.SetSeverityNumber(plog.SeverityNumberWarn)
	a := lr.Attributes()
	a.PutStr(attrSchema, schema)
	a.PutStr(attrID, id)
	a.PutInt(attrRevision, int64(revision))
	if partial {
		a.PutBool(attrPartial, true)
	}
}

// selected applies include as the storm_summary exporter does: storm, failure (a failed
// call that is not a storm), finding.
func (r *stormRecords) selected(record *stormrecord.Record) bool {
	return (r.cfg.includes(includeStorm) && record.Storm) ||
		(r.cfg.includes(includeFailure) && !record.Storm && record.Failed()) ||
		(r.cfg.includes(includeFinding) && len(record.Findings) > 0)
}
