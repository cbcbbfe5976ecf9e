// LangChain.js createAgent (LangGraph) run with fakeModel() from @langchain/core/testing,
// traced by @arizeai/openinference-instrumentation-langchain; toolRetryMiddleware retries a
// tool that throws once (executor retry: same call id, same arguments, 2 executions).
//  batch / simple: the span processor; the second execution succeeds.
//  unrecovered (batch): charge_card throws on every execution; toolRetryMiddleware({maxRetries:
//          1}) re-runs it once (two executions of one call, both thrown), then hands the model its
//          failure ToolMessage (status "error"); the model answers as if the payment went through.
//          Writes the `expect` block.
// usage: node langchain_openinference.mjs <batch|simple|unrecovered> <out.jsonl> <truth.json>
import fs from 'node:fs';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { LangChainInstrumentation } from '@arizeai/openinference-instrumentation-langchain';
import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { startReceiver } from './receiver.mjs';

const [mode = 'batch', outFile, truthFile] = process.argv.slice(2);
if (!['batch', 'simple', 'unrecovered'].includes(mode)) throw new Error(`unknown mode ${mode}`);
const unrecovered = mode === 'unrecovered';
const proc = unrecovered ? 'batch' : mode;
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

const S = { batch: 'b', simple: 's', unrecovered: 'u' }[mode];
const D = { batch: '3', simple: '4', unrecovered: '5' }[mode];
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

const id = (n) => (unrecovered ? `call_lc${S}_${n}` : `call_lc_${n}`);
const model = fakeModel()
  .respond(new AIMessage({ content: 'Let me look up the customer record first.', tool_calls: [{ id: id('lookup_1'), name: 'lookup_customer', args: calls.lookup, type: 'tool_call' }] }))
  .respond(new AIMessage({ content: 'Found the customer. Charging the card now.', tool_calls: [{ id: id('charge_1'), name: 'charge_card', args: calls.charge, type: 'tool_call' }] }))
  // unrecovered: the last execution failed, yet the model answers green
  .respond(new AIMessage(unrecovered ? 'Done: the payment went through, the order is paid and the receipt is on its way.' : 'Done: the order is paid and the receipt is on its way.'));

const agent = createAgent({
  name: 'checkout-agent',
  model,
  tools: [lookupCustomer, chargeCard],
  systemPrompt: 'You are a checkout assistant. Use the tools to look up customers and charge cards.',
  middleware: [toolRetryMiddleware({ maxRetries: unrecovered ? 1 : 2, initialDelayMs: 10, jitter: false, tools: ['charge_card'] })],
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
if (!unrecovered) {
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
