// VoltAgent (@voltagent/core 2.10.0) runs traced by VoltAgent's OWN OpenTelemetry observability
// (`VoltAgentObservability`: its own NodeTracerProvider, scope `@voltagent/core`, spans opened
// by the agent for the run, each model call and each tool execution). Its `spanProcessors`
// option takes our BatchSpanProcessor + OTLPTraceExporter (http/json 0.203.0, VoltAgent's own
// exporter line); VoltOps remote export is switched off (`voltOpsSync.sampling.strategy:
// 'never'`), the in-memory / WebSocket processors it always adds send nothing. VoltAgent has no
// content-capture switch: input/output/messages are always written. The agent runs on the
// Vercel AI SDK (`ai` 6) and the model is `MockLanguageModelV3` from `ai/test` (`doGenerate`,
// scripted steps); VoltAgent passes no `experimental_telemetry` to the AI SDK, so only
// VoltAgent's spans are exported.
//  recall: charge_card throws once. VoltAgent catches a thrown tool error itself and hands the
//          model an error result ({error: true, name, message, stack, toolCallId, toolName});
//          the model calls charge_card again with a new toolCallId and a backup card.
//  mcp:    the tools come from an McpServer in this process served over
//          StreamableHTTPServerTransport on a node http server bound to 127.0.0.1 (port 0), through
//          VoltAgent's `MCPConfiguration({ servers: { payments: { type: 'streamable-http', url } } })`
//          (VoltAgent's MCP client takes only a URL or a command, no in-memory transport);
//          charge_card returns `isError: true` once, the model calls it again.
// usage: node voltagent_scenarios.mjs <recall|mcp> <out.jsonl> <truth.json>
import fs from 'node:fs';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { MockLanguageModelV3 } from 'ai/test';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { startReceiver } from './receiver.mjs';

// Outside production @voltagent/core starts, when its module loads, an auto-refresh of its model
// provider registry from https://models.dev; the VoltAgent class checks npm for newer versions
// unless `checkDependencies: false`. Neither may leave this machine: NODE_ENV=production is set
// before the module is imported, and the global fetch refuses (and records) any non-loopback URL.
process.env.NODE_ENV = 'production';
const refusedFetches = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
  if (url.hostname !== '127.0.0.1') { refusedFetches.push(url.origin); throw new Error(`capture: refused fetch to ${url.origin}`); }
  return realFetch(input, init);
};
const { VoltAgent, Agent, createTool, VoltAgentObservability, MCPConfiguration } = await import('@voltagent/core');
const { createPinoLogger } = await import('@voltagent/logger');

const [scenario = 'recall', outFile, truthFile] = process.argv.slice(2);
if (!['recall', 'mcp'].includes(scenario)) throw new Error(`unknown scenario ${scenario}`);
const receiver = await startReceiver(outFile);
const processor = new BatchSpanProcessor(new OTLPTraceExporter({ url: receiver.url }));
const observability = new VoltAgentObservability({
  serviceName: 'capture-voltagent',
  serviceVersion: '1.0.0',
  spanProcessors: [processor],
  voltOpsSync: { sampling: { strategy: 'never' } },
});

// values used by no other capture (tag vlr / vlm)
const T = { recall: 'vlr', mcp: 'vlm' }[scenario];
const D = { recall: '2', mcp: '8' }[scenario];
const calls = {
  lookup: { customer_id: `cus_${T}_Hd3Kv9Ws`, email: `tomas.novak.${T}@example.com` },
  charge1: { card_number: `52555555555${D}4444`, email: `tomas.novak.pay.${T}@example.com`, amount_cents: 4415, iban: `CZ65080000001920001${D}5399` },
  charge2: { card_number: `40000566555${D}5556`, email: `tomas.novak.backup.${T}@example.com`, amount_cents: 4415, iban: `SK31120000001987426${D}7535` },
};
const results = {
  lookup: { account_ref: `acct_${T}_Np7Bq2Xe`, full_name: `Tomas Novak ${T.toUpperCase()}-Customer`, phone: `+420-601-${D}23-487`, default_card_token: `tok_${T}_card_Mz84Rc` },
  charge: { charge_id: `ch_${T}_7YsKd3Fv`, receipt_email: `receipts+${T}@example.org`, last4_token: `tok_mc_${T}_4444k9` },
};
const chargeErrorText = `do_not_honor: issuer declined card ${calls.charge1.card_number} (auth ref dnh_${T}_Gp58Tw)`;
const truthTools = [];
let chargeAttempts = 0;

// ---- tools
let tools;
let mcpConfig;
let httpServer;
let serverTransport;
const mcpMethods = [];
if (scenario === 'mcp') {
  const mcpServer = new McpServer({ name: 'payments-mcp', version: '1.0.0' });
  mcpServer.registerTool('lookup_customer', {
    description: 'Look up a customer record',
    inputSchema: { customer_id: z.string(), email: z.string() },
  }, async (args) => {
    const result = { content: [{ type: 'text', text: JSON.stringify(results.lookup) }] };
    truthTools.push({ tool: 'lookup_customer', arguments: args, result, failed: false });
    return result;
  });
  mcpServer.registerTool('charge_card', {
    description: 'Charge a payment card',
    inputSchema: { card_number: z.string(), email: z.string(), amount_cents: z.number(), iban: z.string() },
  }, async (args) => {
    chargeAttempts++;
    if (chargeAttempts === 1) {
      const result = { content: [{ type: 'text', text: chargeErrorText }], isError: true };
      truthTools.push({ tool: 'charge_card', arguments: args, result, failed: true });
      return result;
    }
    const result = { content: [{ type: 'text', text: JSON.stringify(results.charge) }] };
    truthTools.push({ tool: 'charge_card', arguments: args, result, failed: false });
    return result;
  });
  serverTransport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
  await mcpServer.connect(serverTransport);
  httpServer = http.createServer(async (req, res) => {
    if (req.url !== '/mcp') { res.writeHead(404).end(); return; }
    let body;
    if (req.method === 'POST') {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const m of [body].flat()) if (m.method) mcpMethods.push(m.method);
    }
    await serverTransport.handleRequest(req, res, body);
  });
  await new Promise((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${httpServer.address().port}/mcp`;
  mcpConfig = new MCPConfiguration({ servers: { payments: { type: 'streamable-http', url } } });
  tools = await mcpConfig.getTools();
} else {
  tools = [
    createTool({
      name: 'lookup_customer',
      description: 'Look up a customer record',
      parameters: z.object({ customer_id: z.string(), email: z.string() }),
      execute: async (args, opts) => {
        truthTools.push({ tool: 'lookup_customer', call_id: opts?.toolContext?.callId, arguments: args, result: results.lookup, failed: false });
        return results.lookup;
      },
    }),
    createTool({
      name: 'charge_card',
      description: 'Charge a payment card',
      parameters: z.object({ card_number: z.string(), email: z.string(), amount_cents: z.number(), iban: z.string() }),
      execute: async (args, opts) => {
        chargeAttempts++;
        if (chargeAttempts === 1) {
          truthTools.push({ tool: 'charge_card', call_id: opts?.toolContext?.callId, arguments: args, result: chargeErrorText, failed: true });
          throw new Error(chargeErrorText);
        }
        truthTools.push({ tool: 'charge_card', call_id: opts?.toolContext?.callId, arguments: args, result: results.charge, failed: false });
        return results.charge;
      },
    }),
  ];
}
const toolNames = tools.map((t) => t.name);
const nameOf = (short) => toolNames.find((n) => n === short || n.endsWith(`_${short}`));

// ---- scripted model
const steps = [
  { text: 'Let me look up the customer record first.', call: [`call_${T}_lookup_1`, nameOf('lookup_customer'), calls.lookup] },
  { text: 'Found the customer. Charging the card now.', call: [`call_${T}_charge_1`, nameOf('charge_card'), calls.charge1] },
  { text: 'The card was declined. Trying the backup card on file.', call: [`call_${T}_charge_2`, nameOf('charge_card'), calls.charge2] },
  { text: 'Done: the order is paid and the receipt is on its way.' },
];
let step = 0;
const toolResultsSeen = new Map(); // toolCallId -> tool-result output the model was sent
const model = new MockLanguageModelV3({
  provider: 'scripted',
  modelId: 'scripted-model-1',
  doGenerate: async (options) => {
    for (const m of options.prompt) {
      if (m.role !== 'tool') continue;
      for (const p of m.content) if (p.type === 'tool-result' && !toolResultsSeen.has(p.toolCallId)) toolResultsSeen.set(p.toolCallId, p.output);
    }
    const s = steps[Math.min(step++, steps.length - 1)];
    const content = [{ type: 'text', text: s.text }];
    if (s.call) content.push({ type: 'tool-call', toolCallId: s.call[0], toolName: s.call[1], input: JSON.stringify(s.call[2]) });
    return {
      content,
      finishReason: { unified: s.call ? 'tool-calls' : 'stop', raw: s.call ? 'tool_calls' : 'stop' },
      usage: {
        inputTokens: { total: 100 + step * 40, noCache: 100 + step * 40, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: 25, text: 25, reasoning: undefined },
      },
      response: { id: `resp_${T}_${step}`, modelId: 'scripted-model-1', timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, step)) },
      warnings: [],
    };
  },
});

const agent = new Agent({
  name: 'checkout-agent',
  instructions: 'You are a checkout assistant. Use the tools to look up customers and charge cards.',
  model,
  tools,
  maxSteps: 8,
});
const volt = new VoltAgent({ agents: { 'checkout-agent': agent }, observability, logger: createPinoLogger({ level: 'error' }), checkDependencies: false });
const res = await agent.generateText('Please charge the customer from order 4415 for the open invoice and send the receipt.');
console.error('final:', res.text, 'attempts:', chargeAttempts, 'model steps:', step);
console.error('model saw for charge_1:', JSON.stringify(toolResultsSeen.get(`call_${T}_charge_1`)).slice(0, 300));
if (mcpConfig) { console.error('MCP methods:', JSON.stringify(mcpMethods)); await mcpConfig.disconnect(); }
await observability.forceFlush?.();
await processor.forceFlush();
await volt.shutdownTelemetry?.();
if (httpServer) { await serverTransport.close(); await new Promise((resolve) => httpServer.close(resolve)); }
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);
if (refusedFetches.length) throw new Error(`non-loopback fetches were attempted: ${refusedFetches.join(', ')}`);

// ---- truth
if (scenario === 'mcp') {
  // the MCP server does not see the toolCallId: match the scripted ids by order
  const ids = { lookup_customer: [`call_${T}_lookup_1`], charge_card: [`call_${T}_charge_1`, `call_${T}_charge_2`] };
  for (const t of truthTools) t.call_id = ids[t.tool].shift();
}
const chargeRuns = truthTools.filter((t) => t.tool === 'charge_card');
if (chargeRuns.length !== 2 || !chargeRuns[0].failed || chargeRuns[1].failed || truthTools.length !== 3) {
  throw new Error(`expected lookup + failed charge + successful charge, got ${JSON.stringify(truthTools.map((t) => [t.tool, t.failed]))}`);
}
if (!JSON.stringify(toolResultsSeen.get(`call_${T}_charge_1`) ?? '').includes(`dnh_${T}_Gp58Tw`)) throw new Error('the model was not sent the error text');
const fs_ = (n) => `tool.execution:${nameOf(n)}`;
const expect = {
  calls: [
    { tool: 'lookup_customer', attempts: 1, attempt_statuses: ['ok'], retry_layer: null, failed_attempts_hidden: false, span_names: [fs_('lookup_customer')], call_ids: [`call_${T}_lookup_1`] },
    { tool: 'charge_card', attempts: 1, attempt_statuses: ['error'], retry_layer: null, failed_attempts_hidden: scenario === 'mcp', span_names: [fs_('charge_card')], call_ids: [`call_${T}_charge_1`] },
    { tool: 'charge_card', attempts: 1, attempt_statuses: ['ok'], retry_layer: 'agent', failed_attempts_hidden: false, span_names: [fs_('charge_card')], call_ids: [`call_${T}_charge_2`] },
  ],
  agent_spans: [{ name: 'checkout-agent', marker: 'entity.type=agent without span.type (the root; its llm and tool children carry entity.type=agent too, with span.type=llm / tool)' }],
  notes: scenario === 'mcp'
    ? 'charge_card (MCP, through VoltAgent\'s MCPConfiguration over streamable HTTP on 127.0.0.1) returned isError: true once. VoltAgent\'s MCP tool returns the whole CallToolResult as the tool output (no throw), so the failed `tool.execution:payments_charge_card` span (CLIENT, span.type=tool) is status OK like the successful ones; only its `output` attribute {"content":[{"type":"text","text":"<error text>"}],"isError":true} shows the failure. The model got the same object as a json tool-result and called charge_card again with a new toolCallId and changed arguments (backup card, email, IBAN): two logical calls, the second an agent-level retry. MCP tools are named `payments_<tool>` (server key + underscore). Tool spans carry tool.name and tool.call.id (the model\'s toolCallId) and are direct children of the agent span, siblings of the single `llm:generateText` span (one for the whole multi-step generateText: its llm.messages is only the system + user prompt and it records no output, so the model\'s tool calls and the tool results are copied nowhere but the tool spans).'
    : 'charge_card threw once. VoltAgent catches a thrown tool error itself: the `tool.execution:charge_card` span (CLIENT, span.type=tool) ends status ERROR with the message as status message, error.type/error.message/error.stage/error.stack attributes and an exception event; no `output` attribute. The model was handed {error: true, name, message, stack, toolCallId, toolName} as a json tool-result (this object is recorded on no span) and called charge_card again with a new toolCallId and changed arguments (backup card, email, IBAN): two logical calls, the second an agent-level retry. Tool spans carry tool.name and tool.call.id (the model\'s toolCallId) and are direct children of the agent span, siblings of the single `llm:generateText` span (one for the whole multi-step generateText: its llm.messages is only the system + user prompt and it records no output, so the model\'s tool calls and the tool results are copied nowhere but the tool spans). The agent span and the llm span end OK.',
};
const pkgs = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies;
fs.writeFileSync(truthFile, JSON.stringify({
  sdk: `voltagent (built-in OTel observability, batch span processor, scenario ${scenario})`,
  packages: pkgs,
  tools: truthTools.map(({ tool, call_id, arguments: a, result, failed }) => ({ tool, call_id, arguments: a, result, failed })),
  expect,
  note: scenario === 'mcp' ? 'tool results are MCP CallToolResult objects as the server returned them; call_id is the scripted toolCallId, matched by order' : 'call_id is the toolCallId VoltAgent handed the tool (toolContext.callId); a thrown error is recorded as `result` = the text it threw, with failed: true',
}, null, 2) + '\n');
process.exit(0);
