// Vercel AI SDK v7 (ai + @ai-sdk/otel) scripted agent run with MockLanguageModelV4.
// usage: node vercel_ai_v7.mjs <otel|legacy> <batch|simple> [stream] <out.jsonl> <truth.json>
// Without `stream` the agent answers with `ToolLoopAgent.generate` (model `doGenerate`); with
// it, the same run goes through `ToolLoopAgent.stream` (streamText; model `doStream`, the same
// steps cut into `simulateReadableStream` chunks, tool inputs as tool-input-* deltas) and the
// script consumes the whole `fullStream`.
import fs from 'node:fs';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { ToolLoopAgent, tool, registerTelemetry, isStepCount, simulateReadableStream } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { OpenTelemetry, LegacyOpenTelemetry } from '@ai-sdk/otel';
import { z } from 'zod';
import { startReceiver } from './receiver.mjs';

const argv = process.argv.slice(2);
const call = argv[2] === 'stream' ? argv.splice(2, 1)[0] : 'generate'; // optional 3rd argument
const [mode = 'otel', proc = 'batch', outFile, truthFile] = argv;
const streaming = call === 'stream';
// distinct secret-like values per capture: tag = g (GenAI semconv) / l (legacy), b/s processor,
// t when streaming
const T = (mode === 'otel' ? 'g' : 'l') + (proc === 'batch' ? 'b' : 's') + (streaming ? 't' : '');
// digit to keep numbers distinct (the stream captures' 5 and 0 occur in no other capture)
const D = { gb: '1', gs: '2', lb: '3', ls: '4', gbt: '5', gst: '6', lbt: '0', lst: '8' }[T];

const receiver = await startReceiver(outFile);
const exporter = new OTLPTraceExporter({ url: receiver.url });
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': `capture-vercel-ai-v7-${mode}${streaming ? '-stream' : ''}` }),
  spanProcessors: [proc === 'batch' ? new BatchSpanProcessor(exporter) : new SimpleSpanProcessor(exporter)],
});
provider.register();
registerTelemetry(mode === 'otel' ? new OpenTelemetry() : new LegacyOpenTelemetry());

const calls = {
  lookup: { customer_id: `cus_v7${T}_8HqT2mWx`, email: `jane.doe.v7${T}@example.com` },
  charge1: { card_number: `41111111111${D}7001`, email: `jane.doe.pay${T}@example.com`, amount_cents: 1299, iban: `DE8937040044053${D}017001` },
  charge2: { card_number: `55555555555${D}4444`, email: `jane.doe.retry${T}@example.com`, amount_cents: 1299, iban: `DE8937040044053${D}017002` },
};
const results = {
  lookup: { account_ref: `acct_v7${T}_R7mN3kLs`, full_name: `Jane Doe ${T.toUpperCase()}-Customer`, phone: `+49-151-${D}234-7001`, default_card_token: `tok_v7${T}_card_Zk81Qp` },
  charge2: { charge_id: `ch_v7${T}_3QkZ9xLm`, receipt_email: `billing+77${D}1@example.org`, last4_token: `tok_visa_v7${T}_4242x9` },
};
const charge1Error = `card_declined: processor timeout for card ${calls.charge1.card_number} (ref dcl_v7${T}_Q2w9Er)`;
const truthTools = [];

const usage = (i, o) => ({
  inputTokens: { total: i, noCache: i, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: o, text: o, reasoning: 0 },
});
const toolCall = (id, name, input) => ({ type: 'tool-call', toolCallId: id, toolName: name, input: JSON.stringify(input) });
const steps = [
  { content: [{ type: 'text', text: 'Let me look up the customer record first.' }, toolCall('call_lookup_1', 'lookup_customer', calls.lookup)], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(120, 30) },
  { content: [{ type: 'text', text: 'Found the customer. Charging the card now.' }, toolCall('call_charge_1', 'charge_card', calls.charge1)], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(180, 40) },
  { content: [{ type: 'text', text: 'The first charge attempt failed; retrying with the backup card.' }, toolCall('call_charge_2', 'charge_card', calls.charge2)], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(240, 40) },
  { content: [{ type: 'text', text: 'Done: the order is paid and the receipt is on its way.' }], finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(300, 20) },
];
let step = 0;
// a step as a provider streams it: text in word deltas, each tool call's JSON input in small
// tool-input-delta pieces, then the complete tool-call, then finish
const pieces = (text, re) => text.match(re) ?? [];
const streamChunks = (s, i) => {
  const chunks = [
    { type: 'stream-start', warnings: [] },
    { type: 'response-metadata', id: `resp_${i}`, modelId: 'mock-model-v4', timestamp: new Date(i * 1000) },
  ];
  s.content.forEach((c, j) => {
    if (c.type === 'text') {
      const id = `txt_${i}_${j}`;
      chunks.push({ type: 'text-start', id });
      for (const delta of pieces(c.text, /\S+\s*/g)) chunks.push({ type: 'text-delta', id, delta });
      chunks.push({ type: 'text-end', id });
    } else {
      chunks.push({ type: 'tool-input-start', id: c.toolCallId, toolName: c.toolName });
      for (const delta of pieces(c.input, /[^]{1,12}/g)) chunks.push({ type: 'tool-input-delta', id: c.toolCallId, delta });
      chunks.push({ type: 'tool-input-end', id: c.toolCallId });
      chunks.push(c);
    }
  });
  chunks.push({ type: 'finish', finishReason: s.finishReason, usage: s.usage });
  return chunks;
};
const model = new MockLanguageModelV4({
  provider: 'mock-provider',
  modelId: 'mock-model-v4',
  ...(streaming
    ? { doStream: async () => ({ stream: simulateReadableStream({ chunks: streamChunks(steps[step], step++) }) }) }
    : { doGenerate: async () => ({ ...steps[step], response: { id: `resp_${step}`, modelId: 'mock-model-v4', timestamp: new Date(0 + (step++) * 1000) }, warnings: [] }) }),
});

let chargeAttempts = 0;
const agent = new ToolLoopAgent({
  id: 'checkout-agent',
  instructions: 'You are a checkout assistant. Use the tools to look up customers and charge cards.',
  model,
  stopWhen: isStepCount(6),
  telemetry: { functionId: 'checkout-agent' },
  tools: {
    lookup_customer: tool({
      description: 'Look up a customer record',
      inputSchema: z.object({ customer_id: z.string(), email: z.string() }),
      execute: async (args, { toolCallId }) => {
        truthTools.push({ tool: 'lookup_customer', call_id: toolCallId, arguments: args, result: results.lookup, failed: false });
        return results.lookup;
      },
    }),
    charge_card: tool({
      description: 'Charge a payment card',
      inputSchema: z.object({ card_number: z.string(), email: z.string(), amount_cents: z.number(), iban: z.string() }),
      execute: async (args, { toolCallId }) => {
        chargeAttempts++;
        if (chargeAttempts === 1) {
          truthTools.push({ tool: 'charge_card', call_id: toolCallId, arguments: args, result: charge1Error, failed: true });
          throw new Error(charge1Error);
        }
        truthTools.push({ tool: 'charge_card', call_id: toolCallId, arguments: args, result: results.charge2, failed: false });
        return results.charge2;
      },
    }),
  },
});

const prompt = 'Please charge the customer from order 5521 for the open invoice and send the receipt.';
if (streaming) {
  const res = await agent.stream({ prompt });
  const parts = {};
  for await (const part of res.fullStream) parts[part.type] = (parts[part.type] ?? 0) + 1;
  console.error('stream parts:', JSON.stringify(parts));
  console.error('final text:', await res.text, 'steps:', (await res.steps).length);
} else {
  const res = await agent.generate({ prompt });
  console.error('final text:', res.text, 'steps:', res.steps.length);
}
await provider.forceFlush();
await provider.shutdown();
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);

const pkgs = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies;
fs.writeFileSync(truthFile, JSON.stringify({
  sdk: `vercel-ai-v7 (${mode === 'otel' ? '@ai-sdk/otel OpenTelemetry' : '@ai-sdk/otel LegacyOpenTelemetry'}, ${proc} span processor${streaming ? ', ToolLoopAgent.stream' : ''})`,
  packages: pkgs, tools: truthTools,
}, null, 2) + '\n');
