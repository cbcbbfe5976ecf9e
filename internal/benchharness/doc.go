// Package benchharness measures retry_storm side by side with the collector's tail_sampling
// processor and with a floor (a consumer that reads every span and attribute once) on the
// same pre-generated agent traffic, in one process: CPU, allocations and heap per span,
// decision latency, cost against the number of buffered spans, and the speed-up from one to
// two cores. cmd/stormbench is its command line.
package benchharness // import "github.com/retrystorm/retrystorm/internal/benchharness"
