// LangChain.js createAgent (LangGraph) run with fakeModel() from @langchain/core/testing,
// traced by OpenLLMetry (@traceloop/node-server-sdk, its LangChain instrumentation) whose
// exporter is an OTLP/HTTP JSON exporter to the loopback receiver. The run is wrapped in
// traceloop.withAgent so all spans join one trace.
//  retry:  charge_card throws twice; toolRetryMiddleware re-runs it (same call id, same
//          arguments), the third execution succeeds.
//  recall: charge_card throws once, no middleware: the ToolNode turns the error into a
//          ToolMessage (status "error") for the model, which calls charge_card again with a
//          new call id and a backup card.
//  hidden: charge_card RETURNS a ToolMessage with status "error" once (nothing is thrown);
//          the model calls charge_card again with a new call id and a backup card.
//  unrecovered: charge_card throws on every execution; toolRetryMiddleware({maxRetries: 1})
//          re-runs it once (two executions of one call, both thrown), then hands the model its
//          failure ToolMessage (status "error"); the model answers as if the payment went through.
// usage: node langchain_traceloop.mjs <retry|recall|hidden|unrecovered> <out.jsonl> <truth.json>
import fs from 'node:fs';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import * as traceloop from '@traceloop/node-server-sdk';
import { startReceiver } from './receiver.mjs';

const [scenario = 'retry', outFile, truthFile] = process.argv.slice(2);
if (!['retry', 'recall', 'hidden', 'unrecovered'].includes(scenario)) throw new Error(`unknown scenario ${scenario}`);
const receiver = await startReceiver(outFile);
traceloop.initialize({
  appName: 'capture-langchain-traceloop',
  exporter: new OTLPTraceExporter({ url: receiver.url }),
  disableBatch: false,
  silenceInitializationMessage: true,
  traceloopSyncEnabled: false,
  instrumentModules: { langchain: true },
});

const { createAgent, toolRetryMiddleware, tool } = await import('langchain');
const { AIMessage, HumanMessage, ToolMessage } = await import('@langchain/core/messages');
const { fakeModel } = await import('@langchain/core/testing');
const { z } = await import('zod');

const S = { retry: 't', recall: 'r', hidden: 'h', unrecovered: 'u' }[scenario];
const D = { retry: '6', recall: '7', hidden: '8', unrecovered: '9' }[scenario];
const calls = {
  lookup: { customer_id: `cus_tl${S}_Xe7Nb4Gu`, email: `amara.okafor.tl${S}@example.com` },
  charge: { card_number: `55555555555${D}4444`, email: `amara.okafor.pay${S}@example.com`, amount_cents: 6150, iban: `NL91ABNA04171643${D}0` },
  // recall / hidden: the model's second call, with a backup card
  charge2: { card_number: `55555555555${D}5557`, email: `amara.okafor.backup${S}@example.com`, amount_cents: 6150, iban: `NL91ABNA04171643${D}1` },
};
const results = {
  lookup: { account_ref: `acct_tl${S}_Cv5Wr8Jm`, full_name: `Amara Okafor TL${S.toUpperCase()}-Customer`, phone: `+31-6-${D}234-5678`, default_card_token: `tok_tl${S}_card_Yh62Tn` },
  charge: { charge_id: `ch_tl${S}_6KsPq1Lw`, receipt_email: `billing+61${D}5@example.org`, last4_token: `tok_mc_tl${S}_4444z8` },
};
const failRefs = [`gw_tl${S}_Fo38Ne`, `gw_tl${S}_Ut95Ri`];
const errorText = (card, n) => `gateway_timeout: acquirer did not answer for card ${card} (trace ${failRefs[n]})`;
const failures = { retry: 2, recall: 1, hidden: 1, unrecovered: Infinity }[scenario];
// toolRetryMiddleware re-runs (none: no middleware)
const maxRetries = { retry: 2, unrecovered: 1 }[scenario];
const truthTools = [];

let chargeAttempts = 0;
const lookupCustomer = tool(async (args, config) => {
  truthTools.push({ tool: 'lookup_customer', call_id: config?.toolCall?.id ?? null, arguments: args, result: JSON.stringify(results.lookup), failed: false });
  return JSON.stringify(results.lookup);
}, { name: 'lookup_customer', description: 'Look up a customer record', schema: z.object({ customer_id: z.string(), email: z.string() }) });
const chargeCard = tool(async (args, config) => {
  chargeAttempts++;
  const call_id = config?.toolCall?.id ?? null;
  if (chargeAttempts <= failures) {
    const text = errorText(args.card_number, chargeAttempts - 1);
    truthTools.push({ tool: 'charge_card', call_id, attempt: chargeAttempts, arguments: args, result: text, failed: true });
    if (scenario === 'hidden') return new ToolMessage({ content: text, tool_call_id: call_id, name: 'charge_card', status: 'error' });
    throw new Error(text);
  }
  truthTools.push({ tool: 'charge_card', call_id, attempt: chargeAttempts, arguments: args, result: JSON.stringify(results.charge), failed: false });
  return JSON.stringify(results.charge);
}, { name: 'charge_card', description: 'Charge a payment card', schema: z.object({ card_number: z.string(), email: z.string(), amount_cents: z.number(), iban: z.string() }) });

const id = (n) => `call_tl${S}_${n}`;
let model = fakeModel()
  .respond(new AIMessage({ content: 'Let me look up the customer record first.', tool_calls: [{ id: id('lookup_1'), name: 'lookup_customer', args: calls.lookup, type: 'tool_call' }] }))
  .respond(new AIMessage({ content: 'Found the customer. Charging the card now.', tool_calls: [{ id: id('charge_1'), name: 'charge_card', args: calls.charge, type: 'tool_call' }] }));
if (scenario === 'recall' || scenario === 'hidden') {
  model = model.respond(new AIMessage({ content: 'The card was declined. Trying the backup card on file.', tool_calls: [{ id: id('charge_2'), name: 'charge_card', args: calls.charge2, type: 'tool_call' }] }));
}
// unrecovered: the last execution failed, yet the model answers green
model = model.respond(new AIMessage(scenario === 'unrecovered' ? 'Done: the payment went through, the order is paid and the receipt is on its way.' : 'Done: the order is paid and the receipt is on its way.'));

const agent = createAgent({
  name: 'checkout-agent',
  model,
  tools: [lookupCustomer, chargeCard],
  systemPrompt: 'You are a checkout assistant. Use the tools to look up customers and charge cards.',
  middleware: maxRetries ? [toolRetryMiddleware({ maxRetries, initialDelayMs: 10, jitter: false, tools: ['charge_card'] })] : [],
});
const res = await traceloop.withAgent({ name: 'checkout-agent' }, () =>
  agent.invoke({ messages: [new HumanMessage('Please charge the customer from order 6604 for the open invoice and send the receipt.')] }));
console.error('final:', res.messages.at(-1).content, 'messages:', res.messages.length, 'attempts:', chargeAttempts);
await traceloop.forceFlush();
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);

// the instrumentation names tool spans after the tool's class (tool.id), not the tool
const TOOL_SPAN = 'execute_tool DynamicStructuredTool';
const lookupCall = { tool: 'lookup_customer', attempts: 1, attempt_statuses: ['ok'], retry_layer: null, failed_attempts_hidden: false, span_names: [TOOL_SPAN], call_ids: [id('lookup_1')] };
// unrecovered: the expectation is read off what the tool saw (one call id, every execution threw)
const chargeRuns = truthTools.filter((t) => t.tool === 'charge_card');
if (scenario === 'unrecovered' && (chargeRuns.length !== 2 || chargeRuns.some((t) => !t.failed || t.call_id !== id('charge_1')))) {
  throw new Error(`unrecovered: expected 2 failed charge_card executions of ${id('charge_1')}, got ${JSON.stringify(chargeRuns.map((t) => [t.call_id, t.failed]))}`);
}
const expect = scenario === 'unrecovered'
  ? {
      calls: [lookupCall, {
        tool: 'charge_card', attempts: chargeRuns.length, attempt_statuses: chargeRuns.map((t) => (t.failed ? 'error' : 'ok')), retry_layer: 'tool_runtime', failed_attempts_hidden: false,
        span_names: chargeRuns.map(() => TOOL_SPAN), call_ids: chargeRuns.map((t) => t.call_id),
      }],
      unrecovered: true,
      notes: 'charge_card threw on both executions of ONE call (call_tlu_charge_1, same arguments): toolRetryMiddleware (maxRetries 1) re-ran it once, then returned its failure ToolMessage (status "error", content "Tool \'charge_card\' failed after 2 attempts with Error", without the thrown text) to the model, which answered that the payment went through. Both execute_tool DynamicStructuredTool spans are status ERROR with status.message = the thrown text and an exception event, no traceloop.entity.output, no call id and no tool name. The middleware\'s ToolMessage (with tool_call_id and status error) appears only in the tools-node workflow RunnableSequence\'s traceloop.entity.output and in later workflow inputs / the last chat span\'s gen_ai.input.messages (as text). Every workflow and chat span is status OK; the withAgent root checkout-agent.agent is status UNSET and its traceloop.entity.output ends with the green final AIMessage.',
    }
  : scenario === 'retry'
  ? {
      calls: [lookupCall, {
        tool: 'charge_card', attempts: 3, attempt_statuses: ['error', 'error', 'ok'], retry_layer: 'tool_runtime', failed_attempts_hidden: false,
        span_names: [TOOL_SPAN, TOOL_SPAN, TOOL_SPAN], call_ids: [id('charge_1'), id('charge_1'), id('charge_1')],
      }],
      notes: 'charge_card threw twice; toolRetryMiddleware (maxRetries 2) re-ran the same tool call (same call id, same arguments) and the third execution succeeded. The model made one charge_card call. OpenLLMetry tool spans carry no call id and no tool name (span name and traceloop.entity.name are the class name DynamicStructuredTool).',
    }
  : {
      calls: [lookupCall, {
        tool: 'charge_card', attempts: 1, attempt_statuses: ['error'], retry_layer: null, failed_attempts_hidden: scenario === 'hidden',
        span_names: [TOOL_SPAN], call_ids: [id('charge_1')],
      }, {
        tool: 'charge_card', attempts: 1, attempt_statuses: ['ok'], retry_layer: 'agent', failed_attempts_hidden: false,
        span_names: [TOOL_SPAN], call_ids: [id('charge_2')],
      }],
      notes: scenario === 'recall'
        ? 'charge_card threw; without middleware the ToolNode converted the error into a ToolMessage with status "error" and the error text plus "Please fix your mistakes." for the model, which called charge_card again with a new call id and changed arguments (backup card, email, IBAN).'
        : 'charge_card returned a ToolMessage with status "error" (nothing thrown); the model called charge_card again with a new call id and changed arguments (backup card, email, IBAN).',
    };
expect.agent_spans = [{ name: 'checkout-agent.agent', marker: 'traceloop.span.kind=agent' }];
const pkgs = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies;
fs.writeFileSync(truthFile, JSON.stringify({
  sdk: `langchain.js createAgent + OpenLLMetry (traceloop batch span processor, scenario ${scenario})`, packages: pkgs, tools: truthTools,
  expect: { calls: expect.calls, agent_spans: expect.agent_spans, ...(expect.unrecovered ? { unrecovered: true } : {}), notes: expect.notes },
  note: 'tools return JSON strings (the hidden failure is a ToolMessage whose content is the error text); call_id is the tool call id the tool saw (config.toolCall.id)',
}, null, 2) + '\n');
