// A no-framework agent: the user's own tool loop over the plain `openai` client (chat
// completions with `tools`), traced by OpenLLMetry (@traceloop/node-server-sdk, its OpenAI
// instrumentation) whose exporter is an OTLP/HTTP JSON exporter to the loopback receiver. The
// whole run is inside traceloop.withAgent and each tool execution inside traceloop.withTool
// (with the parsed arguments as its argument, so the SDK records them), so the spans join one
// trace. The client's `fetch` answers 4 scripted chat completions in process (no socket).
//  recall: charge_card THROWS on its first call; the loop catches the error around withTool and
//          sends `Error: <message>` back as the tool message; the model calls charge_card again
//          with a new call id and a backup card, which succeeds; then the final text.
// withTool never ends the span of a function whose promise rejects: the thrown execution's
// span is not exported (the script checks this and says so in the truth file's notes).
// usage: node openllmetry_openai.mjs recall <out.jsonl> <truth.json>
import fs from 'node:fs';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import * as traceloop from '@traceloop/node-server-sdk';
import OpenAI from 'openai';
import { startReceiver } from './receiver.mjs';

const [scenario = 'recall', outFile, truthFile] = process.argv.slice(2);
if (scenario !== 'recall') throw new Error(`unknown scenario ${scenario}`);
const receiver = await startReceiver(outFile);
// openai 7 is outside the instrumentation's automatic range (openai >=4 <7): hand it the module,
// as the SDK documents for ESM, which patches Chat.Completions.prototype.create directly
traceloop.initialize({
  appName: 'capture-openllmetry-openai',
  exporter: new OTLPTraceExporter({ url: receiver.url }),
  disableBatch: false,
  silenceInitializationMessage: true,
  traceloopSyncEnabled: false,
  instrumentModules: { openAI: OpenAI },
});

// distinct secret-like values (olm = OpenLLMetry OpenAI; Diners card numbers, Polish IBANs)
const calls = {
  lookup: { customer_id: 'cus_olm_Hq8Vd2Lr', email: 'tomasz.wierzbicki.olm@example.com' },
  charge: { card_number: '3056930009020044', email: 'tomasz.wierzbicki.payolm@example.com', amount_cents: 7204, iban: 'PL61109010140000071219813590' },
  // the model's second call, with a backup card
  charge2: { card_number: '3056930009027755', email: 'tomasz.wierzbicki.backupolm@example.com', amount_cents: 7204, iban: 'PL61109010140000071219814601' },
};
const results = {
  lookup: { account_ref: 'acct_olm_Zk4Pf9Tb', full_name: 'Tomasz Wierzbicki OLM-Customer', phone: '+48-512-730-418', default_card_token: 'tok_olm_card_Ge51Rw' },
  charge: { charge_id: 'ch_olm_8RtYc3Nv', receipt_email: 'ksiegowosc+7204@example.org', last4_token: 'tok_dc_olm_7755m2' },
};
const chargeError = `insufficient_funds: issuer refused card ${calls.charge.card_number} (decline ref ifd_olm_Wp47Ks)`;
const truthTools = [];

// the user's tools: plain async functions; the loop hands each the call id only for the truth file
let chargeAttempts = 0;
const TOOLS = {
  lookup_customer: async (args, call_id) => {
    truthTools.push({ tool: 'lookup_customer', call_id, arguments: args, result: JSON.stringify(results.lookup), failed: false });
    return JSON.stringify(results.lookup);
  },
  charge_card: async (args, call_id) => {
    chargeAttempts++;
    if (chargeAttempts === 1) {
      truthTools.push({ tool: 'charge_card', call_id, attempt: 1, arguments: args, result: chargeError, failed: true });
      throw new Error(chargeError);
    }
    truthTools.push({ tool: 'charge_card', call_id, attempt: chargeAttempts, arguments: args, result: JSON.stringify(results.charge), failed: false });
    return JSON.stringify(results.charge);
  },
};
const TOOL_DEFS = [
  { type: 'function', function: { name: 'lookup_customer', description: 'Look up a customer record', parameters: { type: 'object', properties: { customer_id: { type: 'string' }, email: { type: 'string' } }, required: ['customer_id', 'email'], additionalProperties: false } } },
  { type: 'function', function: { name: 'charge_card', description: 'Charge a payment card', parameters: { type: 'object', properties: { card_number: { type: 'string' }, email: { type: 'string' }, amount_cents: { type: 'number' }, iban: { type: 'string' } }, required: ['card_number', 'email', 'amount_cents', 'iban'], additionalProperties: false } } },
];

// ---- scripted chat completions behind the real OpenAI client
const id = (n) => `call_olm_${n}`;
const steps = [
  { text: 'Let me look up the customer record first.', call: [id('lookup_1'), 'lookup_customer', calls.lookup] },
  { text: 'Found the customer. Charging the card now.', call: [id('charge_1'), 'charge_card', calls.charge] },
  { text: 'The card was declined. Trying the backup card on file.', call: [id('charge_2'), 'charge_card', calls.charge2] },
  { text: 'Done: the order is paid and the receipt is on its way.' },
];
let step = 0;
const scriptedFetch = async (url, init) => {
  if (!String(url).endsWith('/chat/completions')) throw new Error(`unexpected request ${url}`);
  const req = JSON.parse(init.body);
  if (req.stream) throw new Error('unexpected stream: true');
  // every earlier tool call comes back as an assistant tool_calls entry followed by its tool message
  for (const prev of steps.slice(0, step)) {
    if (!prev.call) continue;
    if (!req.messages.some((m) => m.role === 'assistant' && m.tool_calls?.some((tc) => tc.id === prev.call[0]))) throw new Error(`request ${step}: no assistant tool call ${prev.call[0]}`);
    if (!req.messages.some((m) => m.role === 'tool' && m.tool_call_id === prev.call[0] && typeof m.content === 'string')) throw new Error(`request ${step}: no tool message for ${prev.call[0]}`);
  }
  const s = steps[Math.min(step++, steps.length - 1)];
  const message = { role: 'assistant', content: s.text, refusal: null };
  if (s.call) message.tool_calls = [{ id: s.call[0], type: 'function', function: { name: s.call[1], arguments: JSON.stringify(s.call[2]) } }];
  const body = {
    id: `chatcmpl-olm-${step}`, object: 'chat.completion', created: 1767225600 + step, model: 'scripted-model-1',
    choices: [{ index: 0, message, finish_reason: s.call ? 'tool_calls' : 'stop', logprobs: null }],
    usage: { prompt_tokens: 100 + step * 40, completion_tokens: 25, total_tokens: 125 + step * 40 },
  };
  return new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json', 'x-request-id': `req_olm_${step}` } });
};
const client = new OpenAI({ apiKey: 'sk-capture-not-a-key', baseURL: 'http://127.0.0.1:9/v1', fetch: scriptedFetch, maxRetries: 0 });

// ---- the user's own agent loop
const final = await traceloop.withAgent({ name: 'checkout-agent' }, async () => {
  const messages = [
    { role: 'system', content: 'You are a checkout assistant. Use the tools to look up customers and charge cards.' },
    { role: 'user', content: 'Please charge the customer from order 7316 for the open invoice and send the receipt.' },
  ];
  for (let turn = 0; turn < 8; turn++) {
    const completion = await client.chat.completions.create({ model: 'scripted-model-1', messages, tools: TOOL_DEFS });
    const msg = completion.choices[0].message;
    messages.push(msg);
    if (!msg.tool_calls?.length) return msg.content;
    for (const tc of msg.tool_calls) {
      const args = JSON.parse(tc.function.arguments);
      let content;
      try {
        content = await traceloop.withTool({ name: tc.function.name }, (a) => TOOLS[tc.function.name](a, tc.id), args);
      } catch (e) {
        content = `Error: ${e instanceof Error ? e.message : String(e)}`;
      }
      messages.push({ role: 'tool', tool_call_id: tc.id, content });
    }
  }
  throw new Error('the loop did not end');
});
console.error('final:', final, 'attempts:', chargeAttempts, 'model steps:', step);
await traceloop.forceFlush();
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);

// what reached the receiver (checked below, for the notes): tool spans by name
const spans = fs.readFileSync(outFile, 'utf8').split('\n').filter(Boolean)
  .flatMap((l) => JSON.parse(l).resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)));
const toolSpanCount = (name) => spans.filter((s) => s.name === `${name}.tool`).length;

// the expectation is read off what the tools saw: one lookup, a charge that threw, the model's
// re-call with a new call id that succeeded
const chargeRuns = truthTools.filter((t) => t.tool === 'charge_card');
if (chargeRuns.length !== 2 || !chargeRuns[0].failed || chargeRuns[1].failed || chargeRuns[0].call_id === chargeRuns[1].call_id) {
  throw new Error(`recall: expected a failed then an ok charge_card with two call ids, got ${JSON.stringify(chargeRuns.map((t) => [t.call_id, t.failed]))}`);
}
const SPAN = (tool) => `${tool}.tool`;
// withTool ends its span only when the function's promise resolves: the span of the execution
// that threw is started and never ended, so it is never exported (read off the receiver's file)
const exported = { lookup_customer: toolSpanCount('lookup_customer'), charge_card: toolSpanCount('charge_card') };
console.error('tool spans received:', JSON.stringify(exported));
if (exported.lookup_customer !== 1 || exported.charge_card !== 1) {
  throw new Error(`expected 1 lookup_customer.tool and 1 charge_card.tool span (the thrown execution's span never ends), got ${JSON.stringify(exported)}`);
}
const expect = {
  calls: [
    { tool: 'lookup_customer', attempts: 1, attempt_statuses: ['ok'], retry_layer: null, failed_attempts_hidden: false, span_names: [SPAN('lookup_customer')], call_ids: [truthTools[0].call_id] },
    // the failed execution: its withTool span was started but never ended, so no span says ERROR
    { tool: 'charge_card', attempts: 1, attempt_statuses: ['error'], retry_layer: null, failed_attempts_hidden: true, span_names: [SPAN('charge_card')], call_ids: [chargeRuns[0].call_id] },
    { tool: 'charge_card', attempts: 1, attempt_statuses: ['ok'], retry_layer: 'agent', failed_attempts_hidden: false, span_names: [SPAN('charge_card')], call_ids: [chargeRuns[1].call_id] },
  ],
  agent_spans: [{ name: 'checkout-agent.agent', marker: 'traceloop.span.kind=agent' }],
  notes: `No framework: the loop calls client.chat.completions.create with tools, runs each tool call inside traceloop.withTool({name}, fn, args) and appends a tool message; charge_card threw on its first call (${chargeRuns[0].call_id}), the loop caught the error around withTool and sent "Error: <message>" as the tool message, and the model called charge_card again with a new call id (${chargeRuns[1].call_id}) and changed arguments (backup card, email, IBAN), which succeeded. The failed execution has NO span in the capture: withTool (withEntity) ends its span only in the resolve branch of the function's promise, so the span of the execution that threw is never ended and never exported (${spans.length} spans: checkout-agent.agent, 4 chat scripted-model-1, lookup_customer.tool, ONE charge_card.tool, the successful re-call). The failure, its arguments and its error text exist only in the chat spans: the second chat span's gen_ai.output.messages holds the tool_call (id ${chargeRuns[0].call_id}, arguments as a JSON object), and the third and fourth chat spans' gen_ai.input.messages hold it again plus the tool_call_response whose response is "Error: <message>". Tool spans carry no call id and no status (UNSET); the tool name is traceloop.entity.name and the span name <tool>.tool; arguments are traceloop.entity.input = {"args":[],"kwargs":{<arguments>}}, the result traceloop.entity.output = the returned string JSON-encoded again. Every span, the tool spans included, is a direct child of the withAgent root checkout-agent.agent (status UNSET).`,
};
const pkgs = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies;
fs.writeFileSync(truthFile, JSON.stringify({
  sdk: `openai chat completions in a hand-written tool loop + OpenLLMetry (traceloop batch span processor, withAgent/withTool, scenario ${scenario})`, packages: pkgs, tools: truthTools,
  expect,
  note: 'tools return JSON strings; call_id is the chat completion tool_call id the loop handed the tool',
}, null, 2) + '\n');
