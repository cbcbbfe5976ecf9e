#!/usr/bin/env bash
# Re-run every capture. npm installs go to $WORK (default /tmp/capture), never into the repo.
# usage: bash run.sh [capture-name ...]      (default: all)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(cd "$HERE/.." && pwd)
WORK=${WORK:-/tmp/capture}
mkdir -p "$WORK/runs"

# name | sdk folder | script | args | env | folder under testdata/sdk (default: testdata/sdk itself)
# Captures in pending/ are not loaded by the Go capture tests (fixtures.CaptureNames): they
# show shapes the processor does not handle yet (see ../README.md, "Pending captures").
CAPTURES=(
  "vercel_ai_v7|vercel|vercel_ai_v7.mjs|otel batch|"
  "vercel_ai_v7_simple|vercel|vercel_ai_v7.mjs|otel simple|"
  "vercel_ai_v7_legacy|vercel|vercel_ai_v7.mjs|legacy batch|"
  "vercel_ai_v7_stream|vercel|vercel_ai_v7.mjs|otel batch stream|"
  "vercel_ai_v7_legacy_stream|vercel|vercel_ai_v7.mjs|legacy batch stream|"
  "mastra|mastra|mastra.mjs||"
  "langchain_openinference|langchain|langchain_openinference.mjs|batch|"
  "strands|strands|strands.mjs|batch|"
  "strands_latest|strands|strands.mjs|batch|OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental"
  "strands_hidden|strands|strands_scenarios.mjs|hidden|"
  "strands_recall|strands|strands_scenarios.mjs|recall|"
  "openai_agents_recall|openai_agents|openai_agents.mjs|recall|"
  "openai_agents_hidden|openai_agents|openai_agents.mjs|hidden|"
  "langchain_traceloop_retry|langchain_traceloop|langchain_traceloop.mjs|retry||"
  "langchain_traceloop_recall|langchain_traceloop|langchain_traceloop.mjs|recall||"
  "langchain_traceloop_hidden|langchain_traceloop|langchain_traceloop.mjs|hidden|"
  "langchain_openinference_turn_diff|langchain|langchain_openinference_turn.mjs|diff|"
  "langchain_openinference_turn_same|langchain|langchain_openinference_turn.mjs|same|"
  "strands_undici_retryagent|strands_http|strands_http.mjs|undici|"
  "strands_http_retryloop|strands_http|strands_http.mjs|retryloop|"
  "strands_unrecovered|strands|strands_scenarios.mjs|unrecovered|"
  "openai_agents_unrecovered|openai_agents|openai_agents.mjs|unrecovered|"
  "langchain_traceloop_unrecovered|langchain_traceloop|langchain_traceloop.mjs|unrecovered||"
  "langchain_openinference_unrecovered|langchain|langchain_openinference.mjs|unrecovered|"
  "openai_agents_recall_stream|openai_agents|openai_agents.mjs|recall stream|"
  "langchain_openinference_stream|langchain|langchain_openinference.mjs|batch stream|"
  "openai_agents_responses_recall|openai_agents|openai_agents.mjs|recall responses|"
  "mastra_stream|mastra|mastra.mjs|stream|"
  "strands_stream|strands|strands.mjs|batch stream|"
  "openllmetry_openai_recall|openllmetry_openai|openllmetry_openai.mjs|recall|"
  "langchain_openinference_chatopenai|langchain|langchain_openinference.mjs|batch chatopenai|"
  "vercel_ai_v7_mcp|vercel_mcp|vercel_ai_v7_mcp.mjs|batch|"
  "openai_agents_mcp|openai_agents_mcp|openai_agents_mcp.mjs|recall"
  "adk_recall|adk|adk.mjs|recall batch"
  "adk_mcp|adk|adk.mjs|mcp batch"
  "adk_retry|adk|adk.mjs|retry batch"
  "adk_simple|adk|adk.mjs|recall simple"
  "langgraph_retrypolicy|langgraph|langgraph_retrypolicy.mjs|plain"
  "langgraph_retrypolicy_mcp|langgraph|langgraph_retrypolicy.mjs|mcp"
  "genkit_recall|genkit|genkit_scenarios.mjs|recall"
  "genkit_retry|genkit|genkit_scenarios.mjs|retry"
  "genkit_mcp|genkit|genkit_scenarios.mjs|mcp"
  "voltagent_recall|voltagent|voltagent_scenarios.mjs|recall"
  "voltagent_mcp|voltagent|voltagent_scenarios.mjs|mcp"
)

declare -A INSTALLED=()
setup() {
  local sdk=$1
  [[ -n "${INSTALLED[$sdk]:-}" ]] && return
  mkdir -p "$WORK/$sdk"
  cp "$HERE/$sdk/"* "$HERE/receiver.mjs" "$WORK/$sdk/"
  (cd "$WORK/$sdk" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  INSTALLED[$sdk]=1
}

want=("$@")
for c in "${CAPTURES[@]}"; do
  IFS='|' read -r name sdk script args envs dest <<<"$c"
  dst="$OUT${dest:+/$dest}"
  if ((${#want[@]})) && [[ ! " ${want[*]} " == *" $name "* ]]; then continue; fi
  setup "$sdk"
  for run in 1 2; do
    echo "== $name run $run"
    # shellcheck disable=SC2086
    (cd "$WORK/$sdk" && env $envs node "$script" $args "$WORK/runs/$name.$run.jsonl" "$WORK/runs/$name.$run.truth.json")
    node "$HERE/analyze.mjs" "$WORK/runs/$name.$run.jsonl" "$WORK/runs/$name.$run.truth.json" --signature >"$WORK/runs/$name.$run.sig"
  done
  if diff -u "$WORK/runs/$name.1.sig" "$WORK/runs/$name.2.sig" >"$WORK/runs/$name.sig.diff"; then
    echo "   stable: span names/kinds/status/attribute keys/event names identical across 2 runs"
  else
    echo "   UNSTABLE between runs, see $WORK/runs/$name.sig.diff"
  fi
  mkdir -p "$dst"
  cp "$WORK/runs/$name.1.jsonl" "$dst/$name.jsonl"
  cp "$WORK/runs/$name.1.truth.json" "$dst/$name.truth.json"
  node "$HERE/analyze.mjs" "$dst/$name.jsonl" "$dst/$name.truth.json" >"$WORK/runs/$name.report.md"
  head -1 "$WORK/runs/$name.report.md"
done

# nothing may name this machine or a local path
if grep -l -e "$(hostname)" -e "$WORK" -e "$HOME/" "$OUT"/*.jsonl "$OUT"/*.truth.json "$OUT"/pending/* 2>/dev/null; then
  echo "ERROR: machine-specific strings found in the files above" >&2; exit 1
fi
node "$HERE/make_readme.mjs"
echo "reports: $WORK/runs/*.report.md"
