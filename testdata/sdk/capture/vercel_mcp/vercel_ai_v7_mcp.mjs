// Vercel AI SDK v7 (ai + @ai-sdk/otel) scripted agent run with MockLanguageModelV4 whose tools
// come from an in-process MCP server (@modelcontextprotocol/sdk McpServer over InMemoryTransport)
// through the AI SDK's own MCP client (`createMCPClient` from @ai-sdk/mcp, `client.tools()`).
// charge_card returns an MCP result with `isError: true` on its first call; the AI SDK hands that
// result to the model as a normal tool result, and the model calls charge_card again with a new
// call id and a backup card; the second call succeeds.
// usage: node vercel_ai_v7_mcp.mjs [batch|simple] <out.jsonl> <truth.json>
import fs from 'node:fs';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { ToolLoopAgent, registerTelemetry, isStepCount } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { OpenTelemetry } from '@ai-sdk/otel';
import { createMCPClient } from '@ai-sdk/mcp';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { z } from 'zod';
import { startReceiver } from './receiver.mjs';

const [proc = 'batch', outFile, truthFile] = process.argv.slice(2);
if (proc !== 'batch') throw new Error('only the batch span processor has its own values');

const receiver = await startReceiver(outFile);
const exporter = new OTLPTraceExporter({ url: receiver.url });
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'capture-vercel-ai-v7-mcp' }),
  spanProcessors: [proc === 'batch' ? new BatchSpanProcessor(exporter) : new SimpleSpanProcessor(exporter)],
});
provider.register();
registerTelemetry(new OpenTelemetry());

// values used by no other capture (tag v7mcp)
const calls = {
  lookup: { customer_id: 'cus_v7mcp_Tn4Rw8Yz', email: 'lena.kraus.v7mcp@example.com' },
  charge1: { card_number: '4000002760003184', email: 'lena.kraus.pay.v7mcp@example.com', amount_cents: 4315, iban: 'NL91ABNA0417164300' },
  charge2: { card_number: '5200828282828210', email: 'lena.kraus.retry.v7mcp@example.com', amount_cents: 4315, iban: 'NL20INGB0001234567' },
};
const results = {
  lookup: { account_ref: 'acct_v7mcp_Hs5Jd2Qe', full_name: 'Lena Kraus MCP-Customer', phone: '+31-6-2468-1357', default_card_token: 'tok_v7mcp_card_Pw63Zr' },
  charge2: { charge_id: 'ch_v7mcp_8TgBv4Nc', receipt_email: 'receipts+v7mcp@example.org', last4_token: 'tok_mc_v7mcp_8210q5' },
};
const chargeErrorText = `card_declined: insufficient funds on card ${calls.charge1.card_number} (decline ref dcl_v7mcp_Kx38Fm)`;
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
    truthTools.push({ tool: 'charge_card', arguments: args, result, failed: true });
    return result;
  }
  const result = { content: [{ type: 'text', text: JSON.stringify(results.charge2) }] };
  truthTools.push({ tool: 'charge_card', arguments: args, result, failed: false });
  return result;
});
const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
await server.connect(serverTransport);
// the MCP SDK's InMemoryTransport has the shape the AI SDK's MCPTransport asks for (start, send,
// close, onmessage, onclose, onerror); without supportsProtocolVersionDiscovery the client uses
// the `initialize` handshake
const mcp = await createMCPClient({ transport: clientTransport, clientName: 'capture-vercel-ai-v7-mcp' });
const tools = await mcp.tools();

// ---- scripted model
const usage = (i, o) => ({
  inputTokens: { total: i, noCache: i, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: o, text: o, reasoning: 0 },
});
const toolCall = (id, name, input) => ({ type: 'tool-call', toolCallId: id, toolName: name, input: JSON.stringify(input) });
const steps = [
  { content: [{ type: 'text', text: 'Let me look up the customer record first.' }, toolCall('call_mcp_lookup_1', 'lookup_customer', calls.lookup)], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(130, 30) },
  { content: [{ type: 'text', text: 'Found the customer. Charging the card now.' }, toolCall('call_mcp_charge_1', 'charge_card', calls.charge1)], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(190, 40) },
  { content: [{ type: 'text', text: 'The first charge attempt failed; retrying with the backup card.' }, toolCall('call_mcp_charge_2', 'charge_card', calls.charge2)], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(250, 40) },
  { content: [{ type: 'text', text: 'Done: the order is paid and the receipt is on its way.' }], finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(310, 20) },
];
let step = 0;
const seenToolResults = [];
const model = new MockLanguageModelV4({
  provider: 'mock-provider',
  modelId: 'mock-model-v4',
  doGenerate: async (options) => {
    // what the model is shown of each earlier tool call (checked below: the isError result
    // reaches the model as a tool result)
    for (const m of options.prompt) {
      if (m.role !== 'tool') continue;
      for (const p of m.content) if (p.type === 'tool-result' && !seenToolResults.some((s) => s.toolCallId === p.toolCallId)) seenToolResults.push({ toolCallId: p.toolCallId, output: p.output });
    }
    return { ...steps[step], response: { id: `resp_mcp_${step}`, modelId: 'mock-model-v4', timestamp: new Date((step++) * 1000) }, warnings: [] };
  },
});

const agent = new ToolLoopAgent({
  id: 'checkout-agent',
  instructions: 'You are a checkout assistant. Use the tools to look up customers and charge cards.',
  model,
  stopWhen: isStepCount(6),
  telemetry: { functionId: 'checkout-agent' },
  tools,
});

const res = await agent.generate({ prompt: 'Please charge the customer from order 6184 for the open invoice and send the receipt.' });
console.error('final text:', res.text, 'steps:', res.steps.length, 'charge attempts:', chargeAttempts);
const failedSeen = seenToolResults.find((s) => s.toolCallId === 'call_mcp_charge_1');
console.error('model saw for call_mcp_charge_1:', JSON.stringify(failedSeen?.output));
await mcp.close();
await provider.forceFlush();
await provider.shutdown();
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);

// the MCP server does not see the AI SDK's toolCallId: match the scripted ids by order (one
// tool call per model step, executed in order)
const ids = { lookup_customer: ['call_mcp_lookup_1'], charge_card: ['call_mcp_charge_1', 'call_mcp_charge_2'] };
for (const t of truthTools) t.call_id = ids[t.tool].shift();
const chargeRuns = truthTools.filter((t) => t.tool === 'charge_card');
if (chargeRuns.length !== 2 || !chargeRuns[0].failed || chargeRuns[1].failed || truthTools.length !== 3) {
  throw new Error(`expected lookup + failed charge + successful charge, got ${JSON.stringify(truthTools.map((t) => [t.tool, t.failed]))}`);
}
if (!failedSeen) throw new Error('the model never saw a tool result for call_mcp_charge_1');
const expect = {
  calls: [
    { tool: 'lookup_customer', attempts: 1, attempt_statuses: ['ok'], retry_layer: null, failed_attempts_hidden: false, span_names: ['execute_tool lookup_customer'], call_ids: ['call_mcp_lookup_1'] },
    { tool: 'charge_card', attempts: 1, attempt_statuses: ['error'], retry_layer: null, failed_attempts_hidden: true, span_names: ['execute_tool charge_card'], call_ids: ['call_mcp_charge_1'] },
    { tool: 'charge_card', attempts: 1, attempt_statuses: ['ok'], retry_layer: 'agent', failed_attempts_hidden: false, span_names: ['execute_tool charge_card'], call_ids: ['call_mcp_charge_2'] },
  ],
  // @ai-sdk/otel names the agent span after the model id (`invoke_agent <modelId>`); the agent's
  // id is in gen_ai.agent.name
  agent_spans: [{ name: 'invoke_agent mock-model-v4', marker: 'gen_ai.operation.name=invoke_agent' }],
  notes: 'charge_card returned an MCP CallToolResult with isError: true once; the AI SDK MCP client (@ai-sdk/mcp createMCPClient, tools()) returns an isError result from the tool\'s execute instead of throwing, so the execute_tool span ends without error status and the result (with isError: true and the error text) is the tool output; it goes back to the model, which called charge_card again with a new toolCallId and changed arguments (backup card, email, IBAN). Two logical calls of the same tool: the second is the agent-level retry of the first. The model is shown the failed result without the flag (tool-result output {type: content, value: [text part]}, mcpToModelOutput drops isError).',
};
const pkgs = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies;
fs.writeFileSync(truthFile, JSON.stringify({
  sdk: `vercel-ai-v7 + MCP (@ai-sdk/otel OpenTelemetry, ${proc} span processor, tools from @ai-sdk/mcp createMCPClient over an in-process McpServer)`,
  packages: pkgs,
  tools: truthTools.map(({ tool, call_id, arguments: a, result, failed }) => ({ tool, call_id, arguments: a, result, failed })),
  expect,
  note: 'tool results are MCP CallToolResult objects as the server returned them; call_id is the scripted model toolCallId, matched by order',
}, null, 2) + '\n');
