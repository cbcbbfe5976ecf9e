"""Logfire fixtures: logfire.instrument_openai_agents (+ logfire.instrument_mcp).

Span shapes follow pydantic/logfire tests/otel_integrations/test_openai_agents.py
(test_function_tool_exception, test_responses) and test_openai_agents_mcp.py (test_mcp)."""
from __future__ import annotations

import json

from common import (M, Clock, Ids, Span, export_request, json_schema_attr, lj, pj_ascii,
                    raw_values_of)

LOGFIRE_VERSION = "4.41.0"
OA_SCOPE = "logfire.openai_agents"
MCP_SCOPE = "logfire.mcp"
MODEL = "gpt-4o"
RESP_MODEL = "gpt-4o-2024-08-06"
SCRIPT = "checkout_agent.py"

PROMPT = "Please charge the customer from order {order} for the open invoice and send the receipt."
INSTRUCTIONS = ("You are a checkout assistant. Use the tools to look up customers and charge cards. "
                "If a card is declined, charge the customer's backup card instead.")
FINAL = "The invoice is paid with the customer's backup card and the receipt is on its way."

LOOKUP_DOC = "Look up a customer record by id and e-mail."
CHARGE_DOC = "Charge a card for an invoice and e-mail the receipt."


def resource(service: str) -> list:
    return [
        ("process.runtime.name", "cpython"),
        ("process.runtime.version", "3.12.8"),
        ("process.runtime.description", "3.12.8 (main, Dec  4 2024, 20:38:13) [GCC 12.2.0]"),
        ("host.name", "capture-host"),
        ("host.arch", "x86_64"),
        ("os.type", "linux"),
        ("os.version", "6.1.0-28-amd64"),
        ("service.instance.id", "4c7f0d2e9b8a41f3a6d51e2c8b0f7a93"),
        ("telemetry.sdk.language", "python"),
        ("telemetry.sdk.name", "opentelemetry"),
        ("telemetry.sdk.version", "1.44.0"),
        ("service.name", service),
        ("logfire.version", LOGFIRE_VERSION),
        ("process.pid", 4242),
    ]


def fn_params(kind: str, strict: bool) -> dict:
    if kind == "lookup":
        props = {"customer_id": {"title": "Customer Id", "type": "string"},
                 "email": {"title": "Email", "type": "string"}}
        req = ["customer_id", "email"]
    else:
        props = {"card_number": {"title": "Card Number", "type": "string"},
                 "email": {"title": "Email", "type": "string"},
                 "amount_cents": {"title": "Amount Cents", "type": "integer"},
                 "iban": {"title": "Iban", "type": "string"}}
        req = ["card_number", "email", "amount_cents", "iban"]
    name = "lookup_customer" if kind == "lookup" else "charge_card"
    if strict:  # agents function_tool: ensure_strict_json_schema
        return {"properties": props, "required": req, "title": f"{name}_args", "type": "object",
                "additionalProperties": False}
    return {"properties": props, "required": req, "title": f"{name}Arguments", "type": "object"}


def out_schema(name: str) -> dict:
    return {"properties": {"result": {"title": "Result", "type": "string"}}, "required": ["result"],
            "title": f"{name}Output", "type": "object"}


def response_model(resp_id, created, completed, output_items, tools, usage, instructions):
    """openai 2.54.0 Response as pydantic model_dump() (python mode) sees it."""
    return M("Response", "PydanticModel", {
        "id": resp_id, "created_at": float(created), "error": None, "incomplete_details": None,
        "instructions": instructions, "metadata": {}, "model": RESP_MODEL, "object": "response",
        "output": output_items, "parallel_tool_calls": True, "temperature": 1.0, "tool_choice": "auto",
        "tools": tools, "top_p": 1.0, "background": False, "completed_at": float(completed),
        "conversation": None, "max_output_tokens": None, "max_tool_calls": None, "moderation": None,
        "previous_response_id": None, "prompt": None, "prompt_cache_key": None,
        "prompt_cache_options": None, "prompt_cache_retention": None,
        "reasoning": M("Reasoning", "PydanticModel", {"context": None, "effort": None, "generate_summary": None,
                                                      "mode": None, "summary": None}),
        "safety_identifier": None, "service_tier": "default", "status": "completed",
        "text": M("ResponseTextConfig", "PydanticModel",
                  {"format": M("ResponseFormatText", "PydanticModel", {"type": "text"}), "verbosity": "medium"}),
        "top_logprobs": 0, "truncation": "disabled",
        "usage": M("ResponseUsage", "PydanticModel", {
            "input_tokens": usage[0],
            "input_tokens_details": M("InputTokensDetails", "PydanticModel",
                                      {"cache_write_tokens": 0, "cached_tokens": 0}),
            "output_tokens": usage[1],
            "output_tokens_details": M("OutputTokensDetails", "PydanticModel", {"reasoning_tokens": 0}),
            "total_tokens": usage[0] + usage[1]}),
        "user": None, "store": True,
    })


def function_tool_model(name, params, strict, description):
    return M("FunctionTool", "PydanticModel", {
        "name": name, "parameters": params, "strict": strict, "type": "function", "allowed_callers": None,
        "defer_loading": None, "description": description, "output_schema": None})


def fc_item(call_id, fc_id, name, args):
    return M("ResponseFunctionToolCall", "PydanticModel", {
        "arguments": args, "call_id": call_id, "name": name, "type": "function_call", "id": fc_id,
        "caller": None, "namespace": None, "status": "completed"})


def msg_item(msg_id, text):
    return M("ResponseOutputMessage", "PydanticModel", {
        "id": msg_id,
        "content": [M("ResponseOutputText", "PydanticModel",
                      {"annotations": [], "text": text, "type": "output_text", "logprobs": []})],
        "role": "assistant", "status": "completed", "type": "message", "phase": None})


MODEL_SETTINGS = M("ModelSettings", "dataclass", {k: None for k in (
    "temperature", "top_p", "frequency_penalty", "presence_penalty", "tool_choice", "parallel_tool_calls",
    "truncation", "max_tokens", "reasoning", "verbosity", "metadata", "store", "prompt_cache_retention",
    "include_usage", "response_include", "top_logprobs", "extra_query", "extra_body", "extra_headers",
    "extra_args", "retry", "context_management", "prompt_cache_options", "preserve_raw_usage")})


class LogfireRun:
    def __init__(self, tag: str, seed_time: int):
        self.ids = Ids(tag)
        self.clock = Clock(seed_time, tag)
        self.spans: list[Span] = []

    def span(self, trace_id, parent, name, scope, remote=False) -> Span:
        s = Span(trace_id, self.ids.span(), parent, name, scope, self.clock.adv(0.2), remote_parent=remote)
        self.spans.append(s)
        return s

    def end(self, s: Span, ms: float = 0.3) -> None:
        s.end = self.clock.adv(ms)

    @staticmethod
    def finish_logfire(s: Span, user: dict, msg: str, *, code=None, level=None, tmpl_first=True,
                       order=None) -> None:
        """Lay out the attributes of a logfire span: code.* (stack info), user attributes,
        logfire.msg_template / msg / span_type, logfire.json_schema."""
        attrs: list = []
        if code:
            attrs += [("code.filepath", SCRIPT), ("code.function", "main"), ("code.lineno", code)]
        attrs.append(("logfire.msg_template", s.name))
        attrs.append(("logfire.span_type", "span"))
        if level is not None:
            attrs.append(("logfire.level_num", level))
        for k, v in user.items():
            attrs.append((k, v if isinstance(v, (str, bool, int, float)) else lj(v)))
        attrs.append(("logfire.msg", msg))
        attrs.append(("logfire.json_schema", json_schema_attr(user)))
        s.attrs = attrs


def build(tag: str, mcp: bool, v: dict, seed_time: int):
    run = LogfireRun(tag, seed_time)
    ids, clock = run.ids, run.clock
    server = "checkout-mcp"
    tools_names = ["lookup_customer", "charge_card"]
    prompt = PROMPT.format(order=v["order"])

    # Tools as the model sees them (FunctionTool in the Response's echo).
    resp_tools = [
        function_tool_model("lookup_customer", fn_params("lookup", not mcp), not mcp, LOOKUP_DOC),
        function_tool_model("charge_card", fn_params("charge", not mcp), not mcp, CHARGE_DOC),
    ]

    # The scripted model: function calls as the API returns them (compact JSON arguments).
    calls = [
        ("lookup_customer", v["call_ids"][0], v["lookup_args"]),
        ("charge_card", v["call_ids"][1], v["charge1_args"]),
        ("charge_card", v["call_ids"][2], v["charge2_args"]),
    ]
    fc_ids = ["fc_" + ids.hex(48) for _ in calls]
    resp_ids = ["resp_" + ids.hex(48) for _ in range(4)]
    msg_id = "msg_" + ids.hex(48)
    usages = [(312, 31), (398, 52), (496, 53), (588, 21)]

    # What each execution gave back to the agent (tool output) and what the model saw.
    lookup_json = pj_ascii(v["lookup_result"])
    charge2_json = pj_ascii(v["charge2_result"])
    if mcp:
        err_text = f"Error executing tool charge_card: {v['error']}"
        results = [  # CallToolResult dumps
            {"meta": None, "content": [{"type": "text", "text": lookup_json, "annotations": None, "meta": None}],
             "structuredContent": {"result": lookup_json}, "isError": False},
            {"meta": None, "content": [{"type": "text", "text": err_text, "annotations": None, "meta": None}],
             "structuredContent": None, "isError": True},
            {"meta": None, "content": [{"type": "text", "text": charge2_json, "annotations": None, "meta": None}],
             "structuredContent": {"result": charge2_json}, "isError": False},
        ]
        tool_outputs = [{"type": "text", "text": r["content"][0]["text"]} for r in results]
        model_outputs = [[{"type": "input_text", "text": r["content"][0]["text"]}] for r in results]
    else:
        err_text = f"An error occurred while running the tool. Please try again. Error: {v['error']}"
        tool_outputs = [lookup_json, err_text, charge2_json]
        model_outputs = list(tool_outputs)

    spans_mcp_init = []
    jsonrpc_id = [0]

    def mcp_request(trace_id, parent, method, client_req, server_req_params, response, name_suffix="",
                    code=None, client_order_first=False):
        """Client 'MCP request: <method>' span and, for requests the lowlevel Server handles,
        the in-process server's 'MCP server handle request: <method>' span under it."""
        cname = f"MCP request: {method}{name_suffix}"
        c = run.span(trace_id, parent, cname, MCP_SCOPE)
        rid = jsonrpc_id[0]
        jsonrpc_id[0] += 1
        srv = None
        if server_req_params is not None:
            srv = run.span(trace_id, c.span_id, f"MCP server handle request: {method}", MCP_SCOPE, remote=True)
            meta = M("Meta", "PydanticModel", {"progressToken": None,
                                                "traceparent": f"00-{trace_id}-{c.span_id}-01"})
            params = M(server_req_params[0], "PydanticModel", {"task": None, "meta": meta, **server_req_params[1]})
            sreq = M(server_req_params[2], "PydanticModel",
                     {"method": method, "params": params, "jsonrpc": "2.0", "id": rid})
            run.end(srv, 1.2)
            srv.attrs = [
                ("request", lj(sreq)),
                ("logfire.msg_template", srv.name),
                ("logfire.msg", srv.name),
                ("logfire.span_type", "span"),
                ("response", lj(response)),
                ("logfire.json_schema", json_schema_attr({"request": sreq, "response": response})),
            ]
        run.end(c, 0.4)
        attrs = []
        if code:
            attrs += [("code.filepath", SCRIPT), ("code.function", "main"), ("code.lineno", code)]
        attrs += [
            ("request", lj(client_req)),
            ("rpc.system", "jsonrpc"),
            ("rpc.jsonrpc.version", "2.0"),
            ("rpc.method", method),
            ("logfire.msg_template", cname),
            ("logfire.msg", cname),
            ("logfire.span_type", "span"),
            ("response", lj(response)),
            ("logfire.json_schema", json_schema_attr({"request": client_req, "response": response})),
        ]
        c.attrs = attrs
        return c

    def tool_model(name):
        kind = "lookup" if name == "lookup_customer" else "charge"
        return M("Tool", "PydanticModel", {
            "name": name, "title": None, "description": LOOKUP_DOC if kind == "lookup" else CHARGE_DOC,
            "inputSchema": fn_params(kind, False), "outputSchema": out_schema(name), "icons": None,
            "annotations": None, "meta": None, "execution": None})

    list_result = M("ListToolsResult", "PydanticModel",
                    {"meta": None, "nextCursor": None, "tools": [tool_model(n) for n in tools_names]})

    if mcp:
        # Connecting the server (before the agent trace): its own trace.
        init_trace = ids.trace()
        init_req = M("InitializeRequest", "PydanticModel", {"method": "initialize", "params": M(
            "InitializeRequestParams", "PydanticModel", {
                "task": None, "meta": None, "protocolVersion": "2025-11-25",
                "capabilities": M("ClientCapabilities", "PydanticModel",
                                  {"experimental": None, "sampling": None, "elicitation": None, "roots": None,
                                   "tasks": None}),
                "clientInfo": M("Implementation", "PydanticModel",
                                {"name": "mcp", "title": None, "version": "0.1.0", "websiteUrl": None,
                                 "icons": None})})})
        init_res = M("InitializeResult", "PydanticModel", {
            "meta": None, "protocolVersion": "2025-11-25",
            "capabilities": M("ServerCapabilities", "PydanticModel", {
                "experimental": {}, "logging": None,
                "prompts": M("PromptsCapability", "PydanticModel", {"listChanged": False}),
                "resources": M("ResourcesCapability", "PydanticModel", {"subscribe": False, "listChanged": False}),
                "tools": M("ToolsCapability", "PydanticModel", {"listChanged": False}),
                "completions": None, "tasks": None}),
            "serverInfo": M("Implementation", "PydanticModel",
                            {"name": server, "title": None, "version": "1.29.0", "websiteUrl": None,
                             "icons": None}),
            "instructions": None})
        mcp_request(init_trace, None, "initialize", init_req, None, init_res, code=38)
        clock.adv(3)

    trace_id = ids.trace()
    agent_trace_id = "trace_" + ids.hex(32)
    root = run.span(trace_id, None, "OpenAI Agents trace: {name}", OA_SCOPE)
    task = run.span(trace_id, root.span_id, "Task: Agent workflow", OA_SCOPE)

    def list_tools(parent):
        ls = run.span(trace_id, parent.span_id, "MCP: list tools from server {server}", OA_SCOPE)
        mcp_request(trace_id, ls.span_id, "tools/list",
                    M("ListToolsRequest", "PydanticModel", {"method": "tools/list", "params": None}),
                    ("PaginatedRequestParams", {"cursor": None}, "ListToolsRequest"), list_result, code=61)
        run.end(ls, 0.2)
        LogfireRun.finish_logfire(ls, {"server": server, "result": tools_names, "gen_ai.system": "openai"},
                                  f"MCP: list tools from server {server}", code=61)

    if mcp:
        list_tools(task)
    agent = run.span(trace_id, task.span_id, "Agent run: {name!r}", OA_SCOPE)

    raw_input: list = [{"content": prompt, "role": "user"}]
    events_hist: list = [{"event.name": "gen_ai.system.message", "content": INSTRUCTIONS, "role": "system"},
                         {"event.name": "gen_ai.user.message", "content": prompt, "role": "user"}]
    tot_in = tot_out = 0
    tools_truth = []
    for turn in range(4):
        if mcp and turn > 0:
            list_tools(agent)
        ts = run.span(trace_id, agent.span_id, "Turn {turn} for agent checkout-agent", OA_SCOPE)
        rs = run.span(trace_id, ts.span_id, "Responses API with {gen_ai.request.model!r}", OA_SCOPE)
        created_s = clock.now() // 1_000_000_000
        clock.adv(640)
        if turn < 3:
            name, call_id, args = calls[turn]
            args_json = json.dumps(args, separators=(",", ":"))
            out_items = [fc_item(call_id, fc_ids[turn], name, args_json)]
            out_events = [{"event.name": "gen_ai.assistant.message", "role": "assistant",
                           "tool_calls": [{"id": call_id, "type": "function",
                                           "function": {"name": name, "arguments": args_json}}]}]
        else:
            out_items = [msg_item(msg_id, FINAL)]
            out_events = [{"event.name": "gen_ai.assistant.message", "content": FINAL, "role": "assistant"}]
        u_in, u_out = usages[turn]
        tot_in += u_in
        tot_out += u_out
        resp = response_model(resp_ids[turn], created_s, created_s + 1, out_items, resp_tools, (u_in, u_out),
                              INSTRUCTIONS)
        run.end(rs, 0.5)
        user = {
            "gen_ai.request.model": MODEL,
            "response_id": resp_ids[turn],
            "usage": {"requests": 1, "input_tokens": u_in, "output_tokens": u_out, "total_tokens": u_in + u_out,
                      "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}},
            "gen_ai.system": "openai",
            "model_settings": MODEL_SETTINGS,
            "gen_ai.response.model": RESP_MODEL,
            "response": resp,
            "gen_ai.operation.name": "chat",
            "raw_input": [dict(x) for x in raw_input],
            "events": events_hist + out_events,
            "gen_ai.usage.input_tokens": u_in,
            "gen_ai.usage.output_tokens": u_out,
        }
        LogfireRun.finish_logfire(rs, user, f"Responses API with '{MODEL}'", code=None if turn == 0 else 64)
        if turn < 3:
            name, call_id, args = calls[turn]
            args_json = json.dumps(args, separators=(",", ":"))
            fs = run.span(trace_id, ts.span_id, "Function: {name}", OA_SCOPE)
            failed = turn == 1
            if mcp:
                creq = M("CallToolRequest", "PydanticModel", {"method": "tools/call", "params": M(
                    "CallToolRequestParams", "PydanticModel",
                    {"task": None, "meta": None, "name": name, "arguments": args})})
                res = results[turn]
                cres = M("CallToolResult", "PydanticModel", {
                    "meta": None,
                    "content": [M("TextContent", "PydanticModel", c) for c in res["content"]],
                    "structuredContent": res["structuredContent"], "isError": res["isError"]})
                mcp_request(trace_id, fs.span_id, "tools/call", creq,
                            ("CallToolRequestParams", {"name": name, "arguments": args}, "CallToolRequest"),
                            cres, name_suffix=f" {name}")
                run.end(fs, 0.3)
                user_f = {"name": name, "input": args_json, "output": tool_outputs[turn],
                          "mcp_data": {"server": server}, "gen_ai.system": "openai"}
                LogfireRun.finish_logfire(fs, user_f, f"Function: {name}")
                truth_res = {"content": [{"type": "text", "text": res["content"][0]["text"]}],
                             **({"structuredContent": res["structuredContent"]} if res["structuredContent"] else {}),
                             "isError": res["isError"]}
                t = {"tool": name, "call_id": call_id, "arguments": args, "result": truth_res, "failed": failed}
            else:
                exc_t = clock.adv(0.8)
                run.end(fs, 0.6)
                user_f = {"name": name, "input": args_json, "output": tool_outputs[turn], "mcp_data": None,
                          "gen_ai.system": "openai"}
                msg = f"Function: {name}"
                if failed:
                    user_f["error"] = {"message": "Error running tool (non-fatal)",
                                       "data": {"tool_name": name, "error": v["error"]}}
                    msg += " failed: Error running tool (non-fatal)"
                    fs.events.append((exc_t, "exception", [
                        ("exception.type", "CardDeclinedError"),
                        ("exception.message", v["error"]),
                        ("exception.stacktrace", stacktrace_fn(v["error"])),
                        ("exception.escaped", "False"),
                    ]))
                    # MainSpanProcessorWrapper._set_error_level_and_status: level error -> status ERROR
                    fs.status = {"code": 2}
                LogfireRun.finish_logfire(fs, user_f, msg, level=17 if failed else None)
                t = {"tool": name, "call_id": call_id, "arguments": args,
                     "result": v["error"] if failed else tool_outputs[turn], "failed": failed}
            if turn >= 1:
                t["attempt"] = turn
            tools_truth.append(t)
            # History for the next request.
            raw_input.append({"arguments": args_json, "call_id": call_id, "name": name, "type": "function_call",
                              "id": fc_ids[turn], "status": "completed"})
            raw_input.append({"call_id": call_id, "output": model_outputs[turn], "type": "function_call_output"})
            events_hist = events_hist + out_events + [
                {"event.name": "gen_ai.tool.message", "role": "tool", "id": call_id,
                 "content": model_outputs[turn], "name": name}]
        run.end(ts, 0.2)
        LogfireRun.finish_logfire(ts, {
            "name": "turn", "type": "custom", "gen_ai.system": "openai", "sdk_span_type": "turn", "turn": turn + 1,
            "agent_name": "checkout-agent",
            "usage": {"input_tokens": u_in, "output_tokens": u_out, "cached_input_tokens": 0,
                      "cache_write_input_tokens": 0}}, f"Turn {turn + 1} for agent checkout-agent", code=64)
    run.end(agent, 0.3)
    LogfireRun.finish_logfire(agent, {"name": "checkout-agent", "handoffs": [], "tools": tools_names,
                                      "output_type": "str", "gen_ai.system": "openai"},
                              "Agent run: 'checkout-agent'", code=64)
    run.end(task, 0.2)
    LogfireRun.finish_logfire(task, {
        "type": "custom", "name": "Agent workflow", "gen_ai.system": "openai", "sdk_span_type": "task",
        "usage": {"input_tokens": tot_in, "output_tokens": tot_out, "cached_input_tokens": 0,
                  "cache_write_input_tokens": 0, "requests": 4, "total_tokens": tot_in + tot_out}},
        "Task: Agent workflow", code=64)
    run.end(root, 0.2)
    LogfireRun.finish_logfire(root, {"name": "Agent workflow", "agent_trace_id": agent_trace_id,
                                     "group_id": None, "metadata": None, "tracing": None},
                              "OpenAI Agents trace: Agent workflow", code=64)
    # The trace span's attributes in the order the upstream snapshot lists them.
    order = ["code.filepath", "code.function", "code.lineno", "name", "group_id", "metadata", "tracing",
             "logfire.msg_template", "logfire.msg", "logfire.span_type", "agent_trace_id", "logfire.json_schema"]
    root.attrs = sorted(root.attrs, key=lambda kv: order.index(kv[0]))

    scopes = {OA_SCOPE: LOGFIRE_VERSION, MCP_SCOPE: LOGFIRE_VERSION}
    req = export_request(resource(v["service"]), scopes, run.spans)
    return [req], tools_truth, {"trace_id": trace_id, "err_text": err_text}


def stacktrace_fn(err: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/app/.venv/lib/python3.12/site-packages/agents/tool.py", line 1342, in _on_invoke_tool\n'
        "    return await _on_invoke_tool_impl(ctx, input)\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "/app/.venv/lib/python3.12/site-packages/agents/tool.py", line 1301, in _on_invoke_tool_impl\n'
        "    result = await asyncio.to_thread(the_func, *args, **kwargs_dict)\n"
        "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "/usr/local/lib/python3.12/asyncio/threads.py", line 25, in to_thread\n'
        "    return await loop.run_in_executor(None, func_call)\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "/usr/local/lib/python3.12/concurrent/futures/thread.py", line 59, in run\n'
        "    result = self.fn(*self.args, **self.kwargs)\n"
        "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        f'  File "/app/{SCRIPT}", line 47, in charge_card\n'
        "    raise CardDeclinedError(\n"
        f"CardDeclinedError: {err}\n"
    )
