#!/usr/bin/env bash
# The retrystorm demo behind `make run` (which builds the collector first): starts
# _build/otelcol-retrystorm with config/demo.yaml, sends about 20 seconds of agent traffic
# with agentsim (every scenario once, then the realistic mix), stops the collector with
# SIGTERM so retry_storm decides and flushes the traces it still holds, and prints the
# stormreport summary of the storm and finding records the collector wrote. Its last line
# holds those records to agentsim's ground truth: storms and findings injected against
# recorded, per kind, and where they differ.
#
# Needs only Go and make. Every port is on 127.0.0.1: OTLP 4317 (gRPC) and 4318 (HTTP),
# collector metrics 8888, as config/demo.yaml says; the demo refuses to start when one is
# taken.
#
# Environment (defaults in parentheses):
#   DEMO_DURATION  how long agentsim sends (20s)
#   DEMO_RATE      traces per second (10)
#   DEMO_SEED      agentsim's random seed: one seed, one run (1)
#
# Ctrl-C while agentsim sends ends the traffic early; the demo still stops the collector
# gracefully and reports what was recorded.
#
# Writes to _run/ (git-ignored; the previous run's files are replaced):
#   storms.jsonl     storm summary and finding records (the storm_summary exporter)
#   storms.html      the stormreport page: totals and a timeline per storm
#   truth.jsonl      agentsim's ground truth, one line per trace
#   agentsim.txt     agentsim's report: what it injected
#   collector.log    the collector's log (the debug exporter prints one line per batch)
#   bin/             agentsim and stormreport, built by this script
set -euo pipefail

cd "$(dirname "$0")/.."

GO=${GO:-go}
RUN=_run
COLLECTOR=_build/otelcol-retrystorm
CONFIG=config/demo.yaml
DURATION=${DEMO_DURATION:-20s}
RATE=${DEMO_RATE:-10}
SEED=${DEMO_SEED:-1}
OTLP_PORT=4317
DEMO_PORTS=(4317 4318 8888)
READY_SECONDS=30 # bound on the collector's start
STOP_SECONDS=60  # bound on its shutdown after SIGTERM

collector_pid=""
collector_started=""

say() { printf '==> %s\n' "$*"; }

fail() {
	printf 'run-demo: %s\n' "$*" >&2
	exit 1
}

# listening reports whether something accepts TCP connections on 127.0.0.1:$1.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# stop_collector sends SIGTERM and waits, at most STOP_SECONDS, for the collector to exit;
# it kills it after that. It prints nothing and returns the collector's exit status (137
# when it had to be killed).
stop_collector() {
	local pid=$collector_pid status=0
	[ -n "$pid" ] || return 0
	collector_pid=""
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < STOP_SECONDS * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		return 137
	fi
	wait "$pid" || status=$?
	return "$status"
}

# On any exit: never leave the collector running, and show why a failed run failed.
on_exit() {
	local status=$?
	stop_collector || true
	if [ "$status" -ne 0 ] && [ -n "$collector_started" ] && [ -s "$RUN/collector.log" ]; then
		printf '\nlast lines of %s:\n' "$RUN/collector.log" >&2
		tail -n 20 "$RUN/collector.log" >&2
	fi
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[ -x "$COLLECTOR" ] || fail "$COLLECTOR is missing: run make run (it builds the collector first)"
for port in "${DEMO_PORTS[@]}"; do
	if listening "$port"; then
		fail "127.0.0.1:$port is in use; $CONFIG needs ports ${DEMO_PORTS[*]}: stop what listens there"
	fi
done

say "building agentsim and stormreport into $RUN/bin"
# The storm records reveal tool names and argument hashes: keep _run/ private, as the
# exporter would had it created the directory itself.
mkdir -p "$RUN"
chmod 700 "$RUN"
mkdir -p "$RUN/bin"
"$GO" build -o "$RUN/bin/" ./cmd/agentsim ./cmd/stormreport
rm -f "$RUN"/storms.jsonl "$RUN"/storms-*.jsonl "$RUN"/storms-*.jsonl.gz "$RUN/storms.html" \
	"$RUN/truth.jsonl" "$RUN/agentsim.txt" "$RUN/collector.log"

say "starting $COLLECTOR --config $CONFIG (log: $RUN/collector.log)"
"$COLLECTOR" --config "$CONFIG" >"$RUN/collector.log" 2>&1 &
collector_pid=$!
collector_started=1
for ((i = 0; ; i++)); do
	listening "$OTLP_PORT" && break
	kill -0 "$collector_pid" 2>/dev/null || fail "the collector exited during start"
	[ "$i" -lt $((READY_SECONDS * 10)) ] || fail "the collector is not listening on 127.0.0.1:$OTLP_PORT after ${READY_SECONDS}s"
	sleep 0.1
done

say "agentsim: $DURATION of agent traffic at $RATE traces/s, every scenario once, seed $SEED"
if ! "$RUN/bin/agentsim" --endpoint "127.0.0.1:$OTLP_PORT" --duration "$DURATION" --rate "$RATE" \
	--every-scenario --seed "$SEED" --truth "$RUN/truth.jsonl" >"$RUN/agentsim.txt"; then
	fail "agentsim did not deliver its traffic to the collector (its report: $RUN/agentsim.txt)"
fi
echo
echo "What agentsim injected (ground truth; per-trace list in $RUN/agentsim.txt):"
sed -n '/^scenario /,$p' "$RUN/agentsim.txt"

say "stopping the collector (SIGTERM): retry_storm decides and flushes what it still holds"
stop_status=0
stop_collector || stop_status=$?
case "$stop_status" in
0) ;;
137) fail "the collector did not exit within ${STOP_SECONDS}s of SIGTERM and was killed" ;;
*) fail "the collector exited with status $stop_status" ;;
esac

[ -s "$RUN/storms.jsonl" ] || fail "the collector wrote no storm records to $RUN/storms.jsonl"

echo
echo "Records:         $RUN/storms.jsonl ($(wc -l <"$RUN/storms.jsonl") lines)"
echo "Report page:     $RUN/storms.html (open it in a browser)"
echo "Ground truth:    $RUN/truth.jsonl"
echo "Collector log:   $RUN/collector.log"
echo
say "stormreport --truth $RUN/truth.jsonl $RUN/storms.jsonl"
echo
# The report ends with the line holding the records to the ground truth printed above.
"$RUN/bin/stormreport" --html "$RUN/storms.html" --truth "$RUN/truth.jsonl" "$RUN/storms.jsonl"
