"""OpenInference LangChain (Python) fixtures for a LangGraph agent (StateGraph + ToolNode).

Span shapes follow Arize-ai/openinference python/instrumentation/openinference-instrumentation-langchain
(_tracer.py as asserted by tests/test_convert_io.py, tests/test_langgraph_tool_calls.py,
tests/test_instrumentor.py)."""
from __future__ import annotations

import json

from common import Clock, Ids, Span, export_request, pj, pj_ascii, raw_values_of
from lf import CHARGE_DOC, INSTRUCTIONS, LOOKUP_DOC, PROMPT

SCOPE = "openinference.instrumentation.langchain"
SCOPE_VERSION = "0.1.70"
OI_COMMIT = "1fe497f1d9f45a07eee55d97fe185e020560f9c7"
MODEL = "gpt-4o"
RESP_MODEL = "gpt-4o-2024-08-06"
SCRIPT = "checkout_graph.py"
FINAL = "The invoice is paid with the customer's backup card and the receipt is on its way."
TOOL_ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."

VARIANTS = {
    "py_openinference_langgraph_recall": {
        "tag": "pylgr", "handled": False, "order": 6652, "service": "checkout-graph-openinference",
        "call_ids": ["call_pylgr_lookup_1", "call_pylgr_charge_1", "call_pylgr_charge_2"],
        "lookup_args": {"customer_id": "cus_pylgr_Wd5Kp2Ry", "email": "lucia.ferreira.pylgr@example.com"},
        "lookup_result": {"account_ref": "acct_pylgr_Mv6Bq3Ts", "full_name": "Lucia Ferreira PYLGR-Customer",
                          "phone": "+351-912-345-078", "default_card_token": "tok_pylgr_card_Fe58Wn"},
        "charge1_args": {"card_number": "4000197726387612", "email": "lucia.ferreira.pay.pylgr@example.com",
                         "amount_cents": 5190, "iban": "PT64264113697143463528600"},
        "error": "card_declined: issuer declined card 4000197726387612 (decline ref dcl_pylgr_Jc64Yh)",
        "charge2_args": {"card_number": "5807754764017410", "email": "lucia.ferreira.backup.pylgr@example.com",
                         "amount_cents": 5190, "iban": "PT49476751601432184559750"},
        "charge2_result": {"charge_id": "ch_pylgr_8HtWc4Lp", "receipt_email": "receipts+pylgr@example.org",
                           "last4_token": "tok_mc_pylgr_7410q2"},
        "time": 1796461200,
    },
    "py_openinference_langgraph_handled": {
        "tag": "pylgh", "handled": True, "order": 3068, "service": "checkout-graph-openinference-handled",
        "call_ids": ["call_pylgh_lookup_1", "call_pylgh_charge_1", "call_pylgh_charge_2"],
        "lookup_args": {"customer_id": "cus_pylgh_Tx9Ld4Qc", "email": "kenji.watanabe.pylgh@example.com"},
        "lookup_result": {"account_ref": "acct_pylgh_Rb7Yn2Hs", "full_name": "Kenji Watanabe PYLGH-Customer",
                          "phone": "+81-90-4417-2280", "default_card_token": "tok_pylgh_card_Ua36Pe"},
        "charge1_args": {"card_number": "4000929396803423", "email": "kenji.watanabe.pay.pylgh@example.com",
                         "amount_cents": 8820, "iban": "DE90429931125551787240"},
        "error": "card_declined: card expired for card 4000929396803423 (decline ref dcl_pylgh_Sn85Mw)",
        "charge2_args": {"card_number": "5057741080763147", "email": "kenji.watanabe.backup.pylgh@example.com",
                         "amount_cents": 8820, "iban": "DE49358907211485934791"},
        "charge2_result": {"charge_id": "ch_pylgh_4MzRv9Ka", "receipt_email": "receipts+pylgh@example.org",
                           "last4_token": "tok_mae_pylgh_3147t6"},
        "time": 1796464800,
    },
}

LC_TOOLS = [
    {"type": "function", "function": {"name": "lookup_customer", "description": LOOKUP_DOC, "parameters": {
        "properties": {"customer_id": {"type": "string"}, "email": {"type": "string"}},
        "required": ["customer_id", "email"], "type": "object"}}},
    {"type": "function", "function": {"name": "charge_card", "description": CHARGE_DOC, "parameters": {
        "properties": {"card_number": {"type": "string"}, "email": {"type": "string"},
                       "amount_cents": {"type": "integer"}, "iban": {"type": "string"}},
        "required": ["card_number", "email", "amount_cents", "iban"], "type": "object"}}},
]


class Msg:
    """A LangChain message as LangGraph state holds it."""

    def __init__(self, kind, content, **kw):
        self.kind = kind  # system, human, ai, tool
        self.content = content
        self.kw = kw

    def data(self) -> dict:
        """message_to_dict(m)["data"] == m.model_dump()."""
        d = {"content": self.content, "additional_kwargs": self.kw.get("additional_kwargs", {}),
             "response_metadata": self.kw.get("response_metadata", {}), "type": self.kind,
             "name": self.kw.get("name"), "id": self.kw.get("id")}
        if self.kind == "ai":
            d["tool_calls"] = self.kw.get("tool_calls", [])
            d["invalid_tool_calls"] = []
            d["usage_metadata"] = self.kw.get("usage_metadata")
        if self.kind == "tool":
            d["tool_call_id"] = self.kw["tool_call_id"]
            d["artifact"] = None
            d["status"] = self.kw.get("status", "success")
        return d

    def as_dict(self) -> dict:
        return {"type": self.kind, "data": self.data()}

    def dumpd(self) -> dict:
        cls = {"system": "SystemMessage", "human": "HumanMessage", "ai": "AIMessage", "tool": "ToolMessage"}[self.kind]
        k: dict = {"content": self.content}
        if self.kind == "ai":
            k["additional_kwargs"] = self.kw["additional_kwargs"]
            k["response_metadata"] = self.kw["response_metadata"]
        k["type"] = self.kind
        if self.kw.get("name"):
            k["name"] = self.kw["name"]
        if self.kw.get("id"):
            k["id"] = self.kw["id"]
        if self.kind == "ai":
            k["tool_calls"] = self.kw.get("tool_calls", [])
            k["usage_metadata"] = self.kw["usage_metadata"]
            k["invalid_tool_calls"] = []
        if self.kind == "tool":
            k["tool_call_id"] = self.kw["tool_call_id"]
            if self.kw.get("status", "success") != "success":
                k["status"] = self.kw["status"]
        return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", cls], "kwargs": k}

    def oi_message(self) -> dict:
        """_parse_message_data(message.to_json()) for the llm.input/output_messages attributes."""
        role = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}[self.kind]
        m: dict = {"message.role": role}
        if self.content:
            m["message.content"] = self.content
        if self.kind == "tool":
            m["message.tool_call_id"] = self.kw["tool_call_id"]
            m["message.name"] = self.kw["name"]
        if self.kind == "ai" and self.kw.get("tool_calls"):
            m["message.tool_calls"] = [
                {"tool_call.id": tc["id"], "tool_call.function.name": tc["name"],
                 "tool_call.function.arguments": pj(tc["args"])} for tc in self.kw["tool_calls"]]
        return m


def flatten(prefix: str, value) -> list:
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += flatten(f"{prefix}.{k}", v)
    elif isinstance(value, list) and any(isinstance(x, dict) for x in value):
        for i, x in enumerate(value):
            out += flatten(f"{prefix}.{i}", x)
    else:
        out.append((prefix, value))
    return out


def state_json(msgs: list[Msg]) -> str:
    return pj({"messages": [m.as_dict() for m in msgs]})


def main(write, order_tool, call):
    for name, v in VARIANTS.items():
        build(name, v, write, order_tool, call)


def stack(err: str, exc: str) -> list[str]:
    """traceback.format_exception(e) elements for the tool's raise."""
    return [
        "Traceback (most recent call last):\n",
        '  File "/app/.venv/lib/python3.12/site-packages/langchain_core/tools/base.py", line 1006, in run\n'
        "    response = context.run(self._run, *tool_args, **tool_kwargs)\n"
        "               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n",
        '  File "/app/.venv/lib/python3.12/site-packages/langchain_core/tools/structured.py", line 92, in _run\n'
        "    return self.func(*args, **kwargs)\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^\n",
        f'  File "/app/{SCRIPT}", line 46, in charge_card\n'
        f"    raise {exc}(\n",
        f"{exc}: {err}\n",
    ]


def build(fixture: str, v: dict, write, order_tool, call):
    tag = v["tag"]
    ids = Ids(tag)
    clock = Clock(v["time"], tag)
    spans: list[Span] = []
    trace_id = ids.trace()
    prompt = PROMPT.format(order=v["order"])

    def start(parent, name, ms=0.25):
        s = Span(trace_id, ids.span(), parent.span_id if parent else None, name, SCOPE, clock.us(ms))
        spans.append(s)
        return s

    def finish(s, kind, inp=None, out=None, extra=(), status=None, ms=0.25):
        """_update_span: status, kind, then the flattened io / llm / tool / metadata attributes."""
        a = [("openinference.span.kind", kind)]
        if inp is not None:
            a.append(("input.value", inp[0]))
            if inp[1]:
                a.append(("input.mime_type", "application/json"))
        if out is not None:
            a.append(("output.value", out[0]))
            if out[1]:
                a.append(("output.mime_type", "application/json"))
        a += list(extra)
        s.attrs = a
        s.status = status or {"code": 1}
        s.end = clock.us(ms)

    def meta(step, node, triggers, ns, child=False, extra=None):
        m = {"langgraph_step": step, "langgraph_node": node, "langgraph_triggers": triggers,
             "langgraph_path": ["__pregel_pull", node], "langgraph_checkpoint_ns": ns}
        if child:
            m["checkpoint_ns"] = ns
        if extra:
            m.update(extra)
        return ("metadata", pj(m))

    system = Msg("system", INSTRUCTIONS)
    user_input = {"messages": [{"role": "user", "content": prompt}]}
    state: list[Msg] = [Msg("human", prompt, id=ids.uuid())]

    root = start(None, "checkout-agent")
    st = start(root, "__start__")
    finish(st, "CHAIN", (pj(user_input), True), (pj(user_input), True),
           [meta(0, "__start__", ["__start__"], "__start__:" + ids.uuid())])

    calls = [("lookup_customer", v["call_ids"][0], v["lookup_args"]),
             ("charge_card", v["call_ids"][1], v["charge1_args"]),
             ("charge_card", v["call_ids"][2], v["charge2_args"])]
    usages = [(287, 30), (368, 52), (501, 53), (596, 21)]
    tools_truth = []
    step = 1
    for turn in range(4):
        ns = "call_model:" + ids.uuid()
        node = start(root, "call_model")
        node_in = state_json(state)
        trig = ["branch:to:call_model"]
        llm = start(node, "ChatOpenAI")
        clock.adv(700)
        run_id = ids.uuid()
        u_in, u_out = usages[turn]
        token_usage = {"completion_tokens": u_out, "prompt_tokens": u_in, "total_tokens": u_in + u_out,
                       "completion_tokens_details": {"accepted_prediction_tokens": 0, "audio_tokens": 0,
                                                     "reasoning_tokens": 0, "rejected_prediction_tokens": 0},
                       "prompt_tokens_details": {"audio_tokens": 0, "cached_tokens": 0}}
        chat_id = "chatcmpl-" + ids.alnum(29)
        fingerprint = "fp_" + ids.hex(10)
        finish_reason = "tool_calls" if turn < 3 else "stop"
        resp_meta = {"token_usage": token_usage, "model_provider": "openai", "model_name": RESP_MODEL,
                     "system_fingerprint": fingerprint, "id": chat_id, "service_tier": "default",
                     "finish_reason": finish_reason, "logprobs": None}
        usage_md = {"input_tokens": u_in, "output_tokens": u_out, "total_tokens": u_in + u_out,
                    "input_token_details": {"audio": 0, "cache_read": 0},
                    "output_token_details": {"audio": 0, "reasoning": 0}}
        if turn < 3:
            tname, call_id, args = calls[turn]
            tcs = [{"name": tname, "args": args, "id": call_id, "type": "tool_call"}]
            ai = Msg("ai", "", additional_kwargs={"refusal": None}, response_metadata=resp_meta,
                     id=f"lc_run--{run_id}", tool_calls=tcs, usage_metadata=usage_md)
        else:
            ai = Msg("ai", FINAL, additional_kwargs={"refusal": None}, response_metadata=resp_meta,
                     id=f"lc_run--{run_id}", tool_calls=[], usage_metadata=usage_md)
        llm_in = [system] + state
        llm_inputs = {"messages": [[m.dumpd() for m in llm_in]]}
        llm_outputs = {"generations": [[{"text": ai.content, "generation_info": {"finish_reason": finish_reason,
                                                                                 "logprobs": None},
                                         "type": "ChatGeneration", "message": ai.dumpd()}]],
                       "llm_output": {"token_usage": token_usage, "model_provider": "openai",
                                      "model_name": RESP_MODEL, "system_fingerprint": fingerprint,
                                      "id": chat_id, "service_tier": "default"},
                       "run": None, "type": "LLMResult"}
        inv = {"model": MODEL, "model_name": MODEL, "stream": False, "temperature": 0.0, "_type": "openai-chat",
               "stop": None, "tools": LC_TOOLS}
        extra = []
        extra += flatten("llm.input_messages", [m.oi_message() for m in llm_in])
        extra += flatten("llm.output_messages", [ai.oi_message()])
        extra.append(("llm.invocation_parameters", pj(inv)))
        for i, t in enumerate(LC_TOOLS):
            extra.append((f"llm.tools.{i}.tool.json_schema", pj(t)))
        extra += [("llm.provider", "openai"), ("llm.system", "openai"), ("llm.model_name", RESP_MODEL),
                  ("llm.token_count.prompt", u_in), ("llm.token_count.completion", u_out),
                  ("llm.token_count.total", u_in + u_out),
                  ("llm.token_count.completion_details.audio", 0), ("llm.token_count.completion_details.reasoning", 0),
                  ("llm.token_count.prompt_details.audio", 0), ("llm.token_count.prompt_details.cache_read", 0),
                  ("llm.finish_reason", finish_reason),
                  meta(step, "call_model", trig, ns, child=True,
                       extra={"ls_provider": "openai", "ls_model_name": MODEL, "ls_model_type": "chat",
                              "ls_temperature": 0.0})]
        finish(llm, "LLM", (pj(llm_inputs), True), (pj(llm_outputs), True), extra)
        # The model's reply joins the state (add_messages keeps its id).
        state = state + [ai]
        cond = start(node, "tools_condition", ms=0.1)
        finish(cond, "CHAIN", (state_json(state), True), ("tools" if turn < 3 else "__end__", False),
               [meta(step, "call_model", trig, ns, child=True)], ms=0.1)
        finish(node, "CHAIN", (node_in, True), (pj({"messages": [ai.as_dict()]}), True),
               [meta(step, "call_model", trig, ns)])
        step += 1
        if turn == 3:
            break
        # tools node: ToolNode runs the one requested tool.
        tname, call_id, args = calls[turn]
        ns = "tools:" + ids.uuid()
        tnode = start(root, "tools")
        tnode_in = state_json(state)
        ts = start(tnode, tname)
        clock.adv(3.4)
        failed = turn == 1
        tool_meta = meta(step, "tools", ["branch:to:tools"], ns, child=True)
        desc = LOOKUP_DOC if tname == "lookup_customer" else CHARGE_DOC
        inp = (str(args), True)  # str(dict): a Python repr; "{...}" looks like JSON to _is_json_parseable
        if failed and not v["handled"]:
            exc_t = clock.adv(0.05)
            tb = stack(v["error"], "ValueError")
            run_error = (repr(ValueError(v["error"])) + "\n\n".join(tb)).strip()
            ts.events.append((exc_t, "exception", [
                ("exception.type", "ValueError"), ("exception.message", v["error"]),
                ("exception.stacktrace", "".join(tb)), ("exception.escaped", "False")]))
            finish(ts, "TOOL", inp, None, [("tool.name", tname), ("tool.description", desc), tool_meta],
                   status={"code": 2, "message": run_error})
            tool_msg = Msg("tool", TOOL_ERROR_TEMPLATE.format(error=repr(ValueError(v["error"]))),
                           name=tname, tool_call_id=call_id, status="error")
            result = v["error"]
        elif failed:
            tool_msg = Msg("tool", v["error"], name=tname, tool_call_id=call_id, status="error")
            finish(ts, "TOOL", inp, (pj(tool_msg.as_dict()), True),
                   [("tool.name", tname), ("tool.description", desc), tool_meta])
            result = v["error"]
        else:
            content = pj_ascii(v["lookup_result"] if turn == 0 else v["charge2_result"])
            tool_msg = Msg("tool", content, name=tname, tool_call_id=call_id)
            finish(ts, "TOOL", inp, (pj(tool_msg.as_dict()), True),
                   [("tool.name", tname), ("tool.description", desc), tool_meta])
            result = content
        finish(tnode, "CHAIN", (tnode_in, True), (pj({"messages": [tool_msg.as_dict()]}), True),
               [meta(step, "tools", ["branch:to:tools"], ns)])
        tool_msg.kw["id"] = ids.uuid()  # add_messages gives it an id in the state
        state = state + [tool_msg]
        step += 1
        t = {"tool": tname, "call_id": call_id, "arguments": args, "result": result, "failed": failed}
        if turn >= 1:
            t["attempt"] = turn
        tools_truth.append(t)
    finish(root, "AGENT", (pj(user_input), True), (state_json(state), True))

    req = export_request([("telemetry.sdk.language", "python"), ("telemetry.sdk.name", "opentelemetry"),
                          ("telemetry.sdk.version", "1.44.0"), ("service.name", v["service"])],
                         {SCOPE: SCOPE_VERSION}, spans)
    cid = v["call_ids"]
    handled = v["handled"]
    if handled:
        how = ("charge_card raised ToolException and the tool has handle_tool_error=True: BaseTool.run turned "
               "it into ToolMessage(content=<raised text>, status='error') and ended the tool run normally, so "
               "the charge_card TOOL span is status OK with output.value {\"type\": \"tool\", \"data\": {..., "
               "\"tool_call_id\": ..., \"status\": \"error\"}} (no exception event); the ToolNode (default "
               "handle_tool_errors) passed the message on. The failure shows only as data.status \"error\" in "
               "output.value (and in the tools CHAIN span's output and the next LLM span's input).")
        exc_kind = "ToolException"
    else:
        how = ("charge_card raised ValueError; the tool run ended with on_tool_error, so the charge_card TOOL span "
               "is status ERROR (message = repr(error) followed by the formatted traceback), has an exception "
               "event and no output.value (no tool_call_id anywhere on it). ToolNode(handle_tool_errors=True) "
               "then made ToolMessage(content=\"Error: ValueError('<raised text>')\\n Please fix your mistakes.\", "
               "status='error'), which is in the tools CHAIN span's output.value and in the next ChatOpenAI span's "
               "input (llm.input_messages.N.message.content / tool_call_id).")
        exc_kind = "ValueError"
    write(fixture, [req], {
        "sdk": ("reproduced from Arize-ai/openinference python/instrumentation/openinference-instrumentation-langchain "
                "(src/openinference/instrumentation/langchain/_tracer.py as asserted by tests/test_convert_io.py, "
                "tests/test_langgraph_tool_calls.py, tests/test_instrumentor.py) @ " + OI_COMMIT
                + ": LangChainInstrumentor().instrument(), a LangGraph StateGraph(MessagesState) compiled as "
                  "'checkout-agent' with nodes call_model (ChatOpenAI.bind_tools) and tools (ToolNode), "
                  "OTLP/HTTP exporter (BatchSpanProcessor)"),
        "packages": {"openinference-instrumentation-langchain": "0.1.70", "langchain-core": "1.4.6",
                     "langchain": "1.3.9", "langchain-openai": "1.1.14", "langgraph": "1.2.11",
                     "langgraph-prebuilt": "1.1.0", "opentelemetry-sdk": "1.44.0",
                     "opentelemetry-exporter-otlp-proto-http": "1.44.0"},
        "tools": [order_tool(t) for t in tools_truth],
        "raw_values": raw_values_of(tools_truth),
        "expect": {
            "calls": [
                call("lookup_customer", "ok", None, False, "lookup_customer", cid[0]),
                call("charge_card", "error", None, handled, "charge_card", cid[1]),
                call("charge_card", "ok", "agent", False, "charge_card", cid[2]),
            ],
            "agent_spans": [
                {"name": "checkout-agent", "marker": "openinference.span.kind=AGENT (the root; the name contains 'agent')"},
            ],
            "notes": (
                how + " The model called charge_card again with a new call id and changed arguments (backup card, "
                "email, IBAN). TOOL spans (named after the tool, tool.name/tool.description set) carry the arguments "
                "as input.value = str(args): a Python dict repr ({'card_number': '...', 'amount_cents': 5190, ...}), "
                "not JSON, yet input.mime_type is application/json (the instrumentation only looks at the braces). "
                "A completed TOOL span's output.value is the ToolMessage as message_to_dict: {\"type\": \"tool\", "
                "\"data\": {\"content\", \"additional_kwargs\", \"response_metadata\", \"type\", \"name\", \"id\", "
                "\"tool_call_id\", \"artifact\", \"status\"}}; the tool returns a JSON string, so the result is "
                "JSON-escaped inside it. Call ids: on TOOL spans only inside that output.value (data.tool_call_id); "
                "otherwise on ChatOpenAI LLM spans (llm.output_messages.0.message.tool_calls.0.tool_call.id, "
                "llm.input_messages.N.message.tool_calls.M.tool_call.id and .tool_call_id). Every model turn is a "
                "call_model CHAIN span with a ChatOpenAI LLM child and a tools_condition CHAIN child (output.value "
                "'tools' / '__end__'); every tool step is a tools CHAIN span with the TOOL span under it."
            ),
        },
        "note": ("tools return json.dumps(...) strings; call_id is the scripted chat completion tool_call id; a "
                 f"failed attempt's result is the text it raised ({exc_kind})"),
    })
