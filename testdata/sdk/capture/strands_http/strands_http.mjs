// A Strands Agents TS tool that calls a payment service over loopback HTTP; the service runs
// in the same process and answers 503 to the first two sends, then 200. The HTTP client
// retries inside ONE tool execution, so the tool span holds several CLIENT sends, each with
// the service's SERVER span under it (@opentelemetry/instrumentation-http).
//  undici:    undici.request through a RetryAgent (maxRetries 3, statusCodes [503], POST
//             allowed), traced by @opentelemetry/instrumentation-undici.
//  retryloop: node:http request in a hand-written loop (3 sends at most, 10 ms apart),
//             traced by @opentelemetry/instrumentation-http.
// usage: node strands_http.mjs <undici|retryloop> <out.jsonl> <truth.json>
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { startReceiver } from './receiver.mjs';

const [scenario = 'undici', outFile, truthFile] = process.argv.slice(2);
if (!['undici', 'retryloop'].includes(scenario)) throw new Error(`unknown scenario ${scenario}`);
// the receiver's own server and the exporter's sends must not be traced
const receiver = await startReceiver(outFile);
const receiverPort = new URL(receiver.url).port;
const exporter = new OTLPTraceExporter({ url: receiver.url });
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'capture-strands-http' }),
  spanProcessors: [new BatchSpanProcessor(exporter)],
});
provider.register();
registerInstrumentations({
  tracerProvider: provider,
  instrumentations: [
    new HttpInstrumentation({
      ignoreIncomingRequestHook: (req) => req.socket?.localPort === Number(receiverPort),
      ignoreOutgoingRequestHook: (opts) => String(opts.port) === receiverPort,
    }),
    new UndiciInstrumentation(),
  ],
});
// required after the instrumentations are registered, so that they patch these modules
const require = createRequire(import.meta.url);
const http = require('node:http');
const undici = require('undici');
const { Agent, Model, tool } = await import('@strands-agents/sdk');
const { z } = await import('zod');

const S = scenario === 'undici' ? 'u' : 'l';
const D = scenario === 'undici' ? '3' : '4';
const args = { card_number: `35301113333${D}0000`, email: `kenji.sato.pay${S}@example.com`, amount_cents: 7820, iban: `CH93007620116238529${D}7` };
const result = { charge_id: `ch_sh${S}_8TkWp3Qd`, receipt_email: `receipts+78${D}2@example.org`, last4_token: `tok_jcb_sh${S}_0000n5` };
const FAILS = 2;

// ---- payment service (same process, loopback)
const sends = [];
const service = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    const n = sends.length + 1;
    const status = n <= FAILS ? 503 : 200;
    sends.push({ send: n, status });
    if (status === 503) res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' }).end('{"error":"upstream busy"}');
    else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
  });
});
await new Promise((r) => service.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${service.address().port}`;

const retryAgent = new undici.RetryAgent(new undici.Agent(), {
  maxRetries: 3, minTimeout: 10, maxTimeout: 20, timeoutFactor: 1, statusCodes: [503], methods: ['POST'], errorCodes: ['ECONNRESET'],
});
async function postUndici(path, payload) {
  const res = await undici.request(base + path, { method: 'POST', dispatcher: retryAgent, headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload) });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`payment service answered ${res.statusCode}`);
  return text;
}
function postOnce(path, payload) {
  return new Promise((resolve, reject) => {
    const req = http.request(base + path, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(payload));
  });
}
async function postRetryLoop(path, payload) {
  for (let attempt = 1; attempt <= 3; attempt++) {
    const r = await postOnce(path, payload);
    if (r.status === 200) return r.text;
    if (r.status !== 503 || attempt === 3) throw new Error(`payment service answered ${r.status}`);
    await new Promise((w) => setTimeout(w, 10));
  }
  throw new Error('unreachable');
}

const truthTools = [];
const chargeCard = tool({
  name: 'charge_card',
  description: 'Charge a payment card',
  inputSchema: z.object({ card_number: z.string(), email: z.string(), amount_cents: z.number(), iban: z.string() }),
  callback: async (input) => {
    const text = await (scenario === 'undici' ? postUndici : postRetryLoop)('/v1/charges', input);
    truthTools.push({ tool: 'charge_card', arguments: input, result: text, failed: false });
    return text;
  },
});

// ---- scripted model
const callId = `tooluse_sh${S}_charge_1`;
const steps = [
  { text: 'Charging the card now.', call: [callId, 'charge_card', args] },
  { text: 'Done: the order is paid and the receipt is on its way.' },
];
class ScriptedModel extends Model {
  constructor() { super(); this.config = { modelId: 'scripted-model-1' }; this.step = 0; }
  updateConfig(c) { this.config = { ...this.config, ...c }; }
  getConfig() { return this.config; }
  async *stream() {
    const s = steps[Math.min(this.step++, steps.length - 1)];
    yield { type: 'modelMessageStartEvent', role: 'assistant' };
    yield { type: 'modelContentBlockStartEvent' };
    yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'textDelta', text: s.text } };
    yield { type: 'modelContentBlockStopEvent' };
    if (s.call) {
      yield { type: 'modelContentBlockStartEvent', start: { type: 'toolUseStart', name: s.call[1], toolUseId: s.call[0] } };
      yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'toolUseInputDelta', input: JSON.stringify(s.call[2]) } };
      yield { type: 'modelContentBlockStopEvent' };
    }
    yield { type: 'modelMessageStopEvent', stopReason: s.call ? 'toolUse' : 'endTurn' };
    yield { type: 'modelMetadataEvent', usage: { inputTokens: 100 + this.step * 40, outputTokens: 25, totalTokens: 125 + this.step * 40 }, metrics: { latencyMs: 5 } };
  }
}
const agent = new Agent({
  name: 'checkout-agent',
  model: new ScriptedModel(),
  tools: [chargeCard],
  systemPrompt: 'You are a checkout assistant. Use the tools to charge cards.',
  printer: false,
});
const res = await agent.invoke('Please charge the customer from order 4417 for the open invoice.');
console.error('final:', String(res).slice(0, 100), 'sends:', JSON.stringify(sends));
await new Promise((r) => service.close(r));
await retryAgent.close?.();
await provider.forceFlush();
await provider.shutdown();
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);

for (const t of truthTools) t.call_id = callId;
// observed, not scripted: does any instrumentation number the re-sends?
const resendCountSeen = fs.readFileSync(outFile, 'utf8').includes('"http.request.resend_count"');
const pkgs = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies;
fs.writeFileSync(truthFile, JSON.stringify({
  sdk: `strands-agents ts tool over loopback HTTP (${scenario === 'undici' ? 'undici RetryAgent + instrumentation-undici' : 'node:http retry loop + instrumentation-http'}, batch span processor)`,
  packages: pkgs, tools: truthTools,
  expect: {
    calls: [{
      tool: 'charge_card', attempts: sends.length, attempt_statuses: sends.map((s) => (s.status === 200 ? 'ok' : 'error')),
      retry_layer: 'http', failed_attempts_hidden: false, span_names: ['execute_tool charge_card'], call_ids: [callId],
    }],
    agent_spans: [{ name: 'invoke_agent checkout-agent', marker: 'gen_ai.operation.name=invoke_agent' }],
    http_sends: sends,
    http_resend_count_seen: resendCountSeen,
    notes: `one model tool call, one tool execution (execute_tool span status OK), ${sends.length} HTTP sends of POST /v1/charges under it: ${sends.map((s) => s.status).join(', ')}. ${scenario === 'undici' ? 'undici RetryAgent re-sent after each 503' : 'a hand-written loop re-sent after each 503'}; each send is a CLIENT span with a SERVER child from the in-process service. http.request.resend_count ${resendCountSeen ? 'IS' : 'is NOT'} set on any send.`,
  },
  note: 'the tool saw only the final response; the HTTP sends are in expect.http_sends (status per send as the service answered)',
}, null, 2) + '\n');
