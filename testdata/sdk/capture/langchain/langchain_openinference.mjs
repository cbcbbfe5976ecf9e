// LangChain.js createAgent (LangGraph) run with fakeModel() from @langchain/core/testing,
// traced by @arizeai/openinference-instrumentation-langchain; toolRetryMiddleware retries a
// tool that throws once (executor retry: same call id, same arguments, 2 executions).
//  batch / simple: the span processor; the second execution succeeds.
//  unrecovered (batch): charge_card throws on every execution; toolRetryMiddleware({maxRetries:
//          1}) re-runs it once (two executions of one call, both thrown), then hands the model its
//          failure ToolMessage (status "error"); the model answers as if the payment went through.
//          Writes the `expect` block.
// usage: node langchain_openinference.mjs <batch|simple|unrecovered> [stream|chatopenai] <out.jsonl> <truth.json>
// With `stream` (batch only) the same run is consumed through `agent.stream(input, { streamMode:
// ['updates', 'messages'] })` to its end, and the fake model streams: the queued AIMessage comes
// out of `_streamResponseChunks` as AIMessageChunks (text in word deltas, each tool call as
// tool_call_chunks: id and name, then its JSON args in 12-character pieces, then a chunk with
// finish_reason and usage). fakeModel() has no `_streamResponseChunks` (BaseChatModel would hand
// LangGraph's messages handler the whole message at the end), so the script subclasses it; the
// `messages` mode registers the handler that makes BaseChatModel stream. Writes the `expect`
// block.
// With `chatopenai` (batch only, its own values) the model is the provider class users run,
// `new ChatOpenAI({ model: 'gpt-4o-mini', apiKey: 'test', configuration: { fetch } })` from
// @langchain/openai (over the `openai` client), not fakeModel(): the scripted `fetch` answers
// the three POST /chat/completions requests in process (no socket) as the API does when not
// streaming (a `chat.completion` object; a tool call as `tool_calls` with the arguments as a
// JSON string), and checks that each later request carries every earlier tool call (assistant
// `tool_calls`) and its tool message. The global `fetch` is replaced by one that refuses, so
// nothing else can reach the network. Same scenario and truth file as `batch`; the packages
// @langchain/openai and openai are listed only in this truth file (the other modes load
// neither).
import fs from 'node:fs';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { LangChainInstrumentation } from '@arizeai/openinference-instrumentation-langchain';
import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { startReceiver } from './receiver.mjs';

const argv = process.argv.slice(2);
const call = ['stream', 'chatopenai'].includes(argv[1]) ? argv.splice(1, 1)[0] : 'invoke'; // optional 2nd argument
const [mode = 'batch', outFile, truthFile] = argv;
if (!['batch', 'simple', 'unrecovered'].includes(mode)) throw new Error(`unknown mode ${mode}`);
const streaming = call === 'stream';
if (streaming && mode !== 'batch') throw new Error('stream: only the batch mode has its own values');
const chatOpenAI = call === 'chatopenai';
if (chatOpenAI && mode !== 'batch') throw new Error('chatopenai: only the batch mode has its own values');
// chatopenai: only the scripted fetch may answer; anything else that fetches is refused
const refusedFetches = [];
if (chatOpenAI) globalThis.fetch = async (url) => { refusedFetches.push(String(url)); throw new Error(`no network in a capture: fetch ${url}`); };
const unrecovered = mode === 'unrecovered';
const proc = unrecovered ? 'batch' : mode;
const receiver = await startReceiver(outFile);
const exporter = new OTLPTraceExporter({ url: receiver.url });
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': `capture-langchain-openinference${streaming ? '-stream' : chatOpenAI ? '-chatopenai' : ''}` }),
  spanProcessors: [proc === 'batch' ? new BatchSpanProcessor(exporter) : new SimpleSpanProcessor(exporter)],
});
provider.register();
new LangChainInstrumentation({ tracerProvider: provider }).manuallyInstrument(CallbackManagerModule);

const { createAgent, toolRetryMiddleware, tool } = await import('langchain');
const { AIMessage, AIMessageChunk, HumanMessage } = await import('@langchain/core/messages');
const { ChatGenerationChunk } = await import('@langchain/core/outputs');
const { fakeModel, FakeBuiltModel } = await import('@langchain/core/testing');
const { z } = await import('zod');

// distinct secret-like values per capture; the stream capture's t and 6 and the chatopenai
// capture's o and 7 occur in no other one
const S = streaming ? 't' : chatOpenAI ? 'o' : { batch: 'b', simple: 's', unrecovered: 'u' }[mode];
const D = streaming ? '6' : chatOpenAI ? '7' : { batch: '3', simple: '4', unrecovered: '5' }[mode];
const calls = {
  lookup: { customer_id: `cus_lc${S}_Zr6Yh1Nd`, email: `li.wei.lc${S}@example.com` },
  charge: { card_number: `37828224631${D}005`, email: `li.wei.pay${S}@example.com`, amount_cents: 8800, iban: `GB33BUKB2020155555${D}555` },
};
const results = {
  lookup: { account_ref: `acct_lc${S}_Pd3Wq7Tb`, full_name: `Li Wei LC${S.toUpperCase()}-Customer`, phone: `+44-7700-90${D}123`, default_card_token: `tok_lc${S}_card_Qe55Vn` },
  charge: { charge_id: `ch_lc${S}_7YhGt4Ks`, receipt_email: `invoices+88${D}0@example.org`, last4_token: `tok_amex_lc${S}_0005q1` },
};
const chargeError = `gateway_timeout: acquirer did not answer for card ${calls.charge.card_number} (trace gw_lc${S}_Mn81Pz)`;
// unrecovered: every execution throws, each with its own trace ref
const failRefs = [`gw_lc${S}_Mn81Pz`, `gw_lc${S}_Rk47Tx`];
const failures = unrecovered ? Infinity : 1;
const truthTools = [];

let chargeAttempts = 0;
const lookupCustomer = tool(async (args, config) => {
  truthTools.push({ tool: 'lookup_customer', call_id: config?.toolCall?.id ?? null, arguments: args, result: results.lookup, failed: false });
  return JSON.stringify(results.lookup);
}, { name: 'lookup_customer', description: 'Look up a customer record', schema: z.object({ customer_id: z.string(), email: z.string() }) });
const chargeCard = tool(async (args, config) => {
  chargeAttempts++;
  if (chargeAttempts <= failures) {
    const text = unrecovered ? `gateway_timeout: acquirer did not answer for card ${args.card_number} (trace ${failRefs[chargeAttempts - 1]})` : chargeError;
    truthTools.push({ tool: 'charge_card', call_id: config?.toolCall?.id ?? null, attempt: chargeAttempts, arguments: args, result: text, failed: true });
    throw new Error(text);
  }
  truthTools.push({ tool: 'charge_card', call_id: config?.toolCall?.id ?? null, attempt: chargeAttempts, arguments: args, result: results.charge, failed: false });
  return JSON.stringify(results.charge);
}, { name: 'charge_card', description: 'Charge a payment card', schema: z.object({ card_number: z.string(), email: z.string(), amount_cents: z.number(), iban: z.string() }) });

const id = (n) => (unrecovered || streaming || chatOpenAI ? `call_lc${S}_${n}` : `call_lc_${n}`);
// stream: fakeModel() with the streaming a provider integration has. The queued message is taken
// by FakeBuiltModel._generate (which records the call) and cut into chunks; bindTools is
// FakeBuiltModel's, returning this class so that the bound model streams too.
class StreamingFakeModel extends FakeBuiltModel {
  bindTools(tools) {
    const next = new StreamingFakeModel();
    next.queue = this.queue;
    next._alwaysThrowError = this._alwaysThrowError;
    next._structuredResponseValue = this._structuredResponseValue;
    next._tools = [...this._tools, ...tools];
    next._state = this._state;
    return next.withConfig({});
  }
  async *_streamResponseChunks(messages, options, runManager) {
    const { generations: [{ message }] } = await this._generate(messages, options, runManager);
    const emit = async function* (fields, text = '') {
      const chunk = new ChatGenerationChunk({ message: new AIMessageChunk(fields), text });
      yield chunk;
      await runManager?.handleLLMNewToken(text, undefined, undefined, undefined, undefined, { chunk });
    };
    for (const w of message.text.match(/\S+\s*/g) ?? []) yield* emit({ content: w }, w);
    for (const [index, tc] of (message.tool_calls ?? []).entries()) {
      yield* emit({ content: '', tool_call_chunks: [{ type: 'tool_call_chunk', index, id: tc.id, name: tc.name, args: '' }] });
      for (const piece of JSON.stringify(tc.args).match(/[^]{1,12}/g)) yield* emit({ content: '', tool_call_chunks: [{ type: 'tool_call_chunk', index, args: piece }] });
    }
    const turn = this._state.callIndex;
    yield* emit({
      content: '',
      response_metadata: { finish_reason: message.tool_calls?.length ? 'tool_calls' : 'stop', model_name: 'fake-streaming-model' },
      usage_metadata: { input_tokens: 100 + turn * 40, output_tokens: 25, total_tokens: 125 + turn * 40 },
    });
  }
}
// the model's turns: text + lookup_customer call, text + charge_card call, final text
const turns = [
  { text: 'Let me look up the customer record first.', call: [id('lookup_1'), 'lookup_customer', calls.lookup] },
  { text: 'Found the customer. Charging the card now.', call: [id('charge_1'), 'charge_card', calls.charge] },
  // unrecovered: the last execution failed, yet the model answers green
  { text: unrecovered ? 'Done: the payment went through, the order is paid and the receipt is on its way.' : 'Done: the order is paid and the receipt is on its way.' },
];
// chatopenai: the turns as the Chat Completions API answers POST /chat/completions (not
// streamed); each request must carry every earlier tool call and the tool's answer to it
const toolResults = { lookup_customer: results.lookup, charge_card: results.charge };
let step = 0;
const scriptedFetch = async (url, init) => {
  if (String(url) !== 'https://api.openai.com/v1/chat/completions') throw new Error(`unexpected request ${url}`);
  const req = JSON.parse(init.body);
  if (req.stream || req.model !== 'gpt-4o-mini') throw new Error(`request ${step}: stream=${req.stream} model=${req.model}`);
  const names = (req.tools ?? []).map((t) => t.type === 'function' && t.function.name).sort().join();
  if (names !== 'charge_card,lookup_customer') throw new Error(`request ${step}: tools ${names}`);
  for (const [callId, name, args] of turns.slice(0, step).map((t) => t.call).filter(Boolean)) {
    const asked = req.messages.find((m) => m.role === 'assistant' && m.tool_calls?.some((tc) => tc.id === callId));
    const tc = asked?.tool_calls.find((x) => x.id === callId);
    if (!tc || tc.function.name !== name || JSON.stringify(JSON.parse(tc.function.arguments)) !== JSON.stringify(args)) throw new Error(`request ${step}: no assistant tool call ${callId}`);
    const answered = req.messages.find((m) => m.role === 'tool' && m.tool_call_id === callId);
    if (answered?.content !== JSON.stringify(toolResults[name])) throw new Error(`request ${step}: no tool message for ${callId}`);
  }
  const s = turns[step++];
  if (!s) throw new Error(`request ${step}: no scripted turn left`);
  const message = { role: 'assistant', content: s.text, refusal: null, annotations: [] };
  if (s.call) message.tool_calls = [{ id: s.call[0], type: 'function', function: { name: s.call[1], arguments: JSON.stringify(s.call[2]) } }];
  const body = {
    id: `chatcmpl-lc${S}-${step}`, object: 'chat.completion', created: 1767225600 + step, model: 'gpt-4o-mini-2024-07-18',
    choices: [{ index: 0, message, logprobs: null, finish_reason: s.call ? 'tool_calls' : 'stop' }],
    usage: {
      prompt_tokens: 100 + step * 40, completion_tokens: 25, total_tokens: 125 + step * 40,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    },
    service_tier: 'default', system_fingerprint: 'fp_lc0scripted',
  };
  return new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json', 'x-request-id': `req_lc${S}_${step}` } });
};
let model;
if (chatOpenAI) {
  const { ChatOpenAI } = await import('@langchain/openai');
  model = new ChatOpenAI({ model: 'gpt-4o-mini', apiKey: 'test', configuration: { fetch: scriptedFetch } });
} else {
  model = turns.reduce(
    (m, t) => m.respond(t.call ? new AIMessage({ content: t.text, tool_calls: [{ id: t.call[0], name: t.call[1], args: t.call[2], type: 'tool_call' }] }) : new AIMessage(t.text)),
    streaming ? new StreamingFakeModel() : fakeModel(),
  );
}

const agent = createAgent({
  name: 'checkout-agent',
  model,
  tools: [lookupCustomer, chargeCard],
  systemPrompt: 'You are a checkout assistant. Use the tools to look up customers and charge cards.',
  middleware: [toolRetryMiddleware({ maxRetries: unrecovered ? 1 : 2, initialDelayMs: 10, jitter: false, tools: ['charge_card'] })],
});
const input = { messages: [new HumanMessage('Please charge the customer from order 5521 for the open invoice and send the receipt.')] };
if (streaming) {
  const parts = {};
  let final;
  for await (const [streamMode, chunk] of await agent.stream(input, { streamMode: ['updates', 'messages'] })) {
    const k = streamMode === 'updates' ? `updates:${Object.keys(chunk).join('+')}` : `messages:${chunk[0].constructor.name}`;
    parts[k] = (parts[k] ?? 0) + 1;
    if (streamMode === 'updates' && chunk.model_request) final = chunk.model_request.messages.at(-1);
  }
  console.error('stream parts:', JSON.stringify(parts));
  console.error('final:', final?.content);
} else {
  const res = await agent.invoke(input);
  console.error('final:', res.messages.at(-1).content, 'messages:', res.messages.length);
}
await provider.forceFlush();
await provider.shutdown();
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);
// tool results as the tool returned them: JSON strings
for (const t of truthTools) if (!t.failed) t.result = JSON.stringify(t.result);
// what the stream capture shows (read off the spans it wrote)
const STREAM_NOTES = 'charge_card threw on its first execution and toolRetryMiddleware re-ran the same call (call_lct_charge_1, same arguments), which succeeded. Both charge_card TOOL spans are children of ONE tools CHAIN span: the first has status ERROR with status.message = the thrown text plus the stack trace and an exception event, the second is OK; they carry no call id. Streaming (agent.stream with streamMode updates+messages) changes no span or attribute key except on the LLM spans, which take the model class name (StreamingFakeModel, the script\'s streaming subclass of FakeBuiltModel) and gain llm.finish_reason and llm.token_count.* from the last chunk. The payload moves inside values: the LLM spans\' output.value and the model_request CHAIN spans\' output.value (the Command update) hold the aggregated AIMessageChunk, whose tool_call_chunks[].args is the tool arguments as a JSON string next to the parsed tool_calls[].args object; in the graph state (input.value of later spans, the root output.value) the message is an AIMessage without tool_call_chunks.';
// @langchain/openai and openai are loaded by the chatopenai run only
const pkgs = Object.fromEntries(Object.entries(JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies)
  .filter(([name]) => chatOpenAI || !['@langchain/openai', 'openai'].includes(name)));
if (chatOpenAI) {
  // what the batch run does, checked: 3 model requests, one lookup, one charge_card call whose
  // first execution threw and whose re-run by the middleware (same call id) succeeded
  const chargeRuns = truthTools.filter((t) => t.tool === 'charge_card');
  const lookups = truthTools.filter((t) => t.tool === 'lookup_customer');
  if (step !== turns.length || refusedFetches.length || lookups.length !== 1 || chargeRuns.length !== 2 || chargeRuns.some((t) => t.call_id !== id('charge_1')) || !chargeRuns[0].failed || chargeRuns[1].failed) {
    throw new Error(`chatopenai: expected ${turns.length} requests, no other fetch, 1 lookup and 2 charge_card executions of ${id('charge_1')} (failed, ok), got ${step} requests, fetches ${JSON.stringify(refusedFetches)}, ${JSON.stringify(truthTools.map((t) => [t.tool, t.call_id, t.failed]))}`);
  }
  fs.writeFileSync(truthFile, JSON.stringify({ sdk: `langchain.js createAgent + ChatOpenAI (@langchain/openai, Chat Completions over a scripted fetch) + OpenInference (${proc} span processor)`, packages: pkgs, tools: truthTools, note: 'tools return JSON strings; charge_card attempts 1 and 2 are one model tool call retried by toolRetryMiddleware (same call id and arguments); call_id is the tool call id the tool saw (config.toolCall.id), the id the scripted chat completion gave the tool call' }, null, 2) + '\n');
} else if (streaming) {
  // the expectation is read off what the tools saw: one lookup, then one charge_card call whose
  // first execution threw and whose re-run by the middleware (same call id) succeeded
  const chargeRuns = truthTools.filter((t) => t.tool === 'charge_card');
  const lookups = truthTools.filter((t) => t.tool === 'lookup_customer');
  if (lookups.length !== 1 || chargeRuns.length !== 2 || chargeRuns.some((t) => t.call_id !== id('charge_1')) || !chargeRuns[0].failed || chargeRuns[1].failed) {
    throw new Error(`stream: expected 1 lookup and 2 charge_card executions of ${id('charge_1')} (failed, ok), got ${JSON.stringify(truthTools.map((t) => [t.tool, t.call_id, t.failed]))}`);
  }
  const expect = {
    calls: [
      { tool: 'lookup_customer', attempts: 1, attempt_statuses: ['ok'], retry_layer: null, failed_attempts_hidden: false, span_names: ['lookup_customer'], call_ids: lookups.map((t) => t.call_id) },
      {
        tool: 'charge_card', attempts: chargeRuns.length, attempt_statuses: chargeRuns.map((t) => (t.failed ? 'error' : 'ok')), retry_layer: 'tool_runtime', failed_attempts_hidden: false,
        span_names: chargeRuns.map(() => 'charge_card'), call_ids: chargeRuns.map((t) => t.call_id),
      },
    ],
    agent_spans: [{ name: 'checkout-agent', marker: 'openinference.span.kind=CHAIN (the LangGraph root; OpenInference has no AGENT kind here)' }],
    notes: STREAM_NOTES,
  };
  fs.writeFileSync(truthFile, JSON.stringify({
    sdk: 'langchain.js createAgent + OpenInference (batch span processor, agent.stream with streamMode updates+messages)', packages: pkgs, tools: truthTools, expect,
    note: 'tools return JSON strings; charge_card attempts 1 and 2 are one model tool call retried by toolRetryMiddleware (same call id and arguments); call_id is the tool call id the tool saw (config.toolCall.id)',
  }, null, 2) + '\n');
} else if (!unrecovered) {
  fs.writeFileSync(truthFile, JSON.stringify({ sdk: `langchain.js createAgent + OpenInference (${proc} span processor)`, packages: pkgs, tools: truthTools, note: 'tools return JSON strings; charge_card attempts 1 and 2 are one model tool call retried by toolRetryMiddleware (same call id and arguments)' }, null, 2) + '\n');
} else {
  // the expectation is read off what the tool saw (one call id, every execution threw)
  const chargeRuns = truthTools.filter((t) => t.tool === 'charge_card');
  if (chargeRuns.length !== 2 || chargeRuns.some((t) => !t.failed || t.call_id !== id('charge_1'))) {
    throw new Error(`unrecovered: expected 2 failed charge_card executions of ${id('charge_1')}, got ${JSON.stringify(chargeRuns.map((t) => [t.call_id, t.failed]))}`);
  }
  const expect = {
    calls: [
      { tool: 'lookup_customer', attempts: 1, attempt_statuses: ['ok'], retry_layer: null, failed_attempts_hidden: false, span_names: ['lookup_customer'], call_ids: [id('lookup_1')] },
      {
        tool: 'charge_card', attempts: chargeRuns.length, attempt_statuses: chargeRuns.map((t) => (t.failed ? 'error' : 'ok')), retry_layer: 'tool_runtime', failed_attempts_hidden: false,
        span_names: chargeRuns.map(() => 'charge_card'), call_ids: chargeRuns.map((t) => t.call_id),
      },
    ],
    agent_spans: [{ name: 'checkout-agent', marker: 'openinference.span.kind=CHAIN (the LangGraph root; OpenInference has no AGENT kind here)' }],
    unrecovered: true,
    notes: 'charge_card threw on both executions of ONE call (call_lcu_charge_1, same arguments): toolRetryMiddleware (maxRetries 1) re-ran it once, then returned its failure ToolMessage (status "error", content "Tool \'charge_card\' failed after 2 attempts with Error", without the thrown text) to the model, which answered that the payment went through. Both charge_card TOOL spans are children of ONE tools CHAIN span, status ERROR with status.message = the thrown text plus the stack trace and an exception event (exception.message, same text); they have no output.value and no call id, identical input.value and identical metadata (same langgraph_step, langgraph_path and langgraph_checkpoint_ns, unlike two calls of one turn). The tools CHAIN span is status OK; its output.value holds the middleware\'s ToolMessage (tool_call_id call_lcu_charge_1, status error), which the last FakeBuiltModel LLM span shows as llm.input_messages.5.message.content. The root checkout-agent (CHAIN) is status OK and its output.value ends with the green final AIMessage.',
  };
  fs.writeFileSync(truthFile, JSON.stringify({
    sdk: 'langchain.js createAgent + OpenInference (batch span processor, scenario unrecovered)', packages: pkgs, tools: truthTools, expect,
    note: 'tools return JSON strings; charge_card attempts 1 and 2 are one model tool call re-run by toolRetryMiddleware (same call id and arguments), both threw; call_id is the tool call id the tool saw (config.toolCall.id)',
  }, null, 2) + '\n');
}
