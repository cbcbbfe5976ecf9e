// LangChain.js createAgent (LangGraph) run with fakeModel() from @langchain/core/testing,
// traced by @arizeai/openinference-instrumentation-langchain; toolRetryMiddleware retries a
// tool that throws once (executor retry: same call id, same arguments, 2 executions).
// usage: node langchain_openinference.mjs <batch|simple> <out.jsonl> <truth.json>
import fs from 'node:fs';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { LangChainInstrumentation } from '@arizeai/openinference-instrumentation-langchain';
import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { startReceiver } from './receiver.mjs';

const [proc = 'batch', outFile, truthFile] = process.argv.slice(2);
const receiver = await startReceiver(outFile);
const exporter = new OTLPTraceExporter({ url: receiver.url });
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'capture-langchain-openinference' }),
  spanProcessors: [proc === 'batch' ? new BatchSpanProcessor(exporter) : new SimpleSpanProcessor(exporter)],
});
provider.register();
new LangChainInstrumentation({ tracerProvider: provider }).manuallyInstrument(CallbackManagerModule);

const { createAgent, toolRetryMiddleware, tool } = await import('langchain');
const { AIMessage, HumanMessage } = await import('@langchain/core/messages');
const { fakeModel } = await import('@langchain/core/testing');
const { z } = await import('zod');

const S = proc === 'batch' ? 'b' : 's';
const D = proc === 'batch' ? '3' : '4';
const calls = {
  lookup: { customer_id: `cus_lc${S}_Zr6Yh1Nd`, email: `li.wei.lc${S}@example.com` },
  charge: { card_number: `37828224631${D}005`, email: `li.wei.pay${S}@example.com`, amount_cents: 8800, iban: `GB33BUKB2020155555${D}555` },
};
const results = {
  lookup: { account_ref: `acct_lc${S}_Pd3Wq7Tb`, full_name: `Li Wei LC${S.toUpperCase()}-Customer`, phone: `+44-7700-90${D}123`, default_card_token: `tok_lc${S}_card_Qe55Vn` },
  charge: { charge_id: `ch_lc${S}_7YhGt4Ks`, receipt_email: `invoices+88${D}0@example.org`, last4_token: `tok_amex_lc${S}_0005q1` },
};
const chargeError = `gateway_timeout: acquirer did not answer for card ${calls.charge.card_number} (trace gw_lc${S}_Mn81Pz)`;
const truthTools = [];

let chargeAttempts = 0;
const lookupCustomer = tool(async (args, config) => {
  truthTools.push({ tool: 'lookup_customer', call_id: config?.toolCall?.id ?? null, arguments: args, result: results.lookup, failed: false });
  return JSON.stringify(results.lookup);
}, { name: 'lookup_customer', description: 'Look up a customer record', schema: z.object({ customer_id: z.string(), email: z.string() }) });
const chargeCard = tool(async (args, config) => {
  chargeAttempts++;
  if (chargeAttempts === 1) {
    truthTools.push({ tool: 'charge_card', call_id: config?.toolCall?.id ?? null, attempt: 1, arguments: args, result: chargeError, failed: true });
    throw new Error(chargeError);
  }
  truthTools.push({ tool: 'charge_card', call_id: config?.toolCall?.id ?? null, attempt: chargeAttempts, arguments: args, result: results.charge, failed: false });
  return JSON.stringify(results.charge);
}, { name: 'charge_card', description: 'Charge a payment card', schema: z.object({ card_number: z.string(), email: z.string(), amount_cents: z.number(), iban: z.string() }) });

const model = fakeModel()
  .respond(new AIMessage({ content: 'Let me look up the customer record first.', tool_calls: [{ id: 'call_lc_lookup_1', name: 'lookup_customer', args: calls.lookup, type: 'tool_call' }] }))
  .respond(new AIMessage({ content: 'Found the customer. Charging the card now.', tool_calls: [{ id: 'call_lc_charge_1', name: 'charge_card', args: calls.charge, type: 'tool_call' }] }))
  .respond(new AIMessage('Done: the order is paid and the receipt is on its way.'));

const agent = createAgent({
  name: 'checkout-agent',
  model,
  tools: [lookupCustomer, chargeCard],
  systemPrompt: 'You are a checkout assistant. Use the tools to look up customers and charge cards.',
  middleware: [toolRetryMiddleware({ maxRetries: 2, initialDelayMs: 10, jitter: false, tools: ['charge_card'] })],
});
const res = await agent.invoke({ messages: [new HumanMessage('Please charge the customer from order 5521 for the open invoice and send the receipt.')] });
console.error('final:', res.messages.at(-1).content, 'messages:', res.messages.length);
await provider.forceFlush();
await provider.shutdown();
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);
// tool results as the tool returned them: JSON strings
for (const t of truthTools) if (!t.failed) t.result = JSON.stringify(t.result);
const pkgs = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies;
fs.writeFileSync(truthFile, JSON.stringify({ sdk: `langchain.js createAgent + OpenInference (${proc} span processor)`, packages: pkgs, tools: truthTools, note: 'tools return JSON strings; charge_card attempts 1 and 2 are one model tool call retried by toolRetryMiddleware (same call id and arguments)' }, null, 2) + '\n');
