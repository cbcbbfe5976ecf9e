package verdict // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/held"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/loglimit"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
)

// Config is what the verdicts are built from: each stage's block, the key read at start,
// and the mode.
type Config struct {
	Stages
	// Key is the HMAC-SHA256 key of the payload hashes, read at start (nil: plain SHA-256).
	Key []byte
	// Released: the traces were sampled before (`buffering: false`); the policy keeps
	// every one, and their tracestate is not stamped.
	Released bool
	// Memory, when set, is a result memory made elsewhere — the one the retry_storm
	// sampling policy fills with every trace it assesses — used instead of one of
	// divergence.stale_cache.remembered_results results, so a stale read is found against
	// traces the sampler dropped. Suspects are held in it as divergence.stale_cache says.
	Memory *stalecache.Memory
}

// Shared is what every shard's Verdict shares.
type Shared struct {
	Policy *sample.Policy
	// Memory is the result memory behind the stale-cache check and Held the suspects it
	// holds (both nil: the check is off).
	Memory findings.ResultMemory
	Held   *stalecache.Memory
	Tel    *Telemetry
	Logger *zap.Logger
	// LateLog limits the late-signal log lines of every shard together.
	LateLog *loglimit.Limiter
	// MaxTraceBytes is the store's bound on one trace: calls held back across a
	// provisional decision take at most a quarter of it (holdback.go).
	MaxTraceBytes int64
}

// lateSignalLogEvery is the least time between two late-signal log lines across shards.
const lateSignalLogEvery = time.Second

// Verdicts makes each shard's Verdict (held.Verdicts) and holds what they share.
type Verdicts struct {
	cfg    Config
	shared Shared
}

var (
	_ held.Verdicts[Notes, Kept] = (*Verdicts)(nil)
	_ held.Verdict[Notes, Kept]  = (*Verdict)(nil)
)

// NewVerdicts builds the sampling policy and the verdict's metrics on tb, the builder the
// store records on too.
func NewVerdicts(cfg Config, tb *metadata.TelemetryBuilder, logger *zap.Logger) (*Verdicts, error) {
	rates := cfg.Sampling
	if cfg.Released {
		// Released traces were sampled already: every one is kept, at no threshold.
		rates = sample.DefaultConfig()
		rates.CleanPercent, rates.Tools = 100, nil
	}
	policy, err := sample.NewPolicy(rates)
	if err != nil {
		return nil, fmt.Errorf("build sampling policy: %w", err)
	}
	return &Verdicts{cfg: cfg, shared: Shared{
		Policy: policy, Tel: NewTelemetry(tb), Logger: logger, LateLog: loglimit.New(lateSignalLogEvery),
	}}, nil
}

// UseMemory makes the shards share m as their result memory (Config.Memory); it is
// called before Start.
func (vs *Verdicts) UseMemory(m *stalecache.Memory) { vs.cfg.Memory = m }

// Start makes the stale-cache memory the shards share (its suspects held on now's clock),
// takes the HMAC key and the store's per-trace bound, and registers the observable
// counters.
func (vs *Verdicts) Start(key []byte, now func() time.Time, maxTraceBytes int64) error {
	vs.cfg.Key = key
	vs.shared.MaxTraceBytes = maxTraceBytes
	sc := vs.cfg.Divergence.StaleCache
	held := vs.cfg.Memory
	if held == nil {
		held = stalecache.NewMemory(sc, now)
	} else {
		held.HoldSuspects(sc, now)
	}
	if held != nil {
		vs.shared.Held, vs.shared.Memory = held, held
	}
	if err := vs.shared.Tel.Register(); err != nil {
		return fmt.Errorf("register retry_storm observable counters: %w", err)
	}
	return nil
}

// ClientInputs are the attributes under retry_storm's namespace the analysis reads from
// clients' spans.
func (vs *Verdicts) ClientInputs() []string { return vs.cfg.ClientInputs() }

// Shard makes one shard's Verdict.
func (vs *Verdicts) Shard() held.Verdict[Notes, Kept] { return New(vs.cfg, vs.shared) }
