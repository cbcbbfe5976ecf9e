// Mastra agent run (scripted ai/test MockLanguageModelV4) exported by @mastra/otel-exporter
// (provider "custom", protocol http/json; the exporter uses a BatchSpanProcessor).
// usage: node mastra.mjs [stream] <out.jsonl> <truth.json>
// Without `stream` the agent answers with `agent.generate` (Mastra calls the model's
// `doGenerate`); with it, the same run goes through `agent.stream` (the model's `doStream`, each
// step as `simulateReadableStream` chunks: text in word deltas, each tool call's JSON input as
// tool-input-start/-delta (12-character pieces)/-end, then the tool-call and finish chunks), the
// script reads the whole `fullStream`, then awaits `getFullOutput()`. The stream capture has its
// own values.
import fs from 'node:fs';
import { Mastra } from '@mastra/core/mastra';
import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { Observability } from '@mastra/observability';
import { OtelExporter } from '@mastra/otel-exporter';
import { MockLanguageModelV4 } from 'ai/test';
import { simulateReadableStream } from 'ai';
import { z } from 'zod';
import { startReceiver } from './receiver.mjs';

const argv = process.argv.slice(2);
const call = argv[0] === 'stream' ? argv.shift() : 'generate'; // optional 1st argument
const streaming = call === 'stream';
const [outFile, truthFile] = argv;
const receiver = await startReceiver(outFile);

// distinct secret-like values per capture (the stream capture's mst / 7713 occur in no other one)
const calls = streaming ? {
  lookup: { customer_id: 'cus_mst_Wp4Tn8Qa', email: 'ana.lopez.mst@example.net' },
  charge1: { card_number: '4000056655667713', email: 'ana.lopez.billingt@example.net', amount_cents: 4550, iban: 'ES9121000418450200057713' },
  charge2: { card_number: '4242424242477713', email: 'ana.lopez.retryt@example.net', amount_cents: 4550, iban: 'ES7921000813610123457713' },
} : {
  lookup: { customer_id: 'cus_mastra_Wp4Tn8Qa', email: 'ana.lopez.mastra@example.net' },
  charge1: { card_number: '4000056655665556', email: 'ana.lopez.billing@example.net', amount_cents: 4550, iban: 'ES9121000418450200051332' },
  charge2: { card_number: '4242424242424242', email: 'ana.lopez.retry@example.net', amount_cents: 4550, iban: 'ES7921000813610123456789' },
};
const results = streaming ? {
  lookup: { account_ref: 'acct_mst_J5vB2cXe', full_name: 'Ana Lopez MST-Customer', phone: '+34-612-555-7713', default_card_token: 'tok_mst_card_Hy73Lm' },
  charge2: { charge_id: 'ch_mst_9TzPq2Rw', receipt_email: 'receipts+5577@example.org', last4_token: 'tok_mc_mst_4242zz' },
} : {
  lookup: { account_ref: 'acct_mastra_J5vB2cXe', full_name: 'Ana Lopez Mastra-Customer', phone: '+34-612-555-0199', default_card_token: 'tok_mastra_card_Hy73Lm' },
  charge2: { charge_id: 'ch_mastra_9TzPq2Rw', receipt_email: 'receipts+5521@example.org', last4_token: 'tok_mc_mastra_4242zz' },
};
const charge1Error = `insufficient_funds: issuer refused card ${calls.charge1.card_number} (decline ref ${streaming ? 'dcl_mst_K8s1Xv' : 'dcl_mastra_K8s1Xv'})`;
const truthTools = [];

const usage = (i, o) => ({ inputTokens: { total: i, noCache: i, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: o, text: o, reasoning: 0 } });
const cid = (n) => `call_m${streaming ? 't' : ''}_${n}`;
const rid = (i) => `resp_m${streaming ? 't' : ''}_${i}`;
const steps = [
  { text: 'Let me look up the customer record first.', call: [cid('lookup_1'), 'lookup_customer', calls.lookup] },
  { text: 'Found the customer. Charging the card now.', call: [cid('charge_1'), 'charge_card', calls.charge1] },
  { text: 'The charge failed; retrying with the backup card.', call: [cid('charge_2'), 'charge_card', calls.charge2] },
  { text: 'Done: the order is paid and the receipt is on its way.' },
];
let step = 0;
function nextStep() {
  const s = steps[Math.min(step, steps.length - 1)];
  const i = step++;
  return { s, i };
}
const model = new MockLanguageModelV4({
  provider: 'mock-provider',
  modelId: 'mock-model-v4',
  doGenerate: async () => {
    const { s, i } = nextStep();
    const content = [{ type: 'text', text: s.text }];
    if (s.call) content.push({ type: 'tool-call', toolCallId: s.call[0], toolName: s.call[1], input: JSON.stringify(s.call[2]) });
    return { content, finishReason: s.call ? { unified: 'tool-calls', raw: 'tool_calls' } : { unified: 'stop', raw: 'stop' }, usage: usage(100 + i * 50, 30), warnings: [], response: { id: rid(i), modelId: 'mock-model-v4', timestamp: new Date(i * 1000) } };
  },
  // a step as a provider streams it: text in word deltas, the tool call's JSON input in small
  // tool-input-delta pieces, then the complete tool-call, then finish (agent.generate never
  // calls doStream)
  doStream: async () => {
    const { s, i } = nextStep();
    const chunks = [
      { type: 'stream-start', warnings: [] },
      { type: 'response-metadata', id: rid(i), modelId: 'mock-model-v4', timestamp: new Date(i * 1000) },
      { type: 'text-start', id: `t${i}` },
      ...(s.text.match(/\S+\s*/g) ?? []).map((delta) => ({ type: 'text-delta', id: `t${i}`, delta })),
      { type: 'text-end', id: `t${i}` },
    ];
    if (s.call) {
      const input = JSON.stringify(s.call[2]);
      chunks.push({ type: 'tool-input-start', id: s.call[0], toolName: s.call[1] });
      for (const delta of input.match(/[^]{1,12}/g)) chunks.push({ type: 'tool-input-delta', id: s.call[0], delta });
      chunks.push({ type: 'tool-input-end', id: s.call[0] });
      chunks.push({ type: 'tool-call', toolCallId: s.call[0], toolName: s.call[1], input });
    }
    chunks.push({ type: 'finish', finishReason: s.call ? { unified: 'tool-calls', raw: 'tool_calls' } : { unified: 'stop', raw: 'stop' }, usage: usage(100 + i * 50, 30) });
    return { stream: simulateReadableStream({ chunks }) };
  },
});

let chargeAttempts = 0;
const lookupCustomer = createTool({
  id: 'lookup_customer',
  description: 'Look up a customer record',
  inputSchema: z.object({ customer_id: z.string(), email: z.string() }),
  execute: async (args, ctx) => {
    truthTools.push({ tool: 'lookup_customer', call_id: ctx?.agent?.toolCallId ?? null, arguments: args, result: results.lookup, failed: false });
    return results.lookup;
  },
});
const chargeCard = createTool({
  id: 'charge_card',
  description: 'Charge a payment card',
  inputSchema: z.object({ card_number: z.string(), email: z.string(), amount_cents: z.number(), iban: z.string() }),
  execute: async (args, ctx) => {
    chargeAttempts++;
    if (chargeAttempts === 1) {
      truthTools.push({ tool: 'charge_card', call_id: ctx?.agent?.toolCallId ?? null, arguments: args, result: charge1Error, failed: true });
      throw new Error(charge1Error);
    }
    truthTools.push({ tool: 'charge_card', call_id: ctx?.agent?.toolCallId ?? null, arguments: args, result: results.charge2, failed: false });
    return results.charge2;
  },
});

const agent = new Agent({
  id: 'checkout-agent',
  name: 'checkout-agent',
  instructions: 'You are a checkout assistant. Use the tools to look up customers and charge cards.',
  model,
  tools: { lookup_customer: lookupCustomer, charge_card: chargeCard },
});
const mastra = new Mastra({
  agents: { checkoutAgent: agent },
  logger: false,
  observability: new Observability({
    configs: {
      otel: {
        serviceName: `capture-mastra${streaming ? '-stream' : ''}`,
        exporters: [new OtelExporter({ provider: { custom: { endpoint: receiver.url, protocol: 'http/json' } }, signals: { logs: false } })],
      },
    },
  }),
});

const prompt = 'Please charge the customer from order 5521 for the open invoice and send the receipt.';
if (streaming) {
  const out = await mastra.getAgent('checkoutAgent').stream(prompt, { maxSteps: 6 });
  const parts = {};
  for await (const chunk of out.fullStream) parts[chunk.type] = (parts[chunk.type] ?? 0) + 1;
  console.error('stream chunks:', JSON.stringify(parts));
  const res = await out.getFullOutput();
  console.error('final text:', res.text, 'steps:', res.steps?.length);
} else {
  const res = await mastra.getAgent('checkoutAgent').generate(prompt, { maxSteps: 6 });
  console.error('final text:', res.text, 'steps:', res.steps?.length);
}
await new Promise((r) => setTimeout(r, 500));
await mastra.shutdown?.();
await new Promise((r) => setTimeout(r, 500));
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);

const pkgs = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies;
fs.writeFileSync(truthFile, JSON.stringify({ sdk: `mastra (@mastra/otel-exporter, batch span processor${streaming ? ', Agent.stream' : ''})`, packages: pkgs, tools: truthTools }, null, 2) + '\n');
