// OpenAI Agents JS run traced by @arizeai/openinference-instrumentation-openai-agents whose tools
// come from an MCP server in the same process. @openai/agents 0.20.0 has no MCP server class
// that takes an in-memory transport or a ready client (MCPServerStdio spawns a process,
// MCPServerStreamableHttp / MCPServerSSE take a URL), so the MCP SDK's McpServer is served over
// StreamableHTTPServerTransport on a node http server bound to 127.0.0.1 (port 0) and the agent
// connects with the SDK's own MCPServerStreamableHttp (its client is @modelcontextprotocol/client,
// a dependency of @openai/agents-core). The model is the real OpenAIChatCompletionsModel over an
// `openai` client whose `fetch` answers scripted chat completions in process (no socket).
// charge_card returns an MCP result with `isError: true` on its first call; the model calls
// charge_card again with a new call id and a backup card; the second call succeeds.
// usage: node openai_agents_mcp.mjs [recall] <out.jsonl> <truth.json>
import fs from 'node:fs';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OpenAIAgentsInstrumentation } from '@arizeai/openinference-instrumentation-openai-agents';
import * as agents from '@openai/agents';
import OpenAI from 'openai';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { startReceiver } from './receiver.mjs';

const [scenario = 'recall', outFile, truthFile] = process.argv.slice(2);
if (scenario !== 'recall') throw new Error('only the recall scenario has its own values');
const receiver = await startReceiver(outFile);
const exporter = new OTLPTraceExporter({ url: receiver.url });
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'capture-openai-agents-mcp' }),
  spanProcessors: [new BatchSpanProcessor(exporter)],
});
provider.register();
new OpenAIAgentsInstrumentation({ tracerProvider: provider }).manuallyInstrument(agents);
const { Agent, run, OpenAIChatCompletionsModel, MCPServerStreamableHttp } = agents;

// values used by no other capture (tag oamcp)
const calls = {
  lookup: { customer_id: 'cus_oamcp_Jb7Wq2Lx', email: 'henrik.dahl.oamcp@example.com' },
  charge1: { card_number: '4000002080000001', email: 'henrik.dahl.pay.oamcp@example.com', amount_cents: 5280, iban: 'DK5000400440116243' },
  charge2: { card_number: '2223003122003222', email: 'henrik.dahl.backup.oamcp@example.com', amount_cents: 5280, iban: 'FI2112345600000785' },
};
const results = {
  lookup: { account_ref: 'acct_oamcp_Vc8Nt3Rp', full_name: 'Henrik Dahl OAMCP-Customer', phone: '+45-31-72-94-06', default_card_token: 'tok_oamcp_card_Gy52Ke' },
  charge2: { charge_id: 'ch_oamcp_6WqLz9Db', receipt_email: 'receipts+oamcp@example.org', last4_token: 'tok_mc_oamcp_3222w7' },
};
const chargeErrorText = `card_declined: issuer refused card ${calls.charge1.card_number} (decline ref dcl_oamcp_Hm47Tc)`;
const truthTools = [];

// ---- MCP server in this process, over streamable HTTP on loopback
const mcpServer = new McpServer({ name: 'payments-mcp', version: '1.0.0' });
let chargeAttempts = 0;
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
  const result = { content: [{ type: 'text', text: JSON.stringify(results.charge2) }] };
  truthTools.push({ tool: 'charge_card', arguments: args, result, failed: false });
  return result;
});
const serverTransport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
await mcpServer.connect(serverTransport);
const mcpMethods = []; // JSON-RPC methods the server received, in order
const httpServer = http.createServer(async (req, res) => {
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
const mcpUrl = `http://127.0.0.1:${httpServer.address().port}/mcp`;
// a fixed name: the default one is `streamable-http: <url>` with the random port
const mcp = new MCPServerStreamableHttp({ url: mcpUrl, name: 'payments-mcp' });
await mcp.connect();

// ---- scripted chat completions behind the real OpenAI client
const steps = [
  { text: 'Let me look up the customer record first.', call: ['call_oamcp_lookup_1', 'lookup_customer', calls.lookup] },
  { text: 'Found the customer. Charging the card now.', call: ['call_oamcp_charge_1', 'charge_card', calls.charge1] },
  { text: 'The card was declined. Trying the backup card on file.', call: ['call_oamcp_charge_2', 'charge_card', calls.charge2] },
  { text: 'Done: the order is paid and the receipt is on its way.' },
];
let step = 0;
const seenToolMessages = new Map(); // tool_call_id -> content of the tool message the model was sent
const scriptedFetch = async (url, init) => {
  if (!String(url).endsWith('/chat/completions')) throw new Error(`unexpected request ${url}`);
  const req = JSON.parse(init.body);
  for (const m of req.messages) if (m.role === 'tool' && !seenToolMessages.has(m.tool_call_id)) seenToolMessages.set(m.tool_call_id, m.content);
  const s = steps[Math.min(step++, steps.length - 1)];
  const message = { role: 'assistant', content: s.text, refusal: null };
  if (s.call) message.tool_calls = [{ id: s.call[0], type: 'function', function: { name: s.call[1], arguments: JSON.stringify(s.call[2]) } }];
  const body = {
    id: `chatcmpl-oamcp-${step}`, object: 'chat.completion', created: 1767225600 + step, model: 'scripted-model-1',
    choices: [{ index: 0, message, finish_reason: s.call ? 'tool_calls' : 'stop', logprobs: null }],
    usage: { prompt_tokens: 100 + step * 40, completion_tokens: 25, total_tokens: 125 + step * 40 },
  };
  return new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json', 'x-request-id': `req_oamcp_${step}` } });
};
const client = new OpenAI({ apiKey: 'sk-capture-not-a-key', baseURL: 'http://127.0.0.1:9/v1', fetch: scriptedFetch, maxRetries: 0 });
const agent = new Agent({
  name: 'checkout-agent',
  instructions: 'You are a checkout assistant. Use the tools to look up customers and charge cards.',
  model: new OpenAIChatCompletionsModel(client, 'scripted-model-1'),
  mcpServers: [mcp],
});
const res = await run(agent, 'Please charge the customer from order 5280 for the open invoice and send the receipt.');
console.error('final:', res.finalOutput, 'attempts:', chargeAttempts, 'model steps:', step);
const failedSeen = seenToolMessages.get('call_oamcp_charge_1');
console.error('model saw for call_oamcp_charge_1:', JSON.stringify(failedSeen));
console.error('MCP methods:', JSON.stringify(mcpMethods));
await agents.getGlobalTraceProvider().forceFlush();
await provider.forceFlush();
await provider.shutdown();
await mcp.close();
await serverTransport.close();
await new Promise((resolve) => httpServer.close(resolve));
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);

// the MCP server does not see the chat completion tool_call id: match the scripted ids by
// order (one tool call per model step, executed in order)
const ids = { lookup_customer: ['call_oamcp_lookup_1'], charge_card: ['call_oamcp_charge_1', 'call_oamcp_charge_2'] };
for (const t of truthTools) t.call_id = ids[t.tool].shift();
const chargeRuns = truthTools.filter((t) => t.tool === 'charge_card');
if (chargeRuns.length !== 2 || !chargeRuns[0].failed || chargeRuns[1].failed || truthTools.length !== 3) {
  throw new Error(`expected lookup + failed charge + successful charge, got ${JSON.stringify(truthTools.map((t) => [t.tool, t.failed]))}`);
}
if (typeof failedSeen !== 'string' || !failedSeen.includes(chargeErrorText)) throw new Error(`the model was not sent the error text for call_oamcp_charge_1: ${JSON.stringify(failedSeen)}`);
const expect = {
  calls: [
    { tool: 'lookup_customer', attempts: 1, attempt_statuses: ['ok'], retry_layer: null, failed_attempts_hidden: false, span_names: ['lookup_customer'], call_ids: ['call_oamcp_lookup_1'] },
    { tool: 'charge_card', attempts: 1, attempt_statuses: ['error'], retry_layer: null, failed_attempts_hidden: true, span_names: ['charge_card'], call_ids: ['call_oamcp_charge_1'] },
    { tool: 'charge_card', attempts: 1, attempt_statuses: ['ok'], retry_layer: 'agent', failed_attempts_hidden: false, span_names: ['charge_card'], call_ids: ['call_oamcp_charge_2'] },
  ],
  agent_spans: [
    { name: 'checkout-agent', marker: 'openinference.span.kind=AGENT' },
    { name: 'Agent workflow', marker: 'openinference.span.kind=AGENT (the root; its child of the same name is a CHAIN)' },
  ],
  notes: 'charge_card returned an MCP CallToolResult with isError: true once. @openai/agents 0.20.0 (MCPServerStreamableHttp, client @modelcontextprotocol/client) keeps isError only as a non-enumerable property of the content array and the MCP tool\'s invoke returns content[0] (the text part) as the tool output, so the flag is dropped before the SDK sees the result: no exception, the charge_card TOOL span is status OK like every other span, and its output.value is the text part {type: text, text: <error text>} (no isError anywhere in the trace). The model is sent the bare error text as the tool message (llm.input_messages.5.message.content, tool_call_id call_oamcp_charge_1) and called charge_card again with a new call id and changed arguments (backup card, email, IBAN). Two logical calls of the same tool: the second is the agent-level retry of the first. The TOOL spans carry no call id (only the generation spans do). Before every turn the SDK lists the server\'s tools: one mcp_tools span per turn (openinference.span.kind=TOOL, no tool.name, output.value the tool names), a direct child of checkout-agent; these are not tool calls.',
};
const pkgs = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies;
fs.writeFileSync(truthFile, JSON.stringify({
  sdk: 'openai-agents js + OpenInference + MCP (batch span processor, scenario recall, tools from MCPServerStreamableHttp over an in-process McpServer on 127.0.0.1)',
  packages: pkgs,
  tools: truthTools.map(({ tool, call_id, arguments: a, result, failed }) => ({ tool, call_id, arguments: a, result, failed })),
  expect,
  note: 'tool results are MCP CallToolResult objects as the server returned them; call_id is the scripted chat completion tool_call id, matched by order',
}, null, 2) + '\n');
