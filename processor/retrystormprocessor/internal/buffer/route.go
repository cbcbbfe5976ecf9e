package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"encoding/binary"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/inbound"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/spanset"
)

// route cuts td into one piece per trace and groups the pieces by owning shard, with the
// client annotations in taken out and counted in c. The pieces hold td's spans (the
// processor declares MutatesData, so td is its own).
func route(td ptrace.Traces, shards int, in *inbound.Filter, c *inbound.Counts) [][]spanset.Piece {
	out := make([][]spanset.Piece, shards)
	for _, pc := range spanset.Split(td, in, c) {
		i := shardOf(pc.ID, shards)
		out[i] = append(out[i], pc)
	}
	return out
}

// shardOf mixes both halves of the id, so ids with a constant half still spread.
func shardOf(id pcommon.TraceID, shards int) int {
	h := binary.LittleEndian.Uint64(id[:8]) ^ binary.LittleEndian.Uint64(id[8:])
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return int(h % uint64(shards))
}
