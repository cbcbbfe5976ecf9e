"""OpenInference openai-agents (Python) fixture: triage agent hands off to a payments agent.

Span shapes follow Arize-ai/openinference python/instrumentation/openinference-instrumentation-openai-agents
(_processor.py as asserted by tests/test_processor_span_attributes.py, tests/test_span_attribute_helpers.py,
tests/test_tool_schemas.py)."""
from __future__ import annotations

import json

from common import Clock, Ids, Span, export_request, pj, pj_ascii, raw_values_of, to_plain
from lf import CHARGE_DOC, INSTRUCTIONS, LOOKUP_DOC, PROMPT, fn_params

SCOPE = "openinference.instrumentation.openai_agents"
SCOPE_VERSION = "2.0.0"
OI_COMMIT = "1fe497f1d9f45a07eee55d97fe185e020560f9c7"
RESP_MODEL = "gpt-4o-2024-08-06"
TRIAGE_INSTRUCTIONS = "You are the triage agent. Hand every payment request to the Payments Agent."
HANDOFF_DESC = "Handoff to the Payments Agent agent to handle the request. Charges cards and e-mails receipts."
HANDOFF_PARAMS = {"additionalProperties": False, "type": "object", "properties": {}, "required": []}
FINAL = "The invoice is paid with the customer's backup card and the receipt is on its way."

V = {
    "service": "checkout-agent-openinference",
    "order": 7304,
    "handoff_call": "call_pyoah_handoff_1",
    "call_ids": ["call_pyoah_lookup_1", "call_pyoah_charge_1", "call_pyoah_charge_2"],
    "lookup_args": {"customer_id": "cus_pyoah_Vb3Nc6Ws", "email": "amara.okafor.pyoah@example.com"},
    "lookup_result": {"account_ref": "acct_pyoah_Gq8Tz1Mf", "full_name": "Amara Okafor PYOAH-Customer",
                      "phone": "+234-803-555-0147", "default_card_token": "tok_pyoah_card_Hx29Rd"},
    "charge1_args": {"card_number": "4000802711024696", "email": "amara.okafor.pay.pyoah@example.com",
                     "amount_cents": 7415, "iban": "GB14712072402422248121"},
    "error": "card_declined: insufficient funds on card 4000802711024696 (decline ref dcl_pyoah_Pz71Qe)",
    "charge2_args": {"card_number": "5143496814787567", "email": "amara.okafor.backup.pyoah@example.com",
                     "amount_cents": 7415, "iban": "GB91354235969004544299"},
    "charge2_result": {"charge_id": "ch_pyoah_2VnKx6Rb", "receipt_email": "receipts+pyoah@example.org",
                       "last4_token": "tok_mc_pyoah_7567d5"},
}


def resource() -> list:
    return [("telemetry.sdk.language", "python"), ("telemetry.sdk.name", "opentelemetry"),
            ("telemetry.sdk.version", "1.44.0"), ("service.name", V["service"])]


def fn_tool(name, description, params, strict):
    return {"name": name, "parameters": params, "strict": strict, "type": "function", "defer_loading": None,
            "description": description}


def fc(call_id, fc_id, name, args_json):
    return {"arguments": args_json, "call_id": call_id, "name": name, "type": "function_call", "id": fc_id,
            "namespace": None, "status": "completed"}


def msg(msg_id, text):
    return {"id": msg_id, "content": [{"annotations": [], "text": text, "type": "output_text", "logprobs": []}],
            "role": "assistant", "status": "completed", "type": "message", "phase": None}


def response(resp_id, created, instructions, output, tools, usage):
    """openai 2.26.0 Response (model fields in order, the API's extra `store` last)."""
    return {
        "id": resp_id, "created_at": float(created), "error": None, "incomplete_details": None,
        "instructions": instructions, "metadata": {}, "model": RESP_MODEL, "object": "response",
        "output": output, "parallel_tool_calls": True, "temperature": 1.0, "tool_choice": "auto",
        "tools": tools, "top_p": 1.0, "background": False, "completed_at": float(created + 1),
        "conversation": None, "max_output_tokens": None, "max_tool_calls": None, "previous_response_id": None,
        "prompt": None, "prompt_cache_key": None, "prompt_cache_retention": None,
        "reasoning": {"effort": None, "generate_summary": None, "summary": None}, "safety_identifier": None,
        "service_tier": "default", "status": "completed",
        "text": {"format": {"type": "text"}, "verbosity": "medium"}, "top_logprobs": 0, "truncation": "disabled",
        "usage": {"input_tokens": usage[0], "input_tokens_details": {"cached_tokens": 0}, "output_tokens": usage[1],
                  "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": usage[0] + usage[1]},
        "user": None, "store": True,
    }


def drop_none(v):
    if isinstance(v, dict):
        return {k: drop_none(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [drop_none(x) for x in v]
    return v


def llm_attrs(resp: dict, input_items: list) -> list:
    """OpenInferenceTracingProcessor.on_span_end for a ResponseSpanData."""
    a: list = [("output.mime_type", "application/json"),
               ("output.value", json.dumps(resp, separators=(",", ":"), ensure_ascii=False))]
    for i, t in enumerate(resp["tools"]):
        a.append((f"llm.tools.{i}.tool.json_schema", pj({"type": "function", "function": {
            "name": t["name"], "description": t["description"], "parameters": t["parameters"],
            "strict": t["strict"]}})))
    u = resp["usage"]
    a += [("llm.token_count.completion", u["output_tokens"]), ("llm.token_count.prompt", u["input_tokens"]),
          ("llm.token_count.total", u["total_tokens"]),
          ("llm.token_count.prompt_details.cache_read", u["input_tokens_details"]["cached_tokens"]),
          ("llm.token_count.completion_details.reasoning", u["output_tokens_details"]["reasoning_tokens"])]
    msg_idx, tc_idx = 0, 0
    for item in resp["output"]:
        if item["type"] == "message":
            p = f"llm.output_messages.{msg_idx}.message."
            a.append((p + "role", item["role"]))
            for j, c in enumerate(item["content"]):
                a.append((p + f"contents.{j}.message_content.type", "text"))
                a.append((p + f"contents.{j}.message_content.text", c["text"]))
            a.append((p + "content", "\n".join(c["text"] for c in item["content"])))
            msg_idx += 1
        else:
            a.append((f"llm.output_messages.{msg_idx}.message.role", "assistant"))
            p = f"llm.output_messages.{msg_idx}.message.tool_calls.{tc_idx}.tool_call."
            a.append((p + "id", item["call_id"]))
            a.append((p + "function.name", item["name"]))
            if item["arguments"] != "{}":
                a.append((p + "function.arguments", item["arguments"]))
            tc_idx += 1
    a.append(("llm.input_messages.0.message.role", "system"))
    a.append(("llm.input_messages.0.message.content", resp["instructions"]))
    a.append(("llm.model_name", resp["model"]))
    params = {k: v for k, v in resp.items() if k not in ("object", "tools", "usage", "output", "error", "status")}
    a.append(("llm.invocation_parameters", pj(drop_none(params))))
    a.append(("input.mime_type", "application/json"))
    a.append(("input.value", pj(input_items)))
    for i, item in enumerate(input_items, 1):
        p = f"llm.input_messages.{i}.message."
        if "type" not in item:
            a.append((p + "role", item["role"]))
            a.append((p + "content", item["content"]))
        elif item["type"] == "function_call":
            a.append((p + "role", "assistant"))
            q = p + "tool_calls.0.tool_call."
            a.append((q + "id", item["call_id"]))
            a.append((q + "function.name", item["name"]))
            if item["arguments"] != "{}":
                a.append((q + "function.arguments", item["arguments"]))
        elif item["type"] == "function_call_output":
            a.append((p + "role", "tool"))
            a.append((p + "tool_call_id", item["call_id"]))
            a.append((p + "content", item["output"]))
        elif item["type"] == "message":
            a.append((p + "role", item["role"]))
            for j, c in enumerate(item["content"]):
                a.append((p + f"contents.{j}.message_content.type", "text"))
                a.append((p + f"contents.{j}.message_content.text", c["text"]))
    return a


def main(write, order_tool, call):
    ids = Ids("pyoah")
    clock = Clock(1796457600, "pyoah")
    spans: list[Span] = []
    trace_id = ids.trace()

    def start(parent, name, attrs, us=True, ms=0.3):
        s = Span(trace_id, ids.span(), parent.span_id if parent else None, name, SCOPE,
                 clock.us(ms) if us else clock.adv(ms))
        s.attrs = list(attrs)
        spans.append(s)
        return s

    def end(s, more=(), status=None, ms=0.3, us=True):
        for k, v in more:
            s.set(k, v)
        s.end = clock.us(ms) if us else clock.adv(ms)
        s.status = status or {"code": 1}

    prompt = PROMPT.format(order=V["order"])
    strict_tools = [fn_tool("lookup_customer", LOOKUP_DOC, fn_params("lookup", True), True),
                    fn_tool("charge_card", CHARGE_DOC, fn_params("charge", True), True)]
    handoff_tool = [fn_tool("transfer_to_payments_agent", HANDOFF_DESC, HANDOFF_PARAMS, True)]

    root = start(None, "Agent workflow", [("openinference.span.kind", "AGENT")], us=False)
    # --- Triage Agent: one model call that hands off.
    triage = start(root, "Triage Agent", [("openinference.span.kind", "AGENT")])
    items: list = [{"content": prompt, "role": "user"}]
    r = start(triage, "response", [("openinference.span.kind", "LLM"), ("llm.system", "openai")])
    created = clock.now() // 1_000_000_000
    clock.adv(520)
    h_fc = fc(V["handoff_call"], "fc_" + ids.hex(48), "transfer_to_payments_agent", "{}")
    resp = response("resp_" + ids.hex(48), created, TRIAGE_INSTRUCTIONS, [h_fc], handoff_tool, (214, 15))
    end(r, llm_attrs(resp, [dict(x) for x in items]))
    h = start(triage, "handoff to Payments Agent", [("openinference.span.kind", "TOOL")])
    end(h, [("input.value", "Triage Agent"), ("output.value", "Payments Agent")], ms=0.4)
    end(triage, [("graph.node.id", "Triage Agent"), ("agent.name", "Triage Agent")])
    items.append({k: v for k, v in h_fc.items() if v is not None})
    items.append({"call_id": V["handoff_call"], "output": json.dumps({"assistant": "Payments Agent"}),
                  "type": "function_call_output"})

    # --- Payments Agent: lookup, failing charge, re-call with the backup card, answer.
    pay = start(root, "Payments Agent", [("openinference.span.kind", "AGENT")])
    calls = [("lookup_customer", V["call_ids"][0], V["lookup_args"]),
             ("charge_card", V["call_ids"][1], V["charge1_args"]),
             ("charge_card", V["call_ids"][2], V["charge2_args"])]
    results = [pj_ascii(V["lookup_result"]), None, pj_ascii(V["charge2_result"])]
    err_out = f"An error occurred while running the tool. Please try again. Error: {V['error']}"
    usages = [(402, 33), (487, 54), (581, 55), (672, 22)]
    tools_truth = []
    for turn in range(4):
        r = start(pay, "response", [("openinference.span.kind", "LLM"), ("llm.system", "openai")])
        created = clock.now() // 1_000_000_000
        clock.adv(610)
        if turn < 3:
            name, call_id, args = calls[turn]
            out = [fc(call_id, "fc_" + ids.hex(48), name, json.dumps(args, separators=(",", ":")))]
        else:
            out = [msg("msg_" + ids.hex(48), FINAL)]
        resp = response("resp_" + ids.hex(48), created, INSTRUCTIONS, out, strict_tools, usages[turn])
        end(r, llm_attrs(resp, [dict(x) for x in items]))
        if turn == 3:
            break
        name, call_id, args = calls[turn]
        args_json = out[0]["arguments"]
        f = start(pay, name, [("openinference.span.kind", "TOOL")])
        clock.adv(2.1)
        failed = turn == 1
        output = err_out if failed else results[turn]
        attrs = [("tool.name", name), ("input.value", args_json), ("input.mime_type", "application/json"),
                 ("output.value", output)]
        if output.startswith("{") and output.endswith("}"):
            attrs.append(("output.mime_type", "application/json"))
        kind = "lookup" if name == "lookup_customer" else "charge"
        attrs += [("tool.description", LOOKUP_DOC if kind == "lookup" else CHARGE_DOC),
                  ("tool.parameters", pj(fn_params(kind, True)))]
        status = None
        if failed:
            data = {"tool_name": name, "error": V["error"]}
            status = {"code": 2, "message": f"Error running tool (non-fatal): {data!r}"}
        end(f, attrs, status=status)
        t = {"tool": name, "call_id": call_id, "arguments": args,
             "result": V["error"] if failed else results[turn], "failed": failed}
        if turn >= 1:
            t["attempt"] = turn
        tools_truth.append(t)
        items.append({k: v for k, v in out[0].items() if v is not None})
        items.append({"call_id": call_id, "output": output, "type": "function_call_output"})
    end(pay, [("graph.node.id", "Payments Agent"), ("agent.name", "Payments Agent"),
              ("graph.node.parent_id", "Triage Agent")])
    end(root, us=False)

    req = export_request(resource(), {SCOPE: SCOPE_VERSION}, spans)
    ids_ = V["call_ids"]
    write("py_openinference_openai_agents_handoff", [req], {
        "sdk": ("reproduced from Arize-ai/openinference python/instrumentation/"
                "openinference-instrumentation-openai-agents (src/.../_processor.py as asserted by "
                "tests/test_processor_span_attributes.py, tests/test_span_attribute_helpers.py, "
                "tests/test_tool_schemas.py) @ " + OI_COMMIT + ": OpenAIAgentsInstrumentor().instrument(), "
                "Runner.run(triage_agent) with the OpenAI Responses model, OTLP/HTTP exporter (BatchSpanProcessor)"),
        "packages": {"openinference-instrumentation-openai-agents": "2.0.0", "openai-agents": "0.11.0",
                     "openai": "2.26.0", "opentelemetry-sdk": "1.44.0",
                     "opentelemetry-exporter-otlp-proto-http": "1.44.0"},
        "tools": [order_tool(t) for t in tools_truth],
        "raw_values": raw_values_of(tools_truth),
        "expect": {
            "calls": [
                call("lookup_customer", "ok", None, False, "lookup_customer", ids_[0]),
                call("charge_card", "error", None, False, "charge_card", ids_[1]),
                call("charge_card", "ok", "agent", False, "charge_card", ids_[2]),
            ],
            "agent_spans": [
                {"name": "Payments Agent", "marker": "openinference.span.kind=AGENT (graph.node.parent_id=Triage Agent)"},
                {"name": "Triage Agent", "marker": "openinference.span.kind=AGENT"},
                {"name": "Agent workflow", "marker": "openinference.span.kind=AGENT (the root)"},
            ],
            "notes": (
                "The Triage Agent's model called transfer_to_payments_agent (call id " + V["handoff_call"] + "); "
                "the SDK ran the handoff: a TOOL span 'handoff to Payments Agent' (openinference.span.kind=TOOL, "
                "input.value 'Triage Agent', output.value 'Payments Agent', no tool.name, no call id, status OK) "
                "under the Triage Agent span. It is agent routing, not a tool execution: it is not in calls. The "
                "Payments Agent (a sibling AGENT span under the root, graph.node.parent_id 'Triage Agent') got the "
                "whole history (user message, the transfer function_call and its output '{\"assistant\": "
                "\"Payments Agent\"}'). charge_card raised; the SDK caught it (non-fatal) and gave the model the "
                "default failure text; the model called charge_card again with a new call id and changed "
                "arguments (backup card, email, IBAN). The failed TOOL span is status ERROR with message "
                "\"Error running tool (non-fatal): {'tool_name': 'charge_card', 'error': '<raised text>'}\" (a "
                "Python dict repr), no exception event, output.value the failure text. TOOL spans carry no call "
                "id: call ids are only on the 'response' LLM spans (llm.output_messages.0.message.tool_calls.0."
                "tool_call.id, llm.input_messages.N.message.tool_calls.0.tool_call.id / .tool_call_id, and inside "
                "input.value / output.value)."
            ),
        },
        "note": ("tools return json.dumps(...) strings; call_id is the scripted Responses API function_call "
                 "call_id; a failed attempt's result is the text it raised"),
    })
