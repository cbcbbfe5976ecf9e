#!/usr/bin/env python3
"""Retry storm scanner for agent tool traces.

Example only. Not production telemetry.
"""
from __future__ import annotations

import hashlib
import json
import sys
from collections import defaultdict
from typing import Any, Iterator

REQUIRED = (
    "run_id",
    "span_id",
    "attempt",
    "tool_name",
    "args_hash",
    "status",
    "t_start",
    "t_end",
)


def iter_events(stream) -> Iterator[dict[str, Any]]:
    for line_no, raw in enumerate(stream, 1):
        raw = raw.strip()
        if not raw:
            continue
        try:
            event = json.loads(raw)
        except json.JSONDecodeError as exc:
            print(f"skip line {line_no}: {exc}", file=sys.stderr)
            continue
        yield event


def completeness(event: dict[str, Any]) -> float:
    present = sum(
        1 for key in REQUIRED if key in event and event[key] not in (None, "")
    )
    return present / len(REQUIRED)


def canonical_args_hash(args: Any) -> str:
    blob = json.dumps(args, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


def scan(events: Iterator[dict[str, Any]], storm_threshold: int = 2) -> dict[str, Any]:
    by_span: dict[str, list[dict[str, Any]]] = defaultdict(list)
    incomplete = 0
    total = 0
    for event in events:
        if event.get("event") != "tool_attempt":
            continue
        total += 1
        if completeness(event) < 1.0:
            incomplete += 1
            continue
        by_span[str(event["span_id"])].append(event)

    storms = []
    flips = []
    for span_id, attempts in by_span.items():
        attempts.sort(key=lambda row: int(row["attempt"]))
        n = len(attempts)
        statuses = [row["status"] for row in attempts]
        hashes = {row["args_hash"] for row in attempts}
        first = attempts[0]
        last = attempts[-1]
        if n >= storm_threshold:
            storms.append(
                {
                    "span_id": span_id,
                    "run_id": first["run_id"],
                    "tool_name": first["tool_name"],
                    "attempts": n,
                    "statuses": statuses,
                    "unique_args": len(hashes),
                    "ms": int(last["t_end"]) - int(first["t_start"]),
                    "idem_hash": first.get("idem_hash"),
                }
            )
        if len(set(statuses)) > 1:
            flips.append(span_id)

    storms.sort(key=lambda row: row["attempts"], reverse=True)
    return {
        "tool_events": total,
        "incomplete_events": incomplete,
        "spans": len(by_span),
        "storm_spans": len(storms),
        "status_flip_spans": len(flips),
        "top_storms": storms[:20],
    }


def main() -> None:
    report = scan(iter_events(sys.stdin))
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
