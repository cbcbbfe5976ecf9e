// Strands Agents TS scenarios around a failing MCP tool (scripted Model subclass, in-process
// McpServer over InMemoryTransport via McpClient, as strands.mjs).
//  hidden: charge_card returns isError: true twice; an AfterToolCallEvent hook sets
//          event.retry = true after each failure, the third execution succeeds (one model
//          tool call, one toolUseId, three executions).
//  recall: charge_card returns isError: true once; the failure goes back to the model, which
//          calls charge_card again with a new toolUseId and a backup card (two model calls).
//  unrecovered: charge_card returns isError: true on every execution; the hook sets
//          event.retry = true once (two executions of one toolUseId, both failing), the last
//          failure goes back to the model, which answers as if the payment went through.
// usage: node strands_scenarios.mjs <hidden|recall|unrecovered> <out.jsonl> <truth.json>
import fs from 'node:fs';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Agent, Model, McpClient, AfterToolCallEvent } from '@strands-agents/sdk';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { z } from 'zod';
import { startReceiver } from './receiver.mjs';

const [scenario = 'hidden', outFile, truthFile] = process.argv.slice(2);
if (!['hidden', 'recall', 'unrecovered'].includes(scenario)) throw new Error(`unknown scenario ${scenario}`);
const receiver = await startReceiver(outFile);
const exporter = new OTLPTraceExporter({ url: receiver.url });
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'capture-strands' }),
  spanProcessors: [new BatchSpanProcessor(exporter)],
});
provider.register();

const S = { hidden: 'h', recall: 'r', unrecovered: 'u' }[scenario];
const D = { hidden: '8', recall: '9', unrecovered: '6' }[scenario];
const calls = {
  lookup: { customer_id: `cus_st${S}_Wm4Tz8Qa`, email: `nadia.rahman.st${S}@example.com` },
  charge: { card_number: `60111111111${D}2224`, email: `nadia.rahman.pay${S}@example.com`, amount_cents: 3125, iban: `DE8937040044053201${D}300` },
  // recall only: the model's second call, with a backup card
  charge2: { card_number: `60111111111${D}3331`, email: `nadia.rahman.backup${S}@example.com`, amount_cents: 3125, iban: `DE8937040044053201${D}411` },
};
const results = {
  lookup: { account_ref: `acct_st${S}_Hy6Lp3Ve`, full_name: `Nadia Rahman ST${S.toUpperCase()}-Customer`, phone: `+49-151-${D}2-345-678`, default_card_token: `tok_st${S}_card_Jk29Bw` },
  charge: { charge_id: `ch_st${S}_9PqWe2Rt`, receipt_email: `receipts+31${D}5@example.org`, last4_token: `tok_disc_st${S}_2224m7` },
};
const failRefs = [`dnh_st${S}_Ba41Cx`, `dnh_st${S}_Kd58Fy`];
const errorText = (card, n) => `do_not_honor: issuer declined card ${card} (auth ref ${failRefs[n]})`;
// executions of charge_card that fail, and re-runs the AfterToolCallEvent hook asks for
const failures = { hidden: 2, recall: 1, unrecovered: Infinity }[scenario];
const hookRetries = { hidden: 2, recall: 0, unrecovered: 1 }[scenario];
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
  if (chargeAttempts <= failures) {
    const result = { content: [{ type: 'text', text: errorText(args.card_number, chargeAttempts - 1) }], isError: true };
    truthTools.push({ tool: 'charge_card', attempt: chargeAttempts, arguments: args, result, failed: true });
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
const steps = [
  { text: 'Let me look up the customer record first.', call: [`tooluse_st${S}_lookup_1`, 'lookup_customer', calls.lookup] },
  { text: 'Found the customer. Charging the card now.', call: [`tooluse_st${S}_charge_1`, 'charge_card', calls.charge] },
  ...(scenario === 'recall' ? [{ text: 'The card was declined. Trying the backup card on file.', call: [`tooluse_st${S}_charge_2`, 'charge_card', calls.charge2] }] : []),
  // unrecovered: the last execution failed, yet the model answers green
  { text: scenario === 'unrecovered' ? 'Done: the payment went through, the order is paid and the receipt is on its way.' : 'Done: the order is paid and the receipt is on its way.' },
];
class ScriptedModel extends Model {
  constructor() { super(); this.config = { modelId: 'scripted-model-1' }; this.step = 0; }
  updateConfig(c) { this.config = { ...this.config, ...c }; }
  getConfig() { return this.config; }
  async *stream(_messages, _options) {
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
  tools: [mcp],
  systemPrompt: 'You are a checkout assistant. Use the tools to look up customers and charge cards.',
  printer: false,
});
let retried = 0;
if (hookRetries > 0) {
  agent.addHook(AfterToolCallEvent, (event) => {
    if (event.toolUse.name === 'charge_card' && event.result?.status === 'error' && retried < hookRetries) {
      retried++;
      event.retry = true;
    }
  });
}
const res = await agent.invoke('Please charge the customer from order 7730 for the open invoice and send the receipt.');
console.error('final:', String(res).slice(0, 100), 'retried:', retried, 'attempts:', chargeAttempts);
await mcp.disconnect();
await provider.forceFlush();
await provider.shutdown();
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);

// the MCP server does not see the toolUseId: match the scripted ids by order
const ids = {
  lookup_customer: [`tooluse_st${S}_lookup_1`],
  charge_card: {
    hidden: [`tooluse_st${S}_charge_1`, `tooluse_st${S}_charge_1`, `tooluse_st${S}_charge_1`],
    recall: [`tooluse_st${S}_charge_1`, `tooluse_st${S}_charge_2`],
    unrecovered: [`tooluse_st${S}_charge_1`, `tooluse_st${S}_charge_1`],
  }[scenario],
};
for (const t of truthTools) t.call_id = ids[t.tool].shift();
const lookupCall = { tool: 'lookup_customer', attempts: 1, attempt_statuses: ['ok'], retry_layer: null, failed_attempts_hidden: false, span_names: ['execute_tool lookup_customer'], call_ids: [`tooluse_st${S}_lookup_1`] };
// unrecovered: the expectation is read off what the tool saw (one call, every execution failed)
const chargeRuns = truthTools.filter((t) => t.tool === 'charge_card');
if (scenario === 'unrecovered' && (chargeRuns.length !== 2 || chargeRuns.some((t) => !t.failed) || retried !== 1)) {
  throw new Error(`unrecovered: expected 2 failed charge_card executions after 1 hook retry, got ${chargeRuns.length} (retried ${retried})`);
}
const expect = scenario === 'unrecovered'
  ? {
      calls: [lookupCall, {
        tool: 'charge_card', attempts: chargeRuns.length, attempt_statuses: chargeRuns.map((t) => (t.failed ? 'error' : 'ok')), retry_layer: 'tool_runtime', failed_attempts_hidden: true,
        span_names: chargeRuns.map(() => 'execute_tool charge_card'), call_ids: chargeRuns.map((t) => t.call_id),
      }],
      agent_spans: [{ name: 'invoke_agent checkout-agent', marker: 'gen_ai.operation.name=invoke_agent' }],
      unrecovered: true,
      notes: 'charge_card returned MCP isError: true on both executions of ONE call (one toolUseId, same arguments): an AfterToolCallEvent hook set event.retry = true once, the second execution failed too and its result went back to the model, which answered that the payment went through. Both execute_tool spans (siblings in the same execute_agent_loop_cycle) end with status OK; only gen_ai.tool.status=error and the error text in their gen_ai.choice event mark the failures. The invoke_agent span is status OK and its gen_ai.choice event message is the green final text; the next chat / cycle spans quote only the LAST execution\'s error result (toolResult status error), the first execution\'s error text appears only on its own span.',
    }
  : scenario === 'hidden'
  ? {
      calls: [lookupCall, {
        tool: 'charge_card', attempts: 3, attempt_statuses: ['error', 'error', 'ok'], retry_layer: 'tool_runtime', failed_attempts_hidden: true,
        span_names: ['execute_tool charge_card', 'execute_tool charge_card', 'execute_tool charge_card'],
        call_ids: [`tooluse_st${S}_charge_1`, `tooluse_st${S}_charge_1`, `tooluse_st${S}_charge_1`],
      }],
      agent_spans: [{ name: 'invoke_agent checkout-agent', marker: 'gen_ai.operation.name=invoke_agent' }],
      notes: 'charge_card returned MCP isError: true twice; an AfterToolCallEvent hook set event.retry = true each time, so the model made ONE call (one toolUseId, same arguments) executed three times. Every execute_tool span ends with status OK; only gen_ai.tool.status=error (and the error text in the gen_ai.choice event) marks the two failed executions. Arguments are identical on all three.',
    }
  : {
      calls: [lookupCall, {
        tool: 'charge_card', attempts: 1, attempt_statuses: ['error'], retry_layer: null, failed_attempts_hidden: true,
        span_names: ['execute_tool charge_card'], call_ids: [`tooluse_st${S}_charge_1`],
      }, {
        tool: 'charge_card', attempts: 1, attempt_statuses: ['ok'], retry_layer: 'agent', failed_attempts_hidden: false,
        span_names: ['execute_tool charge_card'], call_ids: [`tooluse_st${S}_charge_2`],
      }],
      agent_spans: [{ name: 'invoke_agent checkout-agent', marker: 'gen_ai.operation.name=invoke_agent' }],
      notes: 'charge_card returned MCP isError: true once; the result went back to the model, which called charge_card again with a new toolUseId and changed arguments (backup card, email, IBAN). Two logical calls of the same tool: the second is the agent-level retry of the first. Both execute_tool spans are status OK; the first has gen_ai.tool.status=error.',
    };
const pkgs = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies;
fs.writeFileSync(truthFile, JSON.stringify({
  sdk: `strands-agents ts + MCP (batch span processor, scenario ${scenario})`, packages: pkgs,
  tools: truthTools.map(({ tool, call_id, attempt, arguments: a, result, failed }) => ({ tool, call_id, attempt, arguments: a, result, failed })),
  expect,
  note: 'tool results are MCP CallToolResult objects; call_id is the scripted model toolUseId, matched by order',
}, null, 2) + '\n');
