"""Compose the py_* fixtures (see testdata/sdk/upstream/py-logfire-openinference.md)."""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from common import raw_values_of  # noqa: E402
import lf  # noqa: E402
import oi_agents  # noqa: E402
import oi_langgraph  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.makedirs(OUT, exist_ok=True)


def order_tool(t: dict) -> dict:
    keys = ["tool", "call_id", "attempt", "arguments", "result", "failed"]
    return {k: t[k] for k in keys if k in t}


def write(name: str, requests: list, truth: dict) -> None:
    with open(os.path.join(OUT, name + ".jsonl"), "w") as f:
        for r in requests:
            f.write(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n")
    with open(os.path.join(OUT, name + ".truth.json"), "w") as f:
        json.dump(truth, f, indent=2, ensure_ascii=False)
        f.write("\n")


def call(tool, status, layer, hidden, span, call_id):
    return {"tool": tool, "attempts": 1, "attempt_statuses": [status], "retry_layer": layer,
            "failed_attempts_hidden": hidden, "span_names": [span], "call_ids": [call_id]}


# ---------------------------------------------------------------- 1. Logfire + OpenAI Agents
LF_OA = {
    "service": "checkout-agent-logfire",
    "order": 5821,
    "call_ids": ["call_pylfa_lookup_1", "call_pylfa_charge_1", "call_pylfa_charge_2"],
    "lookup_args": {"customer_id": "cus_pylfa_Qm7Rt2Vx", "email": "ingrid.solberg.pylfa@example.com"},
    "lookup_result": {"account_ref": "acct_pylfa_Ht5Wn8Kd", "full_name": "Ingrid Solberg PYLFA-Customer",
                      "phone": "+47-412-58-930", "default_card_token": "tok_pylfa_card_Bv61Xs"},
    "charge1_args": {"card_number": "4000415533954790", "email": "ingrid.solberg.pay.pylfa@example.com",
                     "amount_cents": 6240, "iban": "NO0618204128448"},
    "error": "card_declined: issuer declined card 4000415533954790 (decline ref dcl_pylfa_Rw83Jn)",
    "charge2_args": {"card_number": "5523654930695748", "email": "ingrid.solberg.backup.pylfa@example.com",
                     "amount_cents": 6240, "iban": "NO2577845990717"},
    "charge2_result": {"charge_id": "ch_pylfa_5KdPq8Wz", "receipt_email": "receipts+pylfa@example.org",
                       "last4_token": "tok_mc_pylfa_5748k3"},
}
LOGFIRE_COMMIT = "e484a6b53a0df3062d304ce258573e387cf3140a"
LOGFIRE_PKGS = {"logfire": "4.41.0", "openai-agents": "0.20.0", "openai": "2.54.0",
                "opentelemetry-sdk": "1.44.0", "opentelemetry-exporter-otlp-proto-http": "1.44.0",
                "pydantic": "2.13.4"}

reqs, tools, meta = lf.build("pylfa", False, LF_OA, 1796450400)
ids = LF_OA["call_ids"]
write("py_logfire_openai_agents_recall", reqs, {
    "sdk": ("reproduced from pydantic/logfire tests/otel_integrations/test_openai_agents.py "
            "(test_function_tool_exception, test_responses; simplify_spans/without_code_attrs) @ " + LOGFIRE_COMMIT
            + ": logfire.instrument_openai_agents(), Runner.run with the OpenAI Responses model, "
              "OTLP/HTTP exporter from OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (BatchSpanProcessor)"),
    "packages": LOGFIRE_PKGS,
    "tools": [order_tool(t) for t in tools],
    "raw_values": raw_values_of(tools),
    "expect": {
        "calls": [
            call("lookup_customer", "ok", None, False, "Function: {name}", ids[0]),
            call("charge_card", "error", None, False, "Function: {name}", ids[1]),
            call("charge_card", "ok", "agent", False, "Function: {name}", ids[2]),
        ],
        "agent_spans": [
            {"name": "Agent run: {name!r}", "marker": "logfire.msg_template=Agent run: {name!r} (name=checkout-agent)"},
            {"name": "OpenAI Agents trace: {name}", "marker": "the root (logfire.msg_template=OpenAI Agents trace: {name})"},
        ],
        "notes": (
            "charge_card raised CardDeclinedError; the Agents SDK caught it (non-fatal), set the function span's "
            "error {message: 'Error running tool (non-fatal)', data: {tool_name, error}} and gave the model the "
            "default failure text ('An error occurred while running the tool. Please try again. Error: ...'); the "
            "model called charge_card again with a new call id and changed arguments (backup card, email, IBAN). "
            "Logfire names spans after the message template: every tool span is literally 'Function: {name}' (the "
            "tool name is the `name` attribute, the rendered name only in logfire.msg 'Function: charge_card'). "
            "The failed Function span has logfire.level_num 17, the JSON attribute `error`, an exception event, "
            "logfire.msg '... failed: Error running tool (non-fatal)' and status ERROR without a message (logfire's "
            "MainSpanProcessorWrapper turns level error into status ERROR before any exporter). No call id on "
            "Function spans: call ids are only in the Responses spans (raw_input function_call / "
            "function_call_output items, `events` tool_calls ids and gen_ai.tool.message ids, `response` output)."
        ),
    },
    "note": ("tools return json.dumps(...) strings; call_id is the scripted Responses API function_call call_id; "
             "a failed attempt's result is the text it raised"),
})

# ---------------------------------------------------------------- 2. Logfire + MCP
LF_MCP = {
    "service": "checkout-agent-logfire-mcp",
    "order": 4417,
    "call_ids": ["call_pylfm_lookup_1", "call_pylfm_charge_1", "call_pylfm_charge_2"],
    "lookup_args": {"customer_id": "cus_pylfm_Zr4Hy7Cq", "email": "tomas.novak.pylfm@example.com"},
    "lookup_result": {"account_ref": "acct_pylfm_Dp2Xe9Lw", "full_name": "Tomas Novak PYLFM-Customer",
                      "phone": "+420-603-118-274", "default_card_token": "tok_pylfm_card_Nw47Gu"},
    "charge1_args": {"card_number": "4000558202286596", "email": "tomas.novak.pay.pylfm@example.com",
                     "amount_cents": 3890, "iban": "CZ6699272455676366738173"},
    "error": "card_declined: do not honor on card 4000558202286596 (decline ref dcl_pylfm_Kt52Vb)",
    "charge2_args": {"card_number": "5038930315145485", "email": "tomas.novak.backup.pylfm@example.com",
                     "amount_cents": 3890, "iban": "CZ5743821976928673313218"},
    "charge2_result": {"charge_id": "ch_pylfm_7QsLm3Xt", "receipt_email": "receipts+pylfm@example.org",
                       "last4_token": "tok_mae_pylfm_5485z8"},
}
reqs, tools, meta = lf.build("pylfm", True, LF_MCP, 1796454000)
ids = LF_MCP["call_ids"]
span_l = "MCP request: tools/call lookup_customer"
span_c = "MCP request: tools/call charge_card"
write("py_logfire_mcp_recall", reqs, {
    "sdk": ("reproduced from pydantic/logfire tests/otel_integrations/test_openai_agents_mcp.py (test_mcp; "
            "logfire.instrument_mcp() from tests/conftest.py) @ " + LOGFIRE_COMMIT
            + ": logfire.instrument_openai_agents() + logfire.instrument_mcp(), an in-process FastMCP server "
              "over memory streams as the agent's MCP server, OTLP/HTTP exporter (BatchSpanProcessor)"),
    "packages": {**LOGFIRE_PKGS, "mcp": "1.29.0"},
    "tools": [order_tool(t) for t in tools],
    "raw_values": raw_values_of(tools, [LF_MCP["error"]]),
    "expect": {
        "calls": [
            call("lookup_customer", "ok", None, False, span_l, ids[0]),
            call("charge_card", "error", None, True, span_c, ids[1]),
            call("charge_card", "ok", "agent", False, span_c, ids[2]),
        ],
        "agent_spans": [
            {"name": "Agent run: {name!r}", "marker": "logfire.msg_template=Agent run: {name!r} (name=checkout-agent)"},
            {"name": "OpenAI Agents trace: {name}", "marker": "the root (logfire.msg_template=OpenAI Agents trace: {name})"},
        ],
        "notes": (
            "charge_card raised inside the FastMCP server; FastMCP returned CallToolResult isError: true with the "
            "text 'Error executing tool charge_card: <raised text>' (no exception crosses MCP); the Agents SDK handed "
            "the text part to the model, which called charge_card again with a new call id and changed arguments. "
            "Each execution is three nested spans: 'Function: {name}' (logfire.openai_agents; attribute name=tool, "
            "input = arguments JSON, output = the text part {type, text} as JSON, mcp_data {server}; the SDK drops "
            "isError, so it is status UNSET with no error), under it the client span 'MCP request: tools/call <tool>' "
            "(logfire.mcp; rpc.method tools/call, request {method, params {task, meta, name, arguments}}, response = "
            "the bare CallToolResult {meta, content, structuredContent, isError}, no JSON-RPC envelope; status UNSET), "
            "and under that (remote parent, traceparent in params._meta) the in-process server's 'MCP server handle "
            "request: tools/call' (request with jsonrpc and id, same response). span_names name the client span as "
            "the attempt; the other two are the same execution. No span is ERROR: the failure shows only as "
            "isError: true in `response` (client and server spans). No call id on any of the three (the JSON-RPC id "
            "is per request); call ids only in the Responses spans. Each turn also lists the tools "
            "('MCP: list tools from server {server}' > 'MCP request: tools/list' > 'MCP server handle request: "
            "tools/list'): not tool calls. 'MCP request: initialize' is its own trace, before the agent trace."
        ),
    },
    "note": ("tool results are the CallToolResult the server returned (FastMCP wraps a str return as "
             "structuredContent {result}); call_id is the scripted Responses API function_call call_id"),
})

# ---------------------------------------------------------------- 3. OpenInference + OpenAI Agents (handoff)
oi_agents.main(write, order_tool, call)

# ---------------------------------------------------------------- 4/5. OpenInference + LangGraph
oi_langgraph.main(write, order_tool, call)
