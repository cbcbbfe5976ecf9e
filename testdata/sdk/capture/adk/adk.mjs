// Google ADK for JavaScript (@google/adk 2.0.0) with its own built-in tracing (tracer
// `gcp.vertex.agent`: spans `invocation`, `invoke_agent <name>`, `call_llm`,
// `execute_tool <name>`, `execute_node <name>`; attributes `gcp.vertex.agent.*`). Tracing is
// switched on the ADK way: `maybeSetOtelProviders([{ spanProcessors: [...] }], resource)`
// registers a NodeTracerProvider with our span processor (OTLPTraceExporter http/json 0.205.0,
// ADK's own exporter line, to the receiver on 127.0.0.1). Request/response copies in spans are
// on by default (ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS unset = true).
// The model is a BaseLlm subclass whose generateContentAsync yields scripted LlmResponses
// (a text part + one functionCall part with a scripted id) and checks what it is sent.
// Scenarios:
//  recall: FunctionTool tools; charge_card throws on its first call; ADK sends the error to the
//          model as functionResponse {error: ...}; the model calls charge_card again with a new
//          function call id and a backup card.
//  mcp:    the tools come from an McpServer in this process served over Streamable HTTP on
//          127.0.0.1 (port 0) through ADK's MCPToolset (StreamableHTTPConnectionParams; ADK opens
//          one MCP session per tools/list and per tools/call, so each initialize gets its own
//          McpServer + StreamableHTTPServerTransport with enableJsonResponse; GET is answered
//          405); charge_card returns isError: true once; the model calls it again with a new id
//          and a backup card.
//  retry:  ADK's built-in retry: charge_card is a NodeTool wrapping a workflow FunctionNode with
//          retryConfig; the node runner re-runs the node after the first attempt throws (same
//          function call id, same arguments), the second attempt succeeds.
// Span processor: batch (default) or simple (one request per span).
// usage: node adk.mjs <recall|mcp|retry> <batch|simple> <out.jsonl> <truth.json>
import fs from 'node:fs';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { BatchSpanProcessor, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { trace } from '@opentelemetry/api';
import {
  LlmAgent, BaseLlm, FunctionTool, InMemoryRunner, MCPToolset, NodeTool, FunctionNode,
  maybeSetOtelProviders,
} from '@google/adk';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { startReceiver } from './receiver.mjs';

const [scenario = 'recall', mode = 'batch', outFile, truthFile] = process.argv.slice(2);
if (!['recall', 'mcp', 'retry'].includes(scenario)) throw new Error(`unknown scenario ${scenario}`);
if (!['batch', 'simple'].includes(mode)) throw new Error(`unknown span processor ${mode}`);
if (mode === 'simple' && scenario !== 'recall') throw new Error('simple is captured for the recall scenario only');

const receiver = await startReceiver(outFile);
const exporter = new OTLPTraceExporter({ url: receiver.url });
const processor = mode === 'simple' ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter);
maybeSetOtelProviders([{ spanProcessors: [processor] }], resourceFromAttributes({ 'service.name': 'capture-adk' }));
// the global provider is a ProxyTracerProvider around ADK's NodeTracerProvider
const provider = trace.getTracerProvider().getDelegate();

// values used by no other capture: tag per capture (adkr recall, adks recall/simple, adkm mcp,
// adkt retry) and a digit D in card numbers / IBANs / phones
const T = { 'recall/batch': 'adkr', 'recall/simple': 'adks', 'mcp/batch': 'adkm', 'retry/batch': 'adkt' }[`${scenario}/${mode}`];
const D = { adkr: '1', adks: '2', adkm: '3', adkt: '4' }[T];
const calls = {
  lookup: { customer_id: `cus_${T}_Qe4Rw8Lm`, email: `ingrid.sato.${T}@example.com` },
  charge1: { card_number: `43000000000${D}7001`, email: `ingrid.sato.pay.${T}@example.com`, amount_cents: 6410, iban: `NL91ABNA04171643${D}0` },
  // recall / mcp: the model's second call, with a backup card
  charge2: { card_number: `51050000000${D}5100`, email: `ingrid.sato.backup.${T}@example.com`, amount_cents: 6410, iban: `BE6853900754${D}034` },
};
const results = {
  lookup: { account_ref: `acct_${T}_Zp3Kd7Vn`, full_name: `Ingrid Sato ${T.toUpperCase()}-Customer`, phone: `+31-20-${D}55-0192`, default_card_token: `tok_${T}_card_Mf62Xb` },
  charge: { charge_id: `ch_${T}_8TgWq4Ny`, receipt_email: `receipts+64${D}0@example.org`, last4_token: `tok_visa_${T}_7001k3` },
};
const chargeErrorText = (card) => `card_declined: issuer refused card ${card} (decline ref dcl_${T}_Jr58Hw)`;
const ids = {
  lookup: `adk_${T}_call_lookup_1`,
  charge1: `adk_${T}_call_charge_1`,
  charge2: `adk_${T}_call_charge_2`,
};
const truthTools = [];
let chargeAttempts = 0;

// ---- tools
const lookupSchema = z.object({ customer_id: z.string(), email: z.string() });
const chargeSchema = z.object({ card_number: z.string(), email: z.string(), amount_cents: z.number(), iban: z.string() });
let tools;
let mcpCleanup = async () => {};
const mcpMethods = [];
if (scenario === 'recall') {
  tools = [
    new FunctionTool({
      name: 'lookup_customer',
      description: 'Look up a customer record',
      parameters: lookupSchema,
      execute: async (args, toolContext) => {
        truthTools.push({ tool: 'lookup_customer', call_id: toolContext?.functionCallId ?? null, arguments: args, result: results.lookup, failed: false });
        return results.lookup;
      },
    }),
    new FunctionTool({
      name: 'charge_card',
      description: 'Charge a payment card',
      parameters: chargeSchema,
      execute: async (args, toolContext) => {
        chargeAttempts++;
        if (chargeAttempts === 1) {
          const text = chargeErrorText(args.card_number);
          truthTools.push({ tool: 'charge_card', call_id: toolContext?.functionCallId ?? null, arguments: args, result: text, failed: true });
          throw new Error(text);
        }
        truthTools.push({ tool: 'charge_card', call_id: toolContext?.functionCallId ?? null, arguments: args, result: results.charge, failed: false });
        return results.charge;
      },
    }),
  ];
} else if (scenario === 'retry') {
  // ADK's built-in retry lives in the workflow node runner (BaseNode retryConfig); a NodeTool
  // exposes a node to an LlmAgent as a tool. The FunctionNode handler gets (nodeContext, input).
  const chargeNode = new FunctionNode('charge_card', async (ctx, args) => {
    chargeAttempts++;
    // the node run id is the model's function call id (NodeTool passes toolContext.functionCallId)
    const callId = ctx.runId ?? null;
    if (chargeAttempts === 1) {
      const text = chargeErrorText(args.card_number);
      truthTools.push({ tool: 'charge_card', call_id: callId, attempt: chargeAttempts, arguments: args, result: text, failed: true });
      throw new Error(text);
    }
    truthTools.push({ tool: 'charge_card', call_id: callId, attempt: chargeAttempts, arguments: args, result: results.charge, failed: false });
    return results.charge;
  }, {
    description: 'Charge a payment card',
    inputSchema: chargeSchema,
    retryConfig: { maxAttempts: 3, initialDelay: 0.01, maxDelay: 0.05, backoffFactor: 1, jitter: 0 },
  });
  tools = [
    new FunctionTool({
      name: 'lookup_customer',
      description: 'Look up a customer record',
      parameters: lookupSchema,
      execute: async (args, toolContext) => {
        truthTools.push({ tool: 'lookup_customer', call_id: toolContext?.functionCallId ?? null, arguments: args, result: results.lookup, failed: false });
        return results.lookup;
      },
    }),
    new NodeTool(chargeNode),
  ];
} else {
  // ---- MCP server in this process, over streamable HTTP on loopback. ADK's MCPSessionManager
  // opens a new MCP client (initialize) for every tools/list and every tools/call, so every
  // initialize gets its own McpServer + StreamableHTTPServerTransport (stateful session).
  const newMcpServer = () => {
    const s = new McpServer({ name: 'payments-mcp', version: '1.0.0' });
    s.registerTool('lookup_customer', {
      description: 'Look up a customer record',
      inputSchema: lookupSchema.shape,
    }, async (args) => {
      const result = { content: [{ type: 'text', text: JSON.stringify(results.lookup) }] };
      truthTools.push({ tool: 'lookup_customer', arguments: args, result, failed: false });
      return result;
    });
    s.registerTool('charge_card', {
      description: 'Charge a payment card',
      inputSchema: chargeSchema.shape,
    }, async (args) => {
      chargeAttempts++;
      if (chargeAttempts === 1) {
        const result = { content: [{ type: 'text', text: chargeErrorText(args.card_number) }], isError: true };
        truthTools.push({ tool: 'charge_card', arguments: args, result, failed: true });
        return result;
      }
      const result = { content: [{ type: 'text', text: JSON.stringify(results.charge) }] };
      truthTools.push({ tool: 'charge_card', arguments: args, result, failed: false });
      return result;
    });
    return s;
  };
  const sessions = new Map(); // session id -> { transport, server }
  const httpServer = http.createServer(async (req, res) => {
    if (req.url !== '/mcp') { res.writeHead(404).end(); return; }
    // no standalone SSE stream (the Streamable HTTP spec allows 405 for GET)
    if (req.method === 'GET') { res.writeHead(405, { allow: 'POST, DELETE' }).end(); return; }
    let body;
    if (req.method === 'POST') {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const m of [body].flat()) if (m.method) mcpMethods.push(m.method);
    }
    const sid = req.headers['mcp-session-id'];
    let entry = sid ? sessions.get(sid) : undefined;
    if (!entry && req.method === 'POST' && isInitializeRequest(body)) {
      const server = newMcpServer();
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        // plain JSON answers instead of one SSE stream per POST: ADK closes each client right
        // after its answer arrives, which aborts a still-open SSE body (logged as an error)
        enableJsonResponse: true,
        onsessioninitialized: (id) => sessions.set(id, entry),
      });
      entry = { transport, server };
      await server.connect(transport);
    }
    if (!entry) {
      res.writeHead(req.method === 'POST' ? 400 : 405, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'no session' }, id: null }));
      return;
    }
    await entry.transport.handleRequest(req, res, body);
  });
  await new Promise((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const mcpUrl = `http://127.0.0.1:${httpServer.address().port}/mcp`;
  tools = [new MCPToolset({ type: 'StreamableHTTPConnectionParams', url: mcpUrl })];
  mcpCleanup = async () => {
    for (const { transport, server } of sessions.values()) { await transport.close(); await server.close(); }
    httpServer.closeAllConnections?.();
    await new Promise((resolve) => httpServer.close(resolve));
  };
}

// ---- scripted model
const recallSteps = [
  { text: 'Let me look up the customer record first.', call: [ids.lookup, 'lookup_customer', calls.lookup] },
  { text: 'Found the customer. Charging the card now.', call: [ids.charge1, 'charge_card', calls.charge1] },
  { text: 'The card was declined. Trying the backup card on file.', call: [ids.charge2, 'charge_card', calls.charge2] },
  { text: 'Done: the order is paid and the receipt is on its way.' },
];
const retrySteps = [recallSteps[0], recallSteps[1], recallSteps[3]];
const steps = scenario === 'retry' ? retrySteps : recallSteps;
const seenResponses = new Map(); // function call id -> functionResponse.response the model was sent
const seenToolNames = []; // per model call: function declarations offered
class ScriptedLlm extends BaseLlm {
  constructor() { super({ model: 'scripted-model-1' }); this.step = 0; }
  async *generateContentAsync(llmRequest) {
    for (const c of llmRequest.contents ?? []) {
      for (const p of c.parts ?? []) {
        if (p.functionResponse && !seenResponses.has(p.functionResponse.id)) seenResponses.set(p.functionResponse.id, p.functionResponse.response);
      }
    }
    seenToolNames.push((llmRequest.config?.tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((f) => f.name)));
    const s = steps[Math.min(this.step++, steps.length - 1)];
    const parts = [{ text: s.text }];
    if (s.call) parts.push({ functionCall: { id: s.call[0], name: s.call[1], args: s.call[2] } });
    yield {
      content: { role: 'model', parts },
      finishReason: 'STOP',
      usageMetadata: { promptTokenCount: 100 + this.step * 40, candidatesTokenCount: 25, totalTokenCount: 125 + this.step * 40 },
      modelVersion: 'scripted-model-1',
    };
  }
  async connect() { throw new Error('live connections are not scripted'); }
}

const agent = new LlmAgent({
  name: 'checkout_agent',
  description: 'Checkout assistant that charges customers',
  model: new ScriptedLlm(),
  instruction: 'You are a checkout assistant. Use the tools to look up customers and charge cards.',
  tools,
});
const runner = new InMemoryRunner({ agent, appName: 'capture-adk' });
const sessionId = `session_${T}`;
await runner.sessionService.createSession({ appName: 'capture-adk', userId: 'user_capture', sessionId });
const events = [];
for await (const event of runner.runAsync({
  userId: 'user_capture',
  sessionId,
  newMessage: { role: 'user', parts: [{ text: 'Please charge the customer from order 6410 for the open invoice and send the receipt.' }] },
})) events.push(event);
const finalText = events.filter((e) => e.content?.role === 'model').flatMap((e) => e.content.parts ?? []).map((p) => p.text ?? '').filter(Boolean).pop();
console.error('final:', finalText, 'attempts:', chargeAttempts, 'model steps:', agent.model?.step ?? '?');
console.error('tools offered per model call:', JSON.stringify(seenToolNames));
if (mcpMethods.length) console.error('MCP methods:', JSON.stringify(mcpMethods));
await provider.forceFlush();
await provider.shutdown();
await mcpCleanup();
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);

// ---- checks
if (scenario === 'mcp') {
  // the MCP server does not see the function call id: match the scripted ids by order
  const byOrder = { lookup_customer: [ids.lookup], charge_card: [ids.charge1, ids.charge2] };
  for (const t of truthTools) t.call_id = byOrder[t.tool].shift();
}
const chargeRuns = truthTools.filter((t) => t.tool === 'charge_card');
if (chargeRuns.length !== 2 || !chargeRuns[0].failed || chargeRuns[1].failed || truthTools.length !== 3) {
  throw new Error(`expected lookup + failed charge + successful charge, got ${JSON.stringify(truthTools.map((t) => [t.tool, t.failed]))}`);
}
const wantIds = scenario === 'retry' ? [ids.lookup, ids.charge1, ids.charge1] : [ids.lookup, ids.charge1, ids.charge2];
if (JSON.stringify(truthTools.map((t) => t.call_id)) !== JSON.stringify(wantIds)) throw new Error(`call ids ${JSON.stringify(truthTools.map((t) => t.call_id))}`);
if (scenario !== 'retry') {
  const failedSeen = JSON.stringify(seenResponses.get(ids.charge1));
  if (!failedSeen || !failedSeen.includes(`dcl_${T}_Jr58Hw`)) throw new Error(`the model was not sent the error for ${ids.charge1}: ${failedSeen}`);
  console.error(`model saw for ${ids.charge1}:`, failedSeen);
} else {
  console.error(`model saw for ${ids.charge1}:`, JSON.stringify(seenResponses.get(ids.charge1)));
}
if (!/^Done:/.test(finalText ?? '')) throw new Error(`no final answer: ${finalText}`);

// ---- expect block (from what the script did)
const lookupCall = { tool: 'lookup_customer', attempts: 1, attempt_statuses: ['ok'], retry_layer: null, failed_attempts_hidden: false, span_names: ['execute_tool lookup_customer'], call_ids: [ids.lookup] };
const agentSpans = [{ name: 'invoke_agent checkout_agent', marker: 'gen_ai.operation.name=invoke_agent' }];
let expect;
if (scenario === 'recall') {
  expect = {
    calls: [
      lookupCall,
      { tool: 'charge_card', attempts: 1, attempt_statuses: ['error'], retry_layer: null, failed_attempts_hidden: true, span_names: ['execute_tool charge_card'], call_ids: [ids.charge1] },
      { tool: 'charge_card', attempts: 1, attempt_statuses: ['ok'], retry_layer: 'agent', failed_attempts_hidden: false, span_names: ['execute_tool charge_card'], call_ids: [ids.charge2] },
    ],
    agent_spans: agentSpans,
    notes: 'charge_card (FunctionTool) threw on its first call. ADK\'s callToolAsync opens `execute_tool charge_card` with startActiveSpan and calls traceToolCall only after tool.runAsync returns, so the failed attempt\'s span ends with NO attributes at all (no gen_ai.operation.name, gen_ai.tool.name, gen_ai.tool.call.id or gcp.vertex.agent.tool_call_args) and status UNSET: no exception event, no ERROR status; only its span name says which tool. handleFunctionCallList catches the error and sends the model functionResponse {id: <call id>, name: charge_card, response: {error: "Error in tool \'charge_card\': <message>"}}; that copy (with the card number) is in the next call_llm span\'s gcp.vertex.agent.llm_request (Gemini contents: functionCall / functionResponse parts) and in every later llm_request, the only places the failure shows. The model called charge_card again with a new function call id and changed arguments (backup card, email, IBAN). Two logical calls of the same tool: the second is the agent-level retry of the first. Every span is status UNSET, the successful tool spans too (ADK sets a status only on workflow node spans). gen_ai.tool.call.id holds the model\'s own functionCall id (ADK invents an adk-<uuid> id only when the model sends none). Tool spans are children of the call_llm span whose response asked for them; all spans are INTERNAL, scope gcp.vertex.agent 2.0.0; the root `invocation` span has no attributes. Each call_llm span\'s gcp.vertex.agent.llm_request also carries the tools offered to the model (config.tools[0].functionDeclarations: name, description, Gemini parameters schema) and the system instruction; llm_response is the LlmResponse (content.parts with text and functionCall {id, name, args}, finishReason, usageMetadata).',
  };
} else if (scenario === 'mcp') {
  expect = {
    calls: [
      lookupCall,
      { tool: 'charge_card', attempts: 1, attempt_statuses: ['error'], retry_layer: null, failed_attempts_hidden: true, span_names: ['execute_tool charge_card'], call_ids: [ids.charge1] },
      { tool: 'charge_card', attempts: 1, attempt_statuses: ['ok'], retry_layer: 'agent', failed_attempts_hidden: false, span_names: ['execute_tool charge_card'], call_ids: [ids.charge2] },
    ],
    agent_spans: agentSpans,
    notes: 'Tools from an McpServer over Streamable HTTP on 127.0.0.1 through ADK\'s MCPToolset (StreamableHTTPConnectionParams). ADK opens a new MCP session (initialize, notifications/initialized) for every tools/list (two per model call: a request processor and the tool loop each call MCPToolset.getTools) and for every tools/call, and closes it after; ADK does not trace MCP (no MCP or HTTP spans). charge_card returned a CallToolResult with isError: true once. MCPTool.runAsync returns the CallToolResult as is (no throw), so the failed attempt\'s `execute_tool charge_card` span is complete and status UNSET like every other span: gen_ai.tool.type=MCPTool, gen_ai.tool.call.id = the model\'s id, gcp.vertex.agent.tool_call_args = the arguments, gcp.vertex.agent.tool_response = the whole CallToolResult JSON {"content":[{"type":"text","text":<error text>}],"isError":true}. The same object is the functionResponse.response the model is sent, so "isError":true also appears in the next call_llm span\'s gcp.vertex.agent.llm_request and in every later llm_request; no other attribute, event or status marks the failure. Successful results are CallToolResults too (the record as a JSON string in content[0].text, so JSON-escaped twice inside the span attributes). The model called charge_card again with a new function call id and a backup card. Two logical calls of the same tool: the second is the agent-level retry of the first. The MCP server does not see the function call id; call_id in tools is the scripted one, matched by order.',
  };
} else {
  expect = {
    calls: [
      lookupCall,
      {
        tool: 'charge_card', attempts: 2, attempt_statuses: ['error', 'ok'], retry_layer: 'tool_runtime', failed_attempts_hidden: false,
        span_names: ['execute_node_attempt charge_card', 'execute_node_attempt charge_card'], call_ids: [ids.charge1, ids.charge1],
      },
    ],
    agent_spans: agentSpans,
    notes: 'ADK JS 2.0.0 has no tool-level retry (no reflect-and-retry plugin; plugin/agent before/after/onToolError tool callbacks can replace a result but never re-run the tool). Its built-in retry is the workflow node runner\'s (BaseNode retryConfig). charge_card is a NodeTool (isLongRunning) over a FunctionNode with retryConfig {maxAttempts: 3, initialDelay: 0.01 s, backoffFactor: 1, jitter: 0}; the FunctionNode handler threw once and the node runner re-ran it with the same input. The model made ONE charge_card call: one `execute_tool charge_card` span (gen_ai.tool.type=NodeTool, gen_ai.tool.call.id = the model\'s id, tool_call_args, tool_response = the final result; UNSET), under it one `execute_node charge_card` span (gen_ai.operation.name=execute_node, adk.node.run_id = the function call id, adk.node.attempt = 2, adk.node.status=completed; UNSET) and under that one `execute_node_attempt charge_card` span per attempt (adk.node.attempt 1 / 2, adk.node.status failed / completed, adk.node.run_id = the call id). The failed attempt span has status ERROR whose message is the thrown error text (with the card number); no exception event. The attempt spans carry no gen_ai.tool.* attributes (the call id only as adk.node.run_id) and no arguments or results. The model is sent only the successful result.',
  };
}

const pkgs = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies;
fs.writeFileSync(truthFile, JSON.stringify({
  sdk: `google-adk js built-in tracing (${mode} span processor, scenario ${scenario}${scenario === 'mcp' ? ', tools from MCPToolset over Streamable HTTP to an in-process McpServer on 127.0.0.1' : ''}${scenario === 'retry' ? ', charge_card a NodeTool over a FunctionNode with retryConfig' : ''})`,
  packages: pkgs,
  tools: truthTools.map(({ tool, call_id, arguments: a, result, failed }) => ({ tool, call_id, arguments: a, result, failed })),
  expect,
  note: scenario === 'mcp'
    ? 'tool results are MCP CallToolResult objects as the server returned them; call_id is the scripted functionCall id, matched by order'
    : 'call_id as the tool saw it (FunctionTool: toolContext.functionCallId; FunctionNode: nodeContext.runId = the function call id)',
}, null, 2) + '\n');
