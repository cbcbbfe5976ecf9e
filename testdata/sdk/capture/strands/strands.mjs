// Strands Agents TS run with a scripted Model subclass; tools come from an in-process MCP
// McpServer over InMemoryTransport via McpClient. charge_card returns isError: true once;
// an AfterToolCallEvent hook sets event.retry = true, the second attempt succeeds.
// usage: node strands.mjs <batch|simple> [stream] <out.jsonl> <truth.json>
// Without `stream` the script calls `agent.invoke`; with it (batch only, its own values) the same
// run goes through `agent.stream(prompt)`, every event is read with `for await` and the result is
// taken from the last event (`agentResultEvent`), and the scripted model streams as a provider
// does: the text in word deltas, the tool input JSON in 12-character `toolUseInputDelta` pieces.
import fs from 'node:fs';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Agent, Model, McpClient, AfterToolCallEvent } from '@strands-agents/sdk';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { z } from 'zod';
import { startReceiver } from './receiver.mjs';

const argv = process.argv.slice(2);
const call = argv[1] === 'stream' ? argv.splice(1, 1)[0] : 'invoke'; // optional 2nd argument
const [proc = 'batch', outFile, truthFile] = argv;
const streaming = call === 'stream';
const latest = (process.env.OTEL_SEMCONV_STABILITY_OPT_IN ?? '').includes('gen_ai_latest_experimental');
if (streaming && (proc !== 'batch' || latest)) throw new Error('stream: only batch without the semconv opt-in has its own values');
const receiver = await startReceiver(outFile);
const exporter = new OTLPTraceExporter({ url: receiver.url });
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': `capture-strands${streaming ? '-stream' : ''}` }),
  spanProcessors: [proc === 'batch' ? new BatchSpanProcessor(exporter) : new SimpleSpanProcessor(exporter)],
});
provider.register();

// distinct secret-like values per capture; the stream capture's t and 8 occur in no other one
const S = streaming ? 't' : latest ? 'l' : proc === 'batch' ? 'b' : 's';
const D = streaming ? '8' : latest ? '7' : proc === 'batch' ? '5' : '6';
const calls = {
  lookup: { customer_id: `cus_st${S}_Kq9Fv3Lr`, email: `omar.haddad.st${S}@example.com` },
  charge: { card_number: `60111111111${D}1117`, email: `omar.haddad.pay${S}@example.com`, amount_cents: 2675, iban: `FR14200410100505000${D}3M02606` },
};
const results = {
  lookup: { account_ref: `acct_st${S}_Vb8Nc2Hx`, full_name: `Omar Haddad ST${S.toUpperCase()}-Customer`, phone: `+33-6-12-${D}4-56-78`, default_card_token: `tok_st${S}_card_Ux44Kd` },
  charge: { charge_id: `ch_st${S}_5RfDe8Wy`, receipt_email: `receipts+26${D}5@example.org`, last4_token: `tok_disc_st${S}_1117k3` },
};
const chargeErrorText = `do_not_honor: issuer declined card ${calls.charge.card_number} (auth ref dnh_st${S}_Xc72Lo)`;
const truthTools = [];

// ---- in-process MCP server
const server = new McpServer({ name: 'payments-mcp', version: '1.0.0' });
let chargeAttempts = 0;
server.registerTool('lookup_customer', {
  description: 'Look up a customer record',
  inputSchema: { customer_id: z.string(), email: z.string() },
}, async (args) => {
  const result = { content: [{ type: 'text', text: JSON.stringify(results.lookup) }] };
  truthTools.push({ tool: 'lookup_customer', arguments: args, result, failed: false });
  return result;
});
server.registerTool('charge_card', {
  description: 'Charge a payment card',
  inputSchema: { card_number: z.string(), email: z.string(), amount_cents: z.number(), iban: z.string() },
}, async (args) => {
  chargeAttempts++;
  if (chargeAttempts === 1) {
    const result = { content: [{ type: 'text', text: chargeErrorText }], isError: true };
    truthTools.push({ tool: 'charge_card', attempt: 1, arguments: args, result, failed: true });
    return result;
  }
  const result = { content: [{ type: 'text', text: JSON.stringify(results.charge) }] };
  truthTools.push({ tool: 'charge_card', attempt: chargeAttempts, arguments: args, result, failed: false });
  return result;
});
const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
await server.connect(serverTransport);
const mcp = new McpClient({ transport: clientTransport, applicationName: 'capture-strands' });

// ---- scripted model
const tid = (n) => `tooluse_st${streaming ? S : ''}_${n}`;
const steps = [
  { text: 'Let me look up the customer record first.', call: [tid('lookup_1'), 'lookup_customer', calls.lookup] },
  { text: 'Found the customer. Charging the card now.', call: [tid('charge_1'), 'charge_card', calls.charge] },
  { text: 'Done: the order is paid and the receipt is on its way.' },
];
class ScriptedModel extends Model {
  constructor() { super(); this.config = { modelId: 'scripted-model-1' }; this.step = 0; }
  updateConfig(c) { this.config = { ...this.config, ...c }; }
  getConfig() { return this.config; }
  async *stream(_messages, _options) {
    const s = steps[Math.min(this.step++, steps.length - 1)];
    if (streaming) {
      yield* this.streamInPieces(s);
      return;
    }
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
  // stream: the events in the order Strands' own providers emit them (models/openai chat-adapter):
  // message start, the text block opened then one textDelta per word, the tool-use block opened
  // with its name and id then its JSON input in toolUseInputDelta pieces, each block stopped,
  // message stop with the stop reason, then the usage metadata
  async *streamInPieces(s) {
    yield { type: 'modelMessageStartEvent', role: 'assistant' };
    yield { type: 'modelContentBlockStartEvent' };
    for (const text of s.text.match(/\S+\s*/g)) yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'textDelta', text } };
    yield { type: 'modelContentBlockStopEvent' };
    if (s.call) {
      yield { type: 'modelContentBlockStartEvent', start: { type: 'toolUseStart', name: s.call[1], toolUseId: s.call[0] } };
      for (const input of JSON.stringify(s.call[2]).match(/[^]{1,12}/g)) yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'toolUseInputDelta', input } };
      yield { type: 'modelContentBlockStopEvent' };
    }
    yield { type: 'modelMessageStopEvent', stopReason: s.call ? 'toolUse' : 'endTurn' };
    yield { type: 'modelMetadataEvent', usage: { inputTokens: 100 + this.step * 40, outputTokens: 25, totalTokens: 125 + this.step * 40 }, metrics: { latencyMs: 5 } };
  }
}

const agent = new Agent({
  name: 'checkout-agent',
  model: new ScriptedModel(),
  tools: [mcp],
  systemPrompt: 'You are a checkout assistant. Use the tools to look up customers and charge cards.',
  printer: false,
});
let retried = 0;
agent.addHook(AfterToolCallEvent, (event) => {
  if (event.toolUse.name === 'charge_card' && event.result?.status === 'error' && retried === 0) {
    retried++;
    event.retry = true;
  }
});
const prompt = 'Please charge the customer from order 5521 for the open invoice and send the receipt.';
let res;
if (streaming) {
  const events = {};
  for await (const ev of agent.stream(prompt)) {
    const k = ev.type === 'modelStreamUpdateEvent' ? `update:${ev.event?.type}` : ev.type;
    events[k] = (events[k] ?? 0) + 1;
    if (ev.type === 'agentResultEvent') res = ev.result;
  }
  console.error('stream events:', JSON.stringify(events));
  if (!res) throw new Error('stream: no agentResultEvent');
} else {
  res = await agent.invoke(prompt);
}
console.error('final:', String(res).slice(0, 100), 'retried:', retried, 'attempts:', chargeAttempts);
await mcp.disconnect();
await provider.forceFlush();
await provider.shutdown();
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);
const ids = { lookup_customer: [tid('lookup_1')], charge_card: [tid('charge_1'), tid('charge_1')] };
for (const t of truthTools) t.call_id = ids[t.tool].shift();
const pkgs = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies;
fs.writeFileSync(truthFile, JSON.stringify({ sdk: `strands-agents ts + MCP (${proc} span processor${latest ? ', OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental' : ''}${streaming ? ', Agent.stream' : ''})`, packages: pkgs, tools: truthTools.map(({ tool, call_id, attempt, arguments: a, result, failed }) => ({ tool, call_id, attempt, arguments: a, result, failed })), note: 'tool results are MCP CallToolResult objects; charge_card attempt 1 returned isError: true and was re-run by an AfterToolCallEvent hook (event.retry = true) with the same toolUseId and arguments' }, null, 2) + '\n');
