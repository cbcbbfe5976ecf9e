"""Shared helpers: OTLP/JSON building, logfire JSON-schema emulation, id/time sources."""
from __future__ import annotations

import datetime as dt
import json
import random
from typing import Any


def lj(obj: Any) -> str:
    """logfire_json_dumps / pydantic_core.to_json: compact, non-ASCII kept."""
    return json.dumps(to_plain(obj), separators=(",", ":"), ensure_ascii=False)


def pj(obj: Any) -> str:
    """Python json.dumps defaults (", " / ": "), ensure_ascii=False (safe_json_dumps, _json_dumps)."""
    return json.dumps(to_plain(obj), ensure_ascii=False)


def pj_ascii(obj: Any) -> str:
    """Plain json.dumps(obj) (ensure_ascii=True), as a tool's own `return json.dumps(...)`."""
    return json.dumps(to_plain(obj))


class M:
    """A pydantic model / dataclass value: dumps to its fields, logfire schema names its class."""

    def __init__(self, title: str, datatype: str, fields: dict[str, Any]):
        self.title = title
        self.datatype = datatype
        self.fields = fields


def to_plain(obj: Any) -> Any:
    if isinstance(obj, M):
        return {k: to_plain(v) for k, v in obj.fields.items()}
    if isinstance(obj, dict):
        return {k: to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    return obj


PLAIN = ({}, {"type": "object"}, {"type": "array"}, {"type": "null"})


def _props(d: dict[str, Any]) -> dict:
    out = {}
    for k, v in d.items():
        s = schema(v)
        if s not in PLAIN:
            out[k] = s
    return {"properties": out} if out else {}


def schema(v: Any) -> dict:
    """logfire/_internal/json_schema.py create_json_schema, for the value kinds used here."""
    if v is None:
        return {"type": "null"}
    if isinstance(v, (str, int, float, bool)):
        return {}
    if isinstance(v, M):
        return {"type": "object", "title": v.title, "x-python-datatype": v.datatype, **_props(v.fields)}
    if isinstance(v, dict):
        s: dict = {"type": "object"}
        if len(v) <= 10:
            s.update(_props(v))
        else:
            schemas = [schema(x) for x in v.values()]
            if all(x == schemas[0] for x in schemas) and schemas[0] not in PLAIN:
                s["additionalProperties"] = schemas[0]
            else:
                s.update(_props(v))
        return s
    if isinstance(v, (list, tuple)):
        s = {"type": "array"}
        if isinstance(v, tuple):
            s["x-python-datatype"] = "tuple"
        if not v:
            return s
        items = [schema(x) for x in v]
        if any(x not in PLAIN for x in items):
            if all(x == items[-1] for x in items):
                s["items"] = items[-1]
            else:
                s["prefixItems"] = items
        return s
    raise TypeError(type(v))


def json_schema_attr(user_attrs: dict[str, Any]) -> str:
    return lj({"type": "object", "properties": {k: schema(v) for k, v in user_attrs.items()}})


def otlp_value(v: Any) -> dict:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": v}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [otlp_value(x) for x in v]}}
    raise TypeError(f"not an OTel attribute value: {type(v)} {v!r}")


def otlp_attrs(pairs) -> list:
    if isinstance(pairs, dict):
        pairs = list(pairs.items())
    return [{"key": k, "value": otlp_value(v)} for k, v in pairs]


class Ids:
    def __init__(self, seed: str):
        self.r = random.Random(seed)

    def hex(self, n: int) -> str:
        return "".join(self.r.choice("0123456789abcdef") for _ in range(n))

    def trace(self) -> str:
        return self.hex(32)

    def span(self) -> str:
        return self.hex(16)

    def uuid(self) -> str:
        h = self.hex(32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"

    def alnum(self, n: int) -> str:
        return "".join(self.r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") for _ in range(n))


class Clock:
    """Monotonic wall clock in unix nanoseconds with sub-microsecond noise (time.time_ns())."""

    def __init__(self, start_s: int, seed: str):
        self.ns = start_s * 1_000_000_000 + 137_000
        self.r = random.Random("clock" + seed)

    def adv(self, ms: float) -> int:
        self.ns += int(ms * 1_000_000) + self.r.randint(1, 999)
        return self.ns

    def now(self) -> int:
        return self.ns

    def us(self, ms: float) -> int:
        """Advance, then return a microsecond-precision time converted as
        `int(datetime.timestamp() * 1_000_000_000)` (float math, as OpenInference does)."""
        self.adv(ms)
        micros = self.ns // 1000
        d = dt.datetime.fromtimestamp(micros // 1_000_000, dt.timezone.utc).replace(microsecond=micros % 1_000_000)
        self.ns = micros * 1000 + 999  # keep monotonic past this instant
        return int(d.timestamp() * 1_000_000_000)


class Span:
    def __init__(self, trace_id: str, span_id: str, parent: str | None, name: str, scope: str,
                 start: int, kind: int = 1, remote_parent: bool = False):
        self.trace_id = trace_id
        self.span_id = span_id
        self.parent = parent
        self.name = name
        self.scope = scope
        self.start = start
        self.end = start
        self.kind = kind
        self.remote_parent = remote_parent
        self.attrs: list = []
        self.events: list = []
        self.status: dict = {}

    def set(self, key: str, value: Any) -> None:
        for i, (k, _) in enumerate(self.attrs):
            if k == key:
                self.attrs[i] = (key, value)
                return
        self.attrs.append((key, value))

    def to_otlp(self) -> dict:
        d: dict[str, Any] = {
            "traceId": self.trace_id,
            "spanId": self.span_id,
        }
        if self.parent:
            d["parentSpanId"] = self.parent
        d["flags"] = 768 if self.remote_parent else 256
        d["name"] = self.name
        d["kind"] = self.kind
        d["startTimeUnixNano"] = str(self.start)
        d["endTimeUnixNano"] = str(self.end)
        d["attributes"] = otlp_attrs(self.attrs)
        if self.events:
            d["events"] = [
                {"timeUnixNano": str(t), "name": n, "attributes": otlp_attrs(a)} for (t, n, a) in self.events
            ]
        d["status"] = self.status
        return d


def export_request(resource_attrs: list, scopes: dict[str, str], spans: list[Span]) -> dict:
    """One ExportTraceServiceRequest as the Python OTLP exporter encodes a batch: spans in
    end order, grouped by scope in order of first appearance."""
    ordered = sorted(spans, key=lambda s: s.end)
    by_scope: dict[str, list] = {}
    for s in ordered:
        by_scope.setdefault(s.scope, []).append(s.to_otlp())
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": otlp_attrs(resource_attrs)},
                "scopeSpans": [
                    {"scope": {"name": name, "version": scopes[name]}, "spans": sp} for name, sp in by_scope.items()
                ],
            }
        ]
    }


def raw_values_of(tools: list[dict], extra: list[str] = ()) -> list[str]:
    out: list[str] = []

    def add(s: str) -> None:
        if len(s) >= 8 and s not in out:
            out.append(s)

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, bool) or v is None:
            return
        elif isinstance(v, (int, float)):
            add(str(v))
        elif isinstance(v, str):
            add(v)
            st = v.strip()
            if st.startswith("{") and st.endswith("}"):
                try:
                    walk(json.loads(st))
                except ValueError:
                    pass

    for t in tools:
        walk(t["arguments"])
        if "result" in t:
            walk(t["result"])
        if "error" in t:
            add(t["error"])
    for e in extra:
        add(e)
    return out
