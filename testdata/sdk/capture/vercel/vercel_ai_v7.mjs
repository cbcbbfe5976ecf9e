// Vercel AI SDK v7 (ai + @ai-sdk/otel) scripted agent run with MockLanguageModelV4.
// usage: node vercel_ai_v7.mjs <otel|legacy> <batch|simple> <out.jsonl> <truth.json>
import fs from 'node:fs';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { ToolLoopAgent, tool, registerTelemetry, isStepCount } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { OpenTelemetry, LegacyOpenTelemetry } from '@ai-sdk/otel';
import { z } from 'zod';
import { startReceiver } from './receiver.mjs';

const [mode = 'otel', proc = 'batch', outFile, truthFile] = process.argv.slice(2);
// distinct secret-like values per capture: tag = g (GenAI semconv) / l (legacy), b/s processor
const T = (mode === 'otel' ? 'g' : 'l') + (proc === 'batch' ? 'b' : 's');
const D = { gb: '1', gs: '2', lb: '3', ls: '4' }[T]; // digit to keep numbers distinct

const receiver = await startReceiver(outFile);
const exporter = new OTLPTraceExporter({ url: receiver.url });
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': `capture-vercel-ai-v7-${mode}` }),
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
const model = new MockLanguageModelV4({
  provider: 'mock-provider',
  modelId: 'mock-model-v4',
  doGenerate: async () => ({ ...steps[step], response: { id: `resp_${step}`, modelId: 'mock-model-v4', timestamp: new Date(0 + (step++) * 1000) }, warnings: [] }),
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

const res = await agent.generate({ prompt: 'Please charge the customer from order 5521 for the open invoice and send the receipt.' });
console.error('final text:', res.text, 'steps:', res.steps.length);
await provider.forceFlush();
await provider.shutdown();
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);

const pkgs = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies;
fs.writeFileSync(truthFile, JSON.stringify({
  sdk: `vercel-ai-v7 (${mode === 'otel' ? '@ai-sdk/otel OpenTelemetry' : '@ai-sdk/otel LegacyOpenTelemetry'}, ${proc} span processor)`,
  packages: pkgs, tools: truthTools,
}, null, 2) + '\n');
