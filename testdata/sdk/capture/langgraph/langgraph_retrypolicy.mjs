// LangGraph.js graph built by hand with StateGraph: a model node (fakeModel() from
// @langchain/core/testing with the tools bound) and a prebuilt ToolNode added with a node
// retryPolicy, traced by @arizeai/openinference-instrumentation-langchain. The retry is
// LangGraph's own task retry (_runWithRetry in @langchain/langgraph/dist/pregel/retry.js): when
// the tools node throws, the Pregel loop re-invokes the whole node with the same input.
// ToolNode's handleToolErrors defaults to true and then turns EVERY tool error (except
// GraphInterrupt / GraphDrained) into a ToolMessage with status "error", so the node never
// fails and the retry policy never fires; the ToolNode here is built with
// `handleToolErrors: false`, which re-throws the tool's error out of the node.
//  plain: `tool()` tools from @langchain/core; charge_card throws on its first execution, the
//         retry policy re-runs the tools node, the second execution succeeds.
//  mcp:   the same tools served by an McpServer (@modelcontextprotocol/sdk) in this process over
//         InMemoryTransport, loaded with loadMcpTools from @langchain/mcp-adapters; charge_card
//         returns an MCP result with `isError: true` once, which the adapter turns into a thrown
//         ToolException, so the node fails and the retry policy re-runs it.
// The model turns: text + lookup_customer call, text + charge_card call, final text.
// Writes the `expect` block.
// usage: node langgraph_retrypolicy.mjs <plain|mcp> <out.jsonl> <truth.json>
import fs from 'node:fs';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { LangChainInstrumentation } from '@arizeai/openinference-instrumentation-langchain';
import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { startReceiver } from './receiver.mjs';

const [mode, outFile, truthFile] = process.argv.slice(2);
if (!['plain', 'mcp'].includes(mode)) throw new Error(`unknown mode ${mode}`);
const mcp = mode === 'mcp';
const receiver = await startReceiver(outFile);
const exporter = new OTLPTraceExporter({ url: receiver.url });
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': `capture-langgraph-retrypolicy${mcp ? '-mcp' : ''}` }),
  spanProcessors: [new BatchSpanProcessor(exporter)],
});
provider.register();
new LangChainInstrumentation({ tracerProvider: provider }).manuallyInstrument(CallbackManagerModule);

const { StateGraph, MessagesAnnotation, START, END } = await import('@langchain/langgraph');
const { ToolNode, toolsCondition } = await import('@langchain/langgraph/prebuilt');
const { AIMessage, HumanMessage, SystemMessage } = await import('@langchain/core/messages');
const { tool } = await import('@langchain/core/tools');
const { fakeModel } = await import('@langchain/core/testing');
const { z } = await import('zod');

// values used by no other capture (tags lgrp / lgmcp)
const T = mcp ? 'lgmcp' : 'lgrp';
const V = mcp
  ? { card: '3530111333300000', iban: 'AT611904300234573201', phone: '+43-660-555-0147', cents: 6140, order: '6140' }
  : { card: '6011000990139424', iban: 'BE68539007547034', phone: '+32-470-55-01-93', cents: 7310, order: '7310' };
const calls = {
  lookup: { customer_id: `cus_${T}_Qx4Lm8Vr`, email: `noor.haddad.${T}@example.com` },
  charge: { card_number: V.card, email: `noor.haddad.pay.${T}@example.com`, amount_cents: V.cents, iban: V.iban },
};
const results = {
  lookup: { account_ref: `acct_${T}_Hs2Kp9Wd`, full_name: `Noor Haddad ${T.toUpperCase()}-Customer`, phone: V.phone, default_card_token: `tok_${T}_card_Bv63Xe` },
  charge: { charge_id: `ch_${T}_5TgNw8Qa`, receipt_email: `receipts+${T}@example.org`, last4_token: `tok_disc_${T}_9424k2` },
};
const chargeErrorText = `gateway_timeout: acquirer did not answer for card ${calls.charge.card_number} (trace gw_${T}_Zc73Lp)`;
const ids = { lookup: `call_${T}_lookup_1`, charge: `call_${T}_charge_1` };

// what every tool execution received and returned / threw, recorded inside the tool function
// (plain) or the MCP server's handler (mcp), with the LangGraph task it ran in: the config the
// tool was invoked with (plain: the tool's own config; mcp: the adapter's beforeToolCall hook,
// which receives the same config and only observes)
const truthTools = [];
const taskOf = (config, toolName) => ({
  node_attempt: config?.executionInfo?.nodeAttempt ?? null,
  langgraph_step: config?.metadata?.langgraph_step ?? null,
  langgraph_node: config?.metadata?.langgraph_node ?? null,
  langgraph_checkpoint_ns: config?.metadata?.langgraph_checkpoint_ns ?? null,
  task_id: config?.executionInfo?.taskId ?? null,
  ...spansOf(config, toolName),
});
// the OpenInference spans of this execution, from OpenInference's LangChainTracer (one of the
// handlers of config.callbacks) and its run-id -> span map (read only). A `tool()` function gets
// the tool run's child config (callbacks._parentRunId = the tool run); the MCP adapter's
// DynamicStructuredTool passes its func the PARENT config (callbacks._parentRunId = the tools
// node run), so there the tool run is the open tool run of that name under it (one at a time).
// The task span is the tool run's parent run's span.
function spansOf(config, toolName) {
  const tracer = config?.callbacks?.handlers?.find((h) => h.name === 'OpenInferenceLangChainTracer');
  const pid = config?.callbacks?._parentRunId;
  let toolRun = tracer?.runs?.[pid];
  if (toolRun && toolRun.run.run_type !== 'tool') {
    const open = Object.values(tracer.runs).filter((r) => r.run.run_type === 'tool' && r.run.parent_run_id === pid && r.run.name === toolName);
    toolRun = open.length === 1 ? open[0] : undefined;
  }
  const taskRun = tracer?.runs?.[toolRun?.run?.parent_run_id];
  return {
    tool_span_id: toolRun?.span?.spanContext().spanId ?? null,
    task_span: taskRun ? { name: taskRun.run.name, span_id: taskRun.span.spanContext().spanId } : null,
  };
}
let chargeExecutions = 0;
let tools;
let mcpClose = async () => {};
// mcp: what the adapter's beforeToolCall hook saw of each call (call id, the config the adapter
// was called with), in call order; the server handler that runs the call takes the oldest one
// (calls run one at a time) and reads the task and spans off its config then: when the hook
// runs, the tool run's start has not reached OpenInference's tracer yet
const mcpTasks = [];
const pendingTask = (name) => {
  const m = mcpTasks.shift();
  if (m?.tool !== name) throw new Error(`mcp: server runs ${name}, the adapter called ${m?.tool}`);
  return { call_id: m.call_id, task: taskOf(m.config, name) };
};
if (!mcp) {
  const lookupCustomer = tool(async (args, config) => {
    truthTools.push({ tool: 'lookup_customer', call_id: config?.toolCall?.id ?? null, arguments: args, result: JSON.stringify(results.lookup), failed: false, task: taskOf(config, 'lookup_customer') });
    return JSON.stringify(results.lookup);
  }, { name: 'lookup_customer', description: 'Look up a customer record', schema: z.object({ customer_id: z.string(), email: z.string() }) });
  const chargeCard = tool(async (args, config) => {
    chargeExecutions++;
    if (chargeExecutions === 1) {
      truthTools.push({ tool: 'charge_card', call_id: config?.toolCall?.id ?? null, arguments: args, result: chargeErrorText, failed: true, task: taskOf(config, 'charge_card') });
      throw new Error(chargeErrorText);
    }
    truthTools.push({ tool: 'charge_card', call_id: config?.toolCall?.id ?? null, arguments: args, result: JSON.stringify(results.charge), failed: false, task: taskOf(config, 'charge_card') });
    return JSON.stringify(results.charge);
  }, { name: 'charge_card', description: 'Charge a payment card', schema: z.object({ card_number: z.string(), email: z.string(), amount_cents: z.number(), iban: z.string() }) });
  tools = [lookupCustomer, chargeCard];
} else {
  const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { InMemoryTransport } = await import('@modelcontextprotocol/sdk/inMemory.js');
  const { loadMcpTools } = await import('@langchain/mcp-adapters');
  const server = new McpServer({ name: 'payments-mcp', version: '1.0.0' });
  server.registerTool('lookup_customer', {
    description: 'Look up a customer record',
    inputSchema: { customer_id: z.string(), email: z.string() },
  }, async (args) => {
    const result = { content: [{ type: 'text', text: JSON.stringify(results.lookup) }] };
    truthTools.push({ tool: 'lookup_customer', arguments: args, result, failed: false, ...pendingTask('lookup_customer') });
    return result;
  });
  server.registerTool('charge_card', {
    description: 'Charge a payment card',
    inputSchema: { card_number: z.string(), email: z.string(), amount_cents: z.number(), iban: z.string() },
  }, async (args) => {
    chargeExecutions++;
    if (chargeExecutions === 1) {
      const result = { content: [{ type: 'text', text: chargeErrorText }], isError: true };
      truthTools.push({ tool: 'charge_card', arguments: args, result, failed: true, ...pendingTask('charge_card') });
      return result;
    }
    const result = { content: [{ type: 'text', text: JSON.stringify(results.charge) }] };
    truthTools.push({ tool: 'charge_card', arguments: args, result, failed: false, ...pendingTask('charge_card') });
    return result;
  });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  const client = new Client({ name: 'checkout-agent', version: '1.0.0' });
  await client.connect(clientTransport);
  tools = await loadMcpTools('payments-mcp', client, {
    beforeToolCall: (req, _state, config) => { mcpTasks.push({ tool: req.name, call_id: config?.toolCall?.id ?? null, config }); },
  });
  mcpClose = async () => { await client.close(); await server.close(); };
}

// the model's turns
const turns = [
  { text: 'Let me look up the customer record first.', call: [ids.lookup, 'lookup_customer', calls.lookup] },
  { text: 'Found the customer. Charging the card now.', call: [ids.charge, 'charge_card', calls.charge] },
  { text: 'Done: the order is paid and the receipt is on its way.' },
];
const model = turns.reduce(
  (m, t) => m.respond(t.call ? new AIMessage({ content: t.text, tool_calls: [{ id: t.call[0], name: t.call[1], args: t.call[2], type: 'tool_call' }] }) : new AIMessage(t.text)),
  fakeModel(),
);
const boundModel = model.bindTools(tools);
const systemPrompt = new SystemMessage('You are a checkout assistant. Use the tools to look up customers and charge cards.');
const callModel = async (state) => ({ messages: [await boundModel.invoke([systemPrompt, ...state.messages])] });
const retryPolicy = { maxAttempts: 3, initialInterval: 10, backoffFactor: 2, jitter: false };
const graph = new StateGraph(MessagesAnnotation)
  .addNode('model', callModel)
  .addNode('tools', new ToolNode(tools, { handleToolErrors: false }), { retryPolicy })
  .addEdge(START, 'model')
  .addConditionalEdges('model', toolsCondition, ['tools', END])
  .addEdge('tools', 'model')
  .compile({ name: 'checkout-agent' });

const res = await graph.invoke({ messages: [new HumanMessage(`Please charge the customer from order ${V.order} for the open invoice and send the receipt.`)] });
const finalText = res.messages.at(-1).content;
console.error('final:', finalText, 'messages:', res.messages.length, 'charge executions:', chargeExecutions);
await provider.forceFlush();
await provider.shutdown();
await mcpClose();
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);

if (mcpTasks.length) throw new Error(`mcp: calls the server never ran: ${JSON.stringify(mcpTasks.map((m) => m.tool))}`);
// what the run did, checked: 3 model turns, one lookup, then one charge_card call (one call id)
// executed twice, by two attempts of the same tools task: the first failed, the second succeeded
const chargeRuns = truthTools.filter((t) => t.tool === 'charge_card');
const lookups = truthTools.filter((t) => t.tool === 'lookup_customer');
const toolMessages = res.messages.filter((m) => m.getType() === 'tool');
if (model.callCount !== 3 || finalText !== turns[2].text || lookups.length !== 1 || lookups[0].call_id !== ids.lookup || chargeRuns.length !== 2
  || chargeRuns.some((t) => t.call_id !== ids.charge) || !chargeRuns[0].failed || chargeRuns[1].failed
  || chargeRuns[0].task.node_attempt !== 1 || chargeRuns[1].task.node_attempt !== 2 || chargeRuns[0].task.task_id !== chargeRuns[1].task.task_id
  || toolMessages.length !== 2 || toolMessages.some((m) => m.status !== 'success')) {
  throw new Error(`unexpected run: ${model.callCount} model calls, ${JSON.stringify(truthTools.map((t) => [t.tool, t.call_id, t.failed, t.task]))}, tool messages ${JSON.stringify(toolMessages.map((m) => [m.tool_call_id, m.status]))}`);
}

// the spans, read back only to check the tree the notes describe, by the span ids each execution
// recorded: every execution's TOOL span is a child of the task span it recorded; the two
// charge_card executions ran under two different `tools` CHAIN spans (one per node attempt),
// siblings under the checkout-agent root, the first ERROR, the second OK, with the same metadata
const spans = fs.readFileSync(outFile, 'utf8').split('\n').filter(Boolean)
  .flatMap((l) => JSON.parse(l).resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)));
const byId = new Map(spans.map((s) => [s.spanId, s]));
const attr = (s, k) => s?.attributes?.find((a) => a.key === k)?.value?.stringValue;
const STATUS = ['UNSET', 'OK', 'ERROR'];
const st = (s) => STATUS[s?.status?.code ?? 0];
const treeSeen = truthTools.map((t) => {
  const ts = byId.get(t.task.tool_span_id), task = byId.get(t.task.task_span?.span_id);
  return `${ts?.name} ${st(ts)} (${ts?.spanId}) under ${task?.name} ${st(task)} (${task?.spanId}) under ${byId.get(task?.parentSpanId)?.name}${ts?.parentSpanId === task?.spanId ? '' : ' PARENT MISMATCH'}`;
});
console.error('tool spans:', JSON.stringify(treeSeen, null, 1));
const [c1, c2] = chargeRuns.map((t) => [byId.get(t.task.tool_span_id), byId.get(t.task.task_span?.span_id)]);
if (spans.filter((s) => attr(s, 'openinference.span.kind') === 'TOOL').length !== truthTools.length
  || truthTools.some((t) => { const ts = byId.get(t.task.tool_span_id); return ts?.name !== t.tool || ts.parentSpanId !== t.task.task_span?.span_id || t.task.task_span.name !== 'tools' || byId.get(ts.parentSpanId)?.name !== 'tools'; })
  || c1[1].spanId === c2[1].spanId || c1[1].parentSpanId !== c2[1].parentSpanId || byId.get(c1[1].parentSpanId)?.name !== 'checkout-agent'
  || st(c1[0]) !== 'ERROR' || st(c1[1]) !== 'ERROR' || st(c2[0]) !== 'OK' || st(c2[1]) !== 'OK'
  || attr(c1[1], 'metadata') !== attr(c2[1], 'metadata') || attr(c1[1], 'input.value') !== attr(c2[1], 'input.value')) {
  throw new Error(`unexpected span tree: ${JSON.stringify(treeSeen)}`);
}
const expect = {
  calls: [
    { tool: 'lookup_customer', attempts: 1, attempt_statuses: ['ok'], retry_layer: null, failed_attempts_hidden: false, span_names: ['lookup_customer'], call_ids: [ids.lookup] },
    {
      tool: 'charge_card', attempts: chargeRuns.length, attempt_statuses: chargeRuns.map((t) => (t.failed ? 'error' : 'ok')), retry_layer: 'tool_runtime', failed_attempts_hidden: false,
      span_names: chargeRuns.map(() => 'charge_card'), call_ids: chargeRuns.map((t) => t.call_id),
    },
  ],
  agent_spans: [{ name: 'checkout-agent', marker: 'openinference.span.kind=CHAIN (the compiled StateGraph, compile({name}); OpenInference has no AGENT kind here)' }],
  notes: mcp ? NOTES_MCP() : NOTES_PLAIN(),
};
function NOTES_PLAIN() {
  return `charge_card threw on its first execution; the ToolNode (handleToolErrors: false; with the default true it would have returned a ToolMessage with status error and nothing would retry) re-threw, so the tools node failed and LangGraph's node retryPolicy (maxAttempts 3, initialInterval 10 ms, jitter off) re-invoked the whole tools node with the same input: the same tool call (${ids.charge}, same arguments) ran again and succeeded. One logical call, two executions, re-run by the graph runtime, not by the model (3 model turns). Each node attempt is its own tools CHAIN span (the runtime invokes the node again, a new LangChain run), both direct children of the checkout-agent root and siblings: the first tools span is status ERROR (status.message = the thrown text, a blank line and the stack; an exception event with the same text) with the ERROR charge_card TOOL span under it (same status.message and exception event, no output.value); the second tools span is OK with the OK charge_card TOOL span under it. tools[].task records, from inside each execution, the task and the span ids it ran under. The two tools spans carry IDENTICAL metadata (langgraph_step 4, langgraph_node, langgraph_triggers, langgraph_path and langgraph_checkpoint_ns / checkpoint_ns = tools:<task id>, the same Pregel task id) and identical input.value; no attribute numbers the attempt (LangGraph's executionInfo.nodeAttempt, 1 then 2 in tools[].task, is run config, not metadata, and is not exported); they differ only in span id, times, status and output.value. The TOOL spans have no call-id attribute; ${ids.charge} is in the model's tool_calls (the second LLM span's output.value, its model CHAIN span's output.value, and every later span's input.value that carries the state) and in the successful attempt's ToolMessage (kwargs.tool_call_id), i.e. inside the OK charge_card TOOL span's output.value, the second tools span's output.value, the third LLM span's input.value and the root's output.value. The failed attempt produced no ToolMessage: the model never saw the error, and the run's messages hold exactly one ToolMessage for ${ids.charge} (status success). Each model CHAIN span also has a RunnableLambda CHAIN child, the toolsCondition branch (output.value tools or __end__).`;
}
function NOTES_MCP() {
  return `charge_card (served by an McpServer over InMemoryTransport in this process, loaded with loadMcpTools from @langchain/mcp-adapters) returned a CallToolResult with isError: true on its first execution; the adapter threw a ToolException ("MCP tool 'charge_card' on server 'payments-mcp' returned an error: <the error text>"), the ToolNode (handleToolErrors: false) re-threw it, so the tools node failed and LangGraph's node retryPolicy (maxAttempts 3, initialInterval 10 ms, jitter off) re-invoked the whole tools node: the same tool call (${ids.charge}, same arguments) went to the MCP server again and succeeded. One logical call, two executions, re-run by the graph runtime (3 model turns). Each node attempt is its own tools CHAIN span, siblings under the checkout-agent root: the first ERROR with the ERROR charge_card TOOL span under it (status.message = the ToolException text, which embeds the MCP error text, a blank line and the ToolException stack; an exception event with the same text; no output.value), the second OK with the OK charge_card TOOL span. The isError flag itself appears nowhere in the trace. Both tools spans carry identical metadata (langgraph_step 4, langgraph_checkpoint_ns = tools:<the same task id>, ...) and identical input.value; no attribute numbers the attempt (executionInfo.nodeAttempt, 1 then 2 in tools[].task, is not exported). The TOOL spans have no call-id attribute; ${ids.charge} is in the model's tool_calls and in the successful attempt's ToolMessage (kwargs.tool_call_id, with artifact []) inside the OK TOOL span's output.value, the second tools span's output.value, the third LLM span's input.value and the root's output.value. The successful results are the MCP text content (a JSON document) as the ToolMessage content string. The MCP server sees neither the call id nor the graph: tools[].call_id and tools[].task come from the adapter's beforeToolCall hook (observe only; the config it is given) matched to the server's executions in order.`;
}
const pkgs = Object.fromEntries(Object.entries(JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies)
  .filter(([name]) => mcp || !['@langchain/mcp-adapters', '@modelcontextprotocol/sdk'].includes(name)));
fs.writeFileSync(truthFile, JSON.stringify({
  sdk: mcp
    ? 'langgraph.js StateGraph (model node + ToolNode with retryPolicy, tools from an in-process McpServer via @langchain/mcp-adapters) + OpenInference (batch span processor)'
    : 'langgraph.js StateGraph (model node + ToolNode with retryPolicy) + OpenInference (batch span processor)',
  packages: pkgs,
  tools: truthTools.map(({ tool: name, call_id, arguments: a, result, failed, task }) => ({ tool: name, call_id, arguments: a, result, failed, task })),
  expect,
  note: (mcp
    ? 'tool results are MCP CallToolResult objects as the server returned them; call_id and task are what the adapter\'s beforeToolCall hook saw for that execution (config.toolCall.id, config.executionInfo, config.metadata; the TOOL and task span ids from the tracer\'s run map), matched to the server\'s executions in order'
    : 'tools return JSON strings; call_id is the tool call id the tool saw (config.toolCall.id); task is the LangGraph task the execution ran in (config.executionInfo.nodeAttempt / taskId, config.metadata.langgraph_*) and the ids of its OpenInference TOOL span and of the task span above it (from the tracer\'s run map)')
    + `; charge_card executions 1 and 2 are one model tool call (${ids.charge}) re-run by the tools node's retryPolicy`,
}, null, 2) + '\n');
