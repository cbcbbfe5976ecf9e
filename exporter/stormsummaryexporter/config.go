package stormsummaryexporter // import "github.com/retrystorm/retrystorm/exporter/stormsummaryexporter"

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

// Values of the include key.
const (
	includeStorm   = "storm"
	includeFailure = "failure"
	includeFinding = "finding"
)

// Placeholders a trace_url template may use.
const (
	placeholderTraceID = "{trace_id}"
	placeholderCallKey = "{call_key}"
	placeholderRunID   = "{run_id}"
)

var placeholderPattern = regexp.MustCompile(`\{[^{}]*\}`)

// Config is the configuration of the storm_summary exporter.
type Config struct {
	// TimeoutConfig bounds one attempt to append a batch (key timeout, default 5s).
	TimeoutConfig exporterhelper.TimeoutConfig `mapstructure:",squash"`
	// QueueConfig is the sending queue in front of the file (key sending_queue, default
	// enabled with 1000 requests).
	QueueConfig configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	// RetryConfig retries a failed append (key retry_on_failure, default enabled, 5s initial
	// interval, 5m max elapsed time).
	RetryConfig configretry.BackOffConfig `mapstructure:"retry_on_failure"`

	// Path is the JSONL summary file. Required, no default.
	Path string `mapstructure:"path"`
	// Include selects the records written: storm, failure (single-attempt failures),
	// finding (calls with findings, and the finding records of trace-level findings).
	// Default [storm].
	Include []string `mapstructure:"include"`
	// TraceURL is a link template filled into each record's trace_url, with the
	// placeholders {trace_id}, {call_key} and {run_id}. Default "" (no link).
	TraceURL string `mapstructure:"trace_url"`
	// Rotation rotates the summary file by size.
	Rotation RotationConfig `mapstructure:"rotation"`
	// Dedup bounds the memory of written record ids.
	Dedup DedupConfig `mapstructure:"dedup"`
	// AcceptUnsealed writes records no retry_storm processor of this collector sealed:
	// records another collector's retry_storm wrote, read back over OTLP by a collector
	// whose every sender is trusted (README, "Which records are read"). Default false.
	AcceptUnsealed bool `mapstructure:"accept_unsealed"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// RotationConfig configures size-based rotation of the summary file.
type RotationConfig struct {
	// MaxMegabytes is the size at which the file is rotated. Default 100.
	MaxMegabytes int `mapstructure:"max_megabytes"`
	// MaxBackups is the number of rotated files kept; 0 keeps them all. Default 10.
	MaxBackups int `mapstructure:"max_backups"`
	// Compress gzips rotated files. Default false.
	Compress bool `mapstructure:"compress"`
}

// DedupConfig bounds the memory that makes a record id written once.
type DedupConfig struct {
	// RememberedIDs is how many record ids are remembered (least recently written are
	// forgotten first). Default 100000.
	RememberedIDs int `mapstructure:"remembered_ids"`
	// PreloadBytes is how much of the end of the summary files is read at start to preload
	// the memory, so a re-export after a restart is not written twice. Default 4194304
	// (4 MiB). seed_bytes, its old name, is still read (deprecated).
	PreloadBytes int64 `mapstructure:"preload_bytes"`
}

// deprecatedPreloadBytesKey is the old name of dedup.preload_bytes, still read.
const deprecatedPreloadBytesKey = "seed_bytes"

// Unmarshal reads the dedup section, taking seed_bytes as preload_bytes so configurations
// written before the rename keep working.
func (d *DedupConfig) Unmarshal(conf *confmap.Conf) error {
	if conf.IsSet(deprecatedPreloadBytesKey) {
		if conf.IsSet("preload_bytes") {
			return errors.New("dedup.seed_bytes is the deprecated name of dedup.preload_bytes: give one of them")
		}
		m := conf.ToStringMap()
		m["preload_bytes"] = m[deprecatedPreloadBytesKey]
		delete(m, deprecatedPreloadBytesKey)
		conf = confmap.NewFromStringMap(m)
	}
	// plain has DedupConfig's fields without this method, so decoding does not recurse.
	type plain DedupConfig
	return conf.Unmarshal((*plain)(d))
}

var _ component.Config = (*Config)(nil)

// Validate checks the configuration without touching the file system.
func (cfg *Config) Validate() error {
	var errs error
	if strings.TrimSpace(cfg.Path) == "" {
		errs = errors.Join(errs, errors.New("path must be set"))
	}
	errs = errors.Join(errs, validateInclude(cfg.Include), validateTraceURL(cfg.TraceURL))
	if cfg.Rotation.MaxMegabytes <= 0 {
		errs = errors.Join(errs, errors.New("rotation.max_megabytes must be greater than 0"))
	}
	if cfg.Rotation.MaxBackups < 0 {
		errs = errors.Join(errs, errors.New("rotation.max_backups must not be negative"))
	}
	if cfg.Dedup.RememberedIDs <= 0 {
		errs = errors.Join(errs, errors.New("dedup.remembered_ids must be greater than 0"))
	}
	if cfg.Dedup.PreloadBytes < 0 {
		errs = errors.Join(errs, errors.New("dedup.preload_bytes must not be negative"))
	}
	return errs
}

func validateInclude(include []string) error {
	if len(include) == 0 {
		return errors.New("include must list at least one of storm, failure, finding")
	}
	var errs error
	for _, kind := range include {
		switch kind {
		case includeStorm, includeFailure, includeFinding:
		default:
			errs = errors.Join(errs, fmt.Errorf("include has unknown value %q (want storm, failure or finding)", kind))
		}
	}
	return errs
}

func validateTraceURL(template string) error {
	if template == "" {
		return nil
	}
	var errs error
	for _, placeholder := range placeholderPattern.FindAllString(template, -1) {
		switch placeholder {
		case placeholderTraceID, placeholderCallKey, placeholderRunID:
		default:
			errs = errors.Join(errs, fmt.Errorf("trace_url has unknown placeholder %s (want {trace_id}, {call_key} or {run_id})", placeholder))
		}
	}
	filled := placeholderPattern.ReplaceAllString(template, "x")
	parsed, err := url.Parse(filled)
	if err != nil {
		return errors.Join(errs, fmt.Errorf("trace_url is not a URL: %w", err))
	}
	if parsed.Scheme != "http" && parsed.Scheme != "https" {
		errs = errors.Join(errs, fmt.Errorf("trace_url must be an http or https URL, got scheme %q", parsed.Scheme))
	}
	return errs
}

func (cfg *Config) includes(kind string) bool {
	return slices.Contains(cfg.Include, kind)
}
