// OpenAI Agents JS run traced by @arizeai/openinference-instrumentation-openai-agents. The
// model is the real OpenAIChatCompletionsModel over an `openai` client whose `fetch` answers
// scripted chat completions in process (no socket), so generation spans are written.
//  recall: charge_card THROWS on its first call; a custom errorFunction turns the error into
//          text for the model (the SDK marks the function span with an error); the model calls
//          charge_card again with a new call id and a backup card.
//  hidden: charge_card RETURNS an error text on its first call without throwing (the span is
//          OK, the failure is only in output.value); the model calls it again the same way.
//  unrecovered: charge_card THROWS (errorFunction as in recall) and the model does NOT call it
//          again: it answers as if the payment went through (the only charge attempt failed).
// usage: node openai_agents.mjs <recall|hidden|unrecovered> [stream|responses] <out.jsonl> <truth.json>
// With `stream` (recall only) the same run goes through `run(agent, input, { stream: true })`:
// the model requests chat completions with `stream: true` and the scripted fetch answers as the
// API does (SSE `chat.completion.chunk` events: word text deltas, then the tool call's id and
// name and its JSON arguments in 12-character pieces, a finish_reason chunk, a usage chunk,
// `[DONE]`); the script reads every stream event, then awaits `result.completed`.
// With `responses` (recall only, not streamed, its own values) the model is the SDK's default
// one, `OpenAIResponsesModel`, over the same kind of client: it POSTs to `/responses` and the
// scripted fetch answers each request with a `response` object as the API does (`output` holds a
// `message` item with an `output_text` part and a `function_call` item with `call_id`, `name` and
// the JSON `arguments` string; instructions, tools and settings echoed from the request), and
// checks that the next request's input carries the `function_call_output` of the previous call.
import fs from 'node:fs';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OpenAIAgentsInstrumentation } from '@arizeai/openinference-instrumentation-openai-agents';
import * as agents from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';
import { startReceiver } from './receiver.mjs';

const argv = process.argv.slice(2);
const call = ['stream', 'responses'].includes(argv[1]) ? argv.splice(1, 1)[0] : 'run'; // optional 2nd argument
const [scenario = 'recall', outFile, truthFile] = argv;
if (!['hidden', 'recall', 'unrecovered'].includes(scenario)) throw new Error(`unknown scenario ${scenario}`);
const streaming = call === 'stream';
if (streaming && scenario !== 'recall') throw new Error('stream: only the recall scenario has its own values');
const responsesApi = call === 'responses';
if (responsesApi && scenario !== 'recall') throw new Error('responses: only the recall scenario has its own values');
const receiver = await startReceiver(outFile);
const exporter = new OTLPTraceExporter({ url: receiver.url });
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': `capture-openai-agents${streaming ? '-stream' : responsesApi ? '-responses' : ''}` }),
  spanProcessors: [new BatchSpanProcessor(exporter)],
});
provider.register();
new OpenAIAgentsInstrumentation({ tracerProvider: provider }).manuallyInstrument(agents);
const { Agent, run, tool, OpenAIChatCompletionsModel, OpenAIResponsesModel } = agents;

// distinct secret-like values per capture; the stream capture's t and 4 and the responses
// capture's p and 6 occur in no other one
const S = streaming ? 't' : responsesApi ? 'p' : { recall: 'r', hidden: 'h', unrecovered: 'u' }[scenario];
const D = streaming ? '4' : responsesApi ? '6' : { recall: '1', hidden: '2', unrecovered: '3' }[scenario];
const calls = {
  lookup: { customer_id: `cus_oa${S}_Tg5Ks9Wc`, email: `sofia.moreno.oa${S}@example.com` },
  charge: { card_number: `41111111111${D}1111`, email: `sofia.moreno.pay${S}@example.com`, amount_cents: 4599, iban: `ES91210004184502000${D}1332` },
  charge2: { card_number: `41111111111${D}2228`, email: `sofia.moreno.backup${S}@example.com`, amount_cents: 4599, iban: `ES91210004184502000${D}2443` },
};
const results = {
  lookup: { account_ref: `acct_oa${S}_Rf2Dm6Xn`, full_name: `Sofia Moreno OA${S.toUpperCase()}-Customer`, phone: `+34-612-${D}45-678`, default_card_token: `tok_oa${S}_card_Lw83Qp` },
  charge: { charge_id: `ch_oa${S}_3MnBv7Zx`, receipt_email: `receipts+45${D}9@example.org`, last4_token: `tok_visa_oa${S}_2228p4` },
};
const chargeError = `do_not_honor: issuer declined card ${calls.charge.card_number} (auth ref dnh_oa${S}_Qz64Hj)`;
const truthTools = [];

let chargeAttempts = 0;
const lookupCustomer = tool({
  name: 'lookup_customer', description: 'Look up a customer record',
  parameters: z.object({ customer_id: z.string(), email: z.string() }),
  execute: async (args, _ctx, details) => {
    truthTools.push({ tool: 'lookup_customer', call_id: details?.toolCall?.callId ?? null, arguments: args, result: JSON.stringify(results.lookup), failed: false });
    return JSON.stringify(results.lookup);
  },
});
const chargeCard = tool({
  name: 'charge_card', description: 'Charge a payment card',
  parameters: z.object({ card_number: z.string(), email: z.string(), amount_cents: z.number(), iban: z.string() }),
  execute: async (args, _ctx, details) => {
    chargeAttempts++;
    const call_id = details?.toolCall?.callId ?? null;
    if (chargeAttempts === 1) {
      if (scenario === 'recall' || scenario === 'unrecovered') {
        truthTools.push({ tool: 'charge_card', call_id, attempt: 1, arguments: args, result: chargeError, failed: true });
        throw new Error(chargeError);
      }
      const text = `ERROR ${chargeError}`;
      truthTools.push({ tool: 'charge_card', call_id, attempt: 1, arguments: args, result: text, failed: true });
      return text;
    }
    truthTools.push({ tool: 'charge_card', call_id, attempt: chargeAttempts, arguments: args, result: JSON.stringify(results.charge), failed: false });
    return JSON.stringify(results.charge);
  },
  // the model sees the thrown error's text (the default hides it behind a fixed message)
  errorFunction: (_ctx, error) => `charge failed: ${error instanceof Error ? error.message : String(error)}`,
});

// ---- scripted chat completions behind the real OpenAI client
const steps = [
  { text: 'Let me look up the customer record first.', call: [`call_oa${S}_lookup_1`, 'lookup_customer', calls.lookup] },
  { text: 'Found the customer. Charging the card now.', call: [`call_oa${S}_charge_1`, 'charge_card', calls.charge] },
  // unrecovered: no re-call; the model answers green although the charge failed
  ...(scenario === 'unrecovered' ? [] : [{ text: 'The card was declined. Trying the backup card on file.', call: [`call_oa${S}_charge_2`, 'charge_card', calls.charge2] }]),
  { text: scenario === 'unrecovered' ? 'Done: the payment went through, the order is paid and the receipt is on its way.' : 'Done: the order is paid and the receipt is on its way.' },
];
let step = 0;
// a step as the Chat Completions API streams it (stream: true, stream_options.include_usage):
// a role chunk, the text in word deltas, the tool call's id/type/name with empty arguments and
// then its arguments in small pieces, a chunk with finish_reason, a usage chunk with no
// choices, then [DONE]; every chunk carries usage: null except the last
const sse = (s) => {
  const base = { id: `chatcmpl-oa${S}-${step}`, object: 'chat.completion.chunk', created: 1767225600 + step, model: 'scripted-model-1', service_tier: 'default', system_fingerprint: null };
  const chunk = (delta, finish_reason = null) => ({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason }], usage: null });
  const events = [chunk({ role: 'assistant', content: '', refusal: null })];
  for (const w of s.text.match(/\S+\s*/g)) events.push(chunk({ content: w }));
  if (s.call) {
    events.push(chunk({ tool_calls: [{ index: 0, id: s.call[0], type: 'function', function: { name: s.call[1], arguments: '' } }] }));
    for (const piece of JSON.stringify(s.call[2]).match(/[^]{1,12}/g)) events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }));
  }
  events.push(chunk({}, s.call ? 'tool_calls' : 'stop'));
  events.push({ ...base, choices: [], usage: { prompt_tokens: 100 + step * 40, completion_tokens: 25, total_tokens: 125 + step * 40 } });
  const lines = [...events.map((e) => `data: ${JSON.stringify(e)}\n\n`), 'data: [DONE]\n\n'];
  const enc = new TextEncoder();
  return new ReadableStream({ pull(c) { if (lines.length) c.enqueue(enc.encode(lines.shift())); else c.close(); } });
};
// a step as the Responses API answers POST /responses (not streamed): a `response` object that
// echoes the request's instructions, tools and settings; `output` holds the assistant message
// (one output_text part) and, for a tool call, a function_call item (arguments as a JSON string)
const hex = (n, k) => (n.toString(16) + k.repeat(40)).slice(0, 40);
const responsesAnswer = (s, req) => {
  const output = [{
    id: `msg_${hex(0x6a0 + step, 'ab')}`, type: 'message', status: 'completed',
    content: [{ type: 'output_text', annotations: [], logprobs: [], text: s.text }], role: 'assistant',
  }];
  if (s.call) output.push({ id: `fc_${hex(0x6f0 + step, 'cd')}`, type: 'function_call', status: 'completed', arguments: JSON.stringify(s.call[2]), call_id: s.call[0], name: s.call[1] });
  return {
    id: `resp_${hex(0x6e0 + step, 'ef')}`, object: 'response', created_at: 1767225600 + step, status: 'completed',
    background: false, completed_at: 1767225601 + step, error: null, incomplete_details: null,
    instructions: req.instructions ?? null, max_output_tokens: req.max_output_tokens ?? null, max_tool_calls: null,
    model: 'scripted-model-1', output, parallel_tool_calls: req.parallel_tool_calls ?? true,
    previous_response_id: req.previous_response_id ?? null, prompt_cache_key: null, prompt_cache_retention: null,
    reasoning: { effort: null, summary: null }, safety_identifier: null, service_tier: 'default', store: req.store ?? true,
    temperature: req.temperature ?? 1.0, text: { format: { type: 'text' }, verbosity: 'medium', ...req.text },
    tool_choice: req.tool_choice ?? 'auto',
    tools: (req.tools ?? []).map((t) => ({ type: t.type, description: t.description ?? null, name: t.name, parameters: t.parameters, strict: t.strict ?? true })),
    top_logprobs: 0, top_p: req.top_p ?? 1.0, truncation: req.truncation ?? 'disabled',
    usage: { input_tokens: 100 + step * 40, input_tokens_details: { cache_write_tokens: 0, cached_tokens: 0 }, output_tokens: 25, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 125 + step * 40 },
    user: null, metadata: {},
  };
};
const requestInputs = []; // per /responses request: the input item types (checked below)
const scriptedFetch = async (url, init) => {
  if (responsesApi) {
    if (!String(url).endsWith('/responses')) throw new Error(`unexpected request ${url}`);
    const req = JSON.parse(init.body);
    if (req.stream !== false) throw new Error(`request stream=${req.stream}, expected false`);
    // every earlier tool call comes back as a function_call item followed by its function_call_output
    const input = Array.isArray(req.input) ? req.input : [{ role: 'user', content: req.input }];
    for (const prev of steps.slice(0, step)) {
      if (!prev.call) continue;
      if (!input.some((i) => i.type === 'function_call' && i.call_id === prev.call[0])) throw new Error(`request ${step}: no function_call ${prev.call[0]} in input`);
      if (!input.some((i) => i.type === 'function_call_output' && i.call_id === prev.call[0] && typeof i.output === 'string')) throw new Error(`request ${step}: no function_call_output for ${prev.call[0]} in input`);
    }
    requestInputs.push(input.map((i) => i.type ?? `role:${i.role}`));
    const s = steps[Math.min(step++, steps.length - 1)];
    return new Response(JSON.stringify(responsesAnswer(s, req)), { status: 200, headers: { 'content-type': 'application/json', 'x-request-id': `req_oa${S}_${step}` } });
  }
  if (!String(url).endsWith('/chat/completions')) throw new Error(`unexpected request ${url}`);
  const s = steps[Math.min(step++, steps.length - 1)];
  if (JSON.parse(init.body).stream !== streaming) throw new Error(`request stream=${JSON.parse(init.body).stream}, expected ${streaming}`);
  if (streaming) {
    return new Response(sse(s), { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8', 'x-request-id': `req_oa${S}_${step}` } });
  }
  const message = { role: 'assistant', content: s.text, refusal: null };
  if (s.call) message.tool_calls = [{ id: s.call[0], type: 'function', function: { name: s.call[1], arguments: JSON.stringify(s.call[2]) } }];
  const body = {
    id: `chatcmpl-oa${S}-${step}`, object: 'chat.completion', created: 1767225600 + step, model: 'scripted-model-1',
    choices: [{ index: 0, message, finish_reason: s.call ? 'tool_calls' : 'stop', logprobs: null }],
    usage: { prompt_tokens: 100 + step * 40, completion_tokens: 25, total_tokens: 125 + step * 40 },
  };
  return new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json', 'x-request-id': `req_oa${S}_${step}` } });
};
const client = new OpenAI({ apiKey: 'sk-capture-not-a-key', baseURL: 'http://127.0.0.1:9/v1', fetch: scriptedFetch, maxRetries: 0 });
const agent = new Agent({
  name: 'checkout-agent',
  instructions: 'You are a checkout assistant. Use the tools to look up customers and charge cards.',
  model: responsesApi ? new OpenAIResponsesModel(client, 'scripted-model-1') : new OpenAIChatCompletionsModel(client, 'scripted-model-1'),
  tools: [lookupCustomer, chargeCard],
});
const input = 'Please charge the customer from order 8841 for the open invoice and send the receipt.';
if (streaming) {
  const res = await run(agent, input, { stream: true });
  const events = {};
  for await (const ev of res) {
    const k = ev.type === 'raw_model_stream_event' ? `raw:${ev.data.type}` : ev.type === 'run_item_stream_event' ? `item:${ev.name}` : ev.type;
    events[k] = (events[k] ?? 0) + 1;
  }
  await res.completed;
  console.error('stream events:', JSON.stringify(events));
  console.error('final:', res.finalOutput, 'attempts:', chargeAttempts, 'model steps:', step);
} else {
  const res = await run(agent, input);
  console.error('final:', res.finalOutput, 'attempts:', chargeAttempts, 'model steps:', step);
  if (responsesApi) console.error('responses request inputs:', JSON.stringify(requestInputs));
}
await agents.getGlobalTraceProvider().forceFlush();
await provider.forceFlush();
await provider.shutdown();
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);

// the SDK's agent span, and the root the instrumentation opens for the SDK's trace
const agentSpans = [
  { name: 'checkout-agent', marker: 'openinference.span.kind=AGENT' },
  { name: 'Agent workflow', marker: 'openinference.span.kind=AGENT (the root; its child of the same name is a CHAIN)' },
];
const chargeRuns = truthTools.filter((t) => t.tool === 'charge_card');
if (scenario === 'unrecovered' && (chargeRuns.length !== 1 || !chargeRuns[0].failed)) {
  throw new Error(`unrecovered: expected one failed charge_card execution, got ${chargeRuns.length}`);
}
const expect = scenario === 'unrecovered' ? {
  calls: [
    { tool: 'lookup_customer', attempts: 1, attempt_statuses: ['ok'], retry_layer: null, failed_attempts_hidden: false, span_names: ['lookup_customer'], call_ids: [`call_oa${S}_lookup_1`] },
    // read off what the tool saw: one execution, which threw
    { tool: 'charge_card', attempts: chargeRuns.length, attempt_statuses: chargeRuns.map((t) => (t.failed ? 'error' : 'ok')), retry_layer: null, failed_attempts_hidden: false, span_names: chargeRuns.map(() => 'charge_card'), call_ids: chargeRuns.map((t) => t.call_id) },
  ],
  agent_spans: agentSpans,
  unrecovered: true,
  notes: 'charge_card threw on its only execution; the SDK caught it (non-fatal), marked the charge_card TOOL span with status ERROR (status.message and an exception event with the error text) and gave the model the errorFunction text, which did not call charge_card again and answered that the payment went through. The error does not propagate: the turn, checkout-agent (AGENT) and both Agent workflow spans are status OK, and the root Agent workflow output.value is the green final text. The TOOL span has no call id; call_oau_charge_1 is only on the generation spans (tool_calls.0.tool_call.id, and llm.input_messages.5.message.tool_call_id next to the error text in the last generation).',
} : {
  calls: [
    { tool: 'lookup_customer', attempts: 1, attempt_statuses: ['ok'], retry_layer: null, failed_attempts_hidden: false, span_names: ['lookup_customer'], call_ids: [`call_oa${S}_lookup_1`] },
    { tool: 'charge_card', attempts: 1, attempt_statuses: ['error'], retry_layer: null, failed_attempts_hidden: scenario === 'hidden', span_names: ['charge_card'], call_ids: [`call_oa${S}_charge_1`] },
    { tool: 'charge_card', attempts: 1, attempt_statuses: ['ok'], retry_layer: 'agent', failed_attempts_hidden: false, span_names: ['charge_card'], call_ids: [`call_oa${S}_charge_2`] },
  ],
  agent_spans: agentSpans,
  notes: scenario === 'recall'
    ? 'charge_card threw; the SDK caught it (non-fatal), marked the function span with an error and gave the model the errorFunction text; the model called charge_card again with a new call id and changed arguments (backup card, email, IBAN).'
    : 'charge_card returned an error text instead of throwing: the SDK treats it as a normal output, so the function span has no error; the model called charge_card again with a new call id and changed arguments.',
};
// what the stream capture shows (read off the spans it wrote)
if (streaming) expect.notes += ' Streamed (run with stream: true, the model reading SSE chat.completion.chunk events): the same 14 spans with the same attribute keys as openai_agents_recall. The generation spans\' output.value is the chat completion the SDK assembles from the chunks (its created is the local clock, not the chunks\' value), and their input.value lists each earlier assistant message with its tool_calls once, without the copy of the tool calls inside the message content that the non-streamed run has.';
if (responsesApi) expect.notes += ' Responses API (OpenAIResponsesModel, POST /responses, not streamed): the same 14 spans, the four LLM spans named response instead of generation. Their input.value is the SDK\'s own item list (function_call items with callId and the arguments JSON string, function_call_result items whose output is {type: text, text: <tool result or errorFunction text>}), not the request body; their output.value is the whole response object (output[] with the message and the function_call item: call_id, name, arguments; instructions and tools echoed). llm.input_messages.N holds the instructions as message 0 (system) and per earlier turn an assistant message (role only), an assistant message with tool_calls.0 (id, name, arguments) and a tool message (tool_call_id, content); llm.output_messages.0 is the text (contents.0.message_content.text), llm.output_messages.1 the function call (tool_calls.0.tool_call.function.arguments). The call id is on the response spans only, as on the generation spans.';
const pkgs = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies;
fs.writeFileSync(truthFile, JSON.stringify({
  sdk: `openai-agents js + OpenInference (batch span processor, scenario ${scenario}${streaming ? ', run(..., { stream: true })' : responsesApi ? ', OpenAIResponsesModel over POST /responses' : ''})`, packages: pkgs, tools: truthTools, expect,
  note: responsesApi
    ? 'tools return JSON strings; call_id is the Responses API function_call call_id as the tool saw it (details.toolCall.callId)'
    : 'tools return JSON strings; call_id is the chat completion tool_call id as the tool saw it (details.toolCall.callId)',
}, null, 2) + '\n');
