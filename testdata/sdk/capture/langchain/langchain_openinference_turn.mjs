// LangChain.js createAgent (LangGraph) with fakeModel(), traced by OpenInference (as
// langchain_openinference.mjs): ONE model turn asks for lookup_customer twice, then the model
// answers. Two logical calls (two call ids), no failure, no retry.
//  diff: the two calls have different arguments (two customers).
//  same: the two calls have the SAME arguments (e.g. the model asks twice for one record).
// usage: node langchain_openinference_turn.mjs <diff|same> <out.jsonl> <truth.json>
import fs from 'node:fs';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { LangChainInstrumentation } from '@arizeai/openinference-instrumentation-langchain';
import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { startReceiver } from './receiver.mjs';

const [scenario = 'diff', outFile, truthFile] = process.argv.slice(2);
if (!['diff', 'same'].includes(scenario)) throw new Error(`unknown scenario ${scenario}`);
const receiver = await startReceiver(outFile);
const exporter = new OTLPTraceExporter({ url: receiver.url });
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'capture-langchain-openinference' }),
  spanProcessors: [new BatchSpanProcessor(exporter)],
});
provider.register();
new LangChainInstrumentation({ tracerProvider: provider }).manuallyInstrument(CallbackManagerModule);

const { createAgent, tool } = await import('langchain');
const { AIMessage, HumanMessage } = await import('@langchain/core/messages');
const { fakeModel } = await import('@langchain/core/testing');
const { z } = await import('zod');

const S = scenario === 'diff' ? 'd' : 'm';
const D = scenario === 'diff' ? '5' : '6';
const args1 = { customer_id: `cus_lt${S}_Bn3Vq8Ke`, email: `jonas.berg.lt${S}@example.com` };
const args2 = scenario === 'diff' ? { customer_id: `cus_lt${S}_Pw7Hs2Ua`, email: `elin.berg.lt${S}@example.com` } : { ...args1 };
// each execution returns its own record (a fresh lookup ref), so every result is unique
const resultsByCall = [
  { account_ref: `acct_lt${S}_Gm4Xc9Ro`, full_name: `Jonas Berg LT${S.toUpperCase()}-Customer`, phone: `+46-70-${D}12-3456`, lookup_ref: `lkp_lt${S}_Ta61Wd` },
  scenario === 'diff'
    ? { account_ref: `acct_lt${S}_Zq8Lf3Ny`, full_name: `Elin Berg LT${S.toUpperCase()}-Customer`, phone: `+46-70-${D}98-7654`, lookup_ref: `lkp_lt${S}_Yc27Mv` }
    : { account_ref: `acct_lt${S}_Gm4Xc9Ro`, full_name: `Jonas Berg LT${S.toUpperCase()}-Customer`, phone: `+46-70-${D}12-3456`, lookup_ref: `lkp_lt${S}_Yc27Mv` },
];
const truthTools = [];
let lookups = 0;
const lookupCustomer = tool(async (args, config) => {
  const result = resultsByCall[lookups++];
  truthTools.push({ tool: 'lookup_customer', call_id: config?.toolCall?.id ?? null, arguments: args, result: JSON.stringify(result), failed: false });
  return JSON.stringify(result);
}, { name: 'lookup_customer', description: 'Look up a customer record', schema: z.object({ customer_id: z.string(), email: z.string() }) });

const id1 = `call_lt${S}_lookup_1`, id2 = `call_lt${S}_lookup_2`;
const model = fakeModel()
  .respond(new AIMessage({ content: scenario === 'diff' ? 'Let me look up both account holders.' : 'Let me look up the customer record.', tool_calls: [
    { id: id1, name: 'lookup_customer', args: args1, type: 'tool_call' },
    { id: id2, name: 'lookup_customer', args: args2, type: 'tool_call' },
  ] }))
  .respond(new AIMessage('Both lookups are done; the records are ready.'));
const agent = createAgent({
  name: 'checkout-agent',
  model,
  tools: [lookupCustomer],
  systemPrompt: 'You are a checkout assistant. Use the tools to look up customers.',
});
const res = await agent.invoke({ messages: [new HumanMessage('Please look up the account holders of order 9912.')] });
console.error('final:', res.messages.at(-1).content, 'messages:', res.messages.length, 'lookups:', lookups);
await provider.forceFlush();
await provider.shutdown();
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);

// the ToolNode runs a turn's calls concurrently: order the expectation by call id
const call = (cid) => ({ tool: 'lookup_customer', attempts: 1, attempt_statuses: ['ok'], retry_layer: null, failed_attempts_hidden: false, span_names: ['lookup_customer'], call_ids: [cid] });
const expect = {
  calls: [call(id1), call(id2)],
  agent_spans: [{ name: 'checkout-agent', marker: 'openinference.span.kind=CHAIN (the LangGraph root; OpenInference has no AGENT kind here)' }],
  notes: scenario === 'diff'
    ? 'one model turn (one AIMessage) with two lookup_customer tool calls with different arguments; both run in the same LangGraph tools step; two logical calls, no retry.'
    : 'one model turn (one AIMessage) with two lookup_customer tool calls with IDENTICAL arguments and different call ids; both run in the same LangGraph tools step; two logical calls, not a retry. OpenInference TOOL spans carry no call id, so the two spans differ only in their results (lookup_ref).',
};
// @langchain/openai and openai are loaded only by langchain_openinference.mjs chatopenai
const pkgs = Object.fromEntries(Object.entries(JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies)
  .filter(([name]) => !['@langchain/openai', 'openai'].includes(name)));
fs.writeFileSync(truthFile, JSON.stringify({
  sdk: `langchain.js createAgent + OpenInference (batch span processor, one turn with two calls, ${scenario === 'diff' ? 'different' : 'same'} arguments)`,
  packages: pkgs, tools: truthTools, expect,
  note: 'tools return JSON strings; call_id is the tool call id the tool saw (config.toolCall.id)',
}, null, 2) + '\n');
