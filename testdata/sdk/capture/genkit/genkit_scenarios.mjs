// Firebase Genkit (genkit 1.42.0) runs traced by Genkit's OWN OpenTelemetry tracing (every
// action runs in `runInNewSpan`, scope `genkit-tracer`, `genkit:*` attributes). Genkit starts
// the OTel NodeSDK itself; `enableTelemetry({ spanProcessors })` from `genkit/tracing` adds our
// BatchSpanProcessor + OTLPTraceExporter (http/json, 0.52.1: Genkit's OTel 1.25 line) next to
// its own telemetry-server processor (which sends nothing: no GENKIT_TELEMETRY_SERVER, not dev).
// Genkit has no content-capture switch: `genkit:input` / `genkit:output` are always written.
// The model is `ai.defineModel` returning scripted `toolRequest` parts; the run is a flow
// (`ai.defineFlow('checkoutFlow')`) around `ai.generate({ tools, use })`.
//  recall: charge_card throws once. Genkit's tool loop rethrows a tool error (the whole
//          generate would fail), so a generate middleware (`generateMiddleware`, `tool` hook)
//          turns the thrown error into a tool response `{ error: <message> }` for the model,
//          which calls charge_card again with a new ref and a backup card.
//  retry:  charge_card throws twice; a generate middleware `tool` hook calls `next` again for
//          the SAME tool request (same ref, same input): three executions of one call.
//  mcp:    the tools come from an in-process McpServer over InMemoryTransport through
//          `createMcpClient` (@genkit-ai/mcp 1.42.0); charge_card returns `isError: true` once
//          (the plugin turns it into the output `{ error: <text> }`, no throw); the model calls
//          it again with a new ref and a backup card.
// usage: node genkit_scenarios.mjs <recall|retry|mcp> <out.jsonl> <truth.json>
import fs from 'node:fs';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Resource } from '@opentelemetry/resources';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { genkit, z } from 'genkit';
import { generateMiddleware } from 'genkit';
import { enableTelemetry, flushTracing } from 'genkit/tracing';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { z as z4 } from 'zod';
import { startReceiver } from './receiver.mjs';

// nothing may leave this machine: the global fetch refuses (and records) any non-loopback URL
const refusedFetches = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
  if (url.hostname !== '127.0.0.1') { refusedFetches.push(url.origin); throw new Error(`capture: refused fetch to ${url.origin}`); }
  return realFetch(input, init);
};

const [scenario = 'recall', outFile, truthFile] = process.argv.slice(2);
if (!['recall', 'retry', 'mcp'].includes(scenario)) throw new Error(`unknown scenario ${scenario}`);
const receiver = await startReceiver(outFile);
const processor = new BatchSpanProcessor(new OTLPTraceExporter({ url: receiver.url }));
await enableTelemetry({
  spanProcessors: [processor],
  resource: new Resource({ 'service.name': 'capture-genkit' }),
  autoDetectResources: false,
});

// values used by no other capture (tag gkr / gkt / gkm)
const T = { recall: 'gkr', retry: 'gkt', mcp: 'gkm' }[scenario];
const D = { recall: '3', retry: '5', mcp: '7' }[scenario];
const calls = {
  lookup: { customer_id: `cus_${T}_Qp4Zx7Lm`, email: `ingrid.solberg.${T}@example.com` },
  charge1: { card_number: `37828224631${D}005`, email: `ingrid.solberg.pay.${T}@example.com`, amount_cents: 6140, iban: `NO93860111179${D}7` },
  charge2: { card_number: `30569309025${D}904`, email: `ingrid.solberg.backup.${T}@example.com`, amount_cents: 6140, iban: `SE45500000000583984${D}257` },
};
const results = {
  lookup: { account_ref: `acct_${T}_Rw5Hn8Ks`, full_name: `Ingrid Solberg ${T.toUpperCase()}-Customer`, phone: `+47-41-${D}6-28-93`, default_card_token: `tok_${T}_card_Bx73Ud` },
  charge: { charge_id: `ch_${T}_4TgYm8Pc`, receipt_email: `receipts+${T}@example.org`, last4_token: `tok_amex_${T}_8005q2` },
};
const failRefs = [`dcl_${T}_Vn62Qa`, `dcl_${T}_Lr39Wd`];
const errorText = (card, n) => `card_declined: issuer refused card ${card} (decline ref ${failRefs[n]})`;
const failures = { recall: 1, retry: 2, mcp: 1 }[scenario];
const truthTools = [];
let chargeAttempts = 0;

const ai = genkit({});

// ---- tools: Genkit tools (recall, retry) or MCP tools (mcp)
let tools;
let mcpClient;
if (scenario === 'mcp') {
  const { createMcpClient } = await import('@genkit-ai/mcp');
  const server = new McpServer({ name: 'payments-mcp', version: '1.0.0' });
  server.registerTool('lookup_customer', {
    description: 'Look up a customer record',
    inputSchema: { customer_id: z4.string(), email: z4.string() },
  }, async (args) => {
    const result = { content: [{ type: 'text', text: JSON.stringify(results.lookup) }] };
    truthTools.push({ tool: 'lookup_customer', arguments: args, result, failed: false });
    return result;
  });
  server.registerTool('charge_card', {
    description: 'Charge a payment card',
    inputSchema: { card_number: z4.string(), email: z4.string(), amount_cents: z4.number(), iban: z4.string() },
  }, async (args) => {
    chargeAttempts++;
    if (chargeAttempts <= failures) {
      const result = { content: [{ type: 'text', text: errorText(args.card_number, chargeAttempts - 1) }], isError: true };
      truthTools.push({ tool: 'charge_card', arguments: args, result, failed: true });
      return result;
    }
    const result = { content: [{ type: 'text', text: JSON.stringify(results.charge) }] };
    truthTools.push({ tool: 'charge_card', arguments: args, result, failed: false });
    return result;
  });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  mcpClient = createMcpClient({ name: 'payments-mcp', mcpServer: { transport: clientTransport } });
  await mcpClient.ready();
  tools = await mcpClient.getActiveTools(ai);
} else {
  const lookup = ai.defineTool({
    name: 'lookup_customer',
    description: 'Look up a customer record',
    inputSchema: z.object({ customer_id: z.string(), email: z.string() }),
    outputSchema: z.any(),
  }, async (input) => {
    truthTools.push({ tool: 'lookup_customer', arguments: input, result: results.lookup, failed: false });
    return results.lookup;
  });
  const charge = ai.defineTool({
    name: 'charge_card',
    description: 'Charge a payment card',
    inputSchema: z.object({ card_number: z.string(), email: z.string(), amount_cents: z.number(), iban: z.string() }),
    outputSchema: z.any(),
  }, async (input) => {
    chargeAttempts++;
    if (chargeAttempts <= failures) {
      const message = errorText(input.card_number, chargeAttempts - 1);
      truthTools.push({ tool: 'charge_card', arguments: input, result: message, failed: true });
      throw new Error(message);
    }
    truthTools.push({ tool: 'charge_card', arguments: input, result: results.charge, failed: false });
    return results.charge;
  });
  tools = [lookup, charge];
}

// ---- generate middleware (the framework's hook around each tool execution)
const middlewareLog = [];
const toolErrorsToModel = generateMiddleware({ name: 'tool-errors-to-model', description: 'hands a thrown tool error to the model as the tool response' }, () => ({
  tool: async (req, ctx, next) => {
    try {
      return await next(req, ctx);
    } catch (e) {
      middlewareLog.push({ ref: req.toolRequest.ref, caught: e.message });
      return { toolResponse: { name: req.toolRequest.name, ref: req.toolRequest.ref, output: { error: e.message } } };
    }
  },
}));
const retryTool = generateMiddleware({ name: 'retry-tool', description: 'runs a failed tool request again (same ref, same input)' }, () => ({
  tool: async (req, ctx, next) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await next(req, ctx);
      } catch (e) {
        middlewareLog.push({ ref: req.toolRequest.ref, attempt, caught: e.message });
        if (req.toolRequest.name !== 'charge_card' || attempt >= 3) throw e;
      }
    }
  },
}));
const use = { recall: [toolErrorsToModel()], retry: [retryTool()], mcp: [] }[scenario];

// ---- scripted model
const twoCharges = scenario !== 'retry';
const steps = [
  { text: 'Let me look up the customer record first.', call: [`${T}_lookup_1`, 'lookup_customer', calls.lookup] },
  { text: 'Found the customer. Charging the card now.', call: [`${T}_charge_1`, 'charge_card', calls.charge1] },
  ...(twoCharges ? [{ text: 'The card was declined. Trying the backup card on file.', call: [`${T}_charge_2`, 'charge_card', calls.charge2] }] : []),
  { text: 'Done: the order is paid and the receipt is on its way.' },
];
let step = 0;
const modelSaw = []; // tool responses in each request the model received
ai.defineModel({
  name: 'scripted-model-1',
  label: 'Scripted model',
  supports: { tools: true, multiturn: true, systemRole: true },
}, async (request) => {
  modelSaw.push(request.messages.flatMap((m) => m.content.filter((p) => p.toolResponse).map((p) => p.toolResponse)));
  const s = steps[Math.min(step++, steps.length - 1)];
  const content = [{ text: s.text }];
  if (s.call) content.push({ toolRequest: { ref: s.call[0], name: s.call[1], input: s.call[2] } });
  return {
    message: { role: 'model', content },
    finishReason: 'stop',
    usage: { inputTokens: 100 + step * 40, outputTokens: 25, totalTokens: 125 + step * 40 },
  };
});

const checkoutFlow = ai.defineFlow({ name: 'checkoutFlow', inputSchema: z.string(), outputSchema: z.string() }, async (prompt) => {
  const res = await ai.generate({
    model: 'scripted-model-1',
    system: 'You are a checkout assistant. Use the tools to look up customers and charge cards.',
    prompt,
    tools,
    use,
  });
  return res.text;
});
const text = await checkoutFlow('Please charge the customer from order 6140 for the open invoice and send the receipt.');
console.error('final:', text, 'attempts:', chargeAttempts, 'model steps:', step, 'middleware:', JSON.stringify(middlewareLog));
if (mcpClient) await mcpClient.disable?.();
await flushTracing();
await processor.forceFlush();
await processor.shutdown();
await receiver.close();
console.error(`requests=${receiver.state.requests} spans=${receiver.state.spans}`);
if (refusedFetches.length) throw new Error(`non-loopback fetches were attempted: ${refusedFetches.join(', ')}`);

// ---- truth
const ids = {
  lookup_customer: [`${T}_lookup_1`],
  charge_card: scenario === 'retry' ? [`${T}_charge_1`, `${T}_charge_1`, `${T}_charge_1`] : [`${T}_charge_1`, `${T}_charge_2`],
};
for (const t of truthTools) t.call_id = ids[t.tool].shift();
const chargeRuns = truthTools.filter((t) => t.tool === 'charge_card');
const wantRuns = scenario === 'retry' ? 3 : 2;
if (chargeRuns.length !== wantRuns || chargeRuns.slice(0, -1).some((t) => !t.failed) || chargeRuns.at(-1).failed) {
  throw new Error(`unexpected charge_card executions: ${JSON.stringify(chargeRuns.map((t) => t.failed))}`);
}
// what the model was sent for the first charge_card call
const sentFor = (ref) => modelSaw.at(-1).find((r) => r.ref === ref);
const firstChargeSent = sentFor(`${T}_charge_1`);
console.error('model saw for charge_1:', JSON.stringify(firstChargeSent));
if (scenario !== 'retry' && !JSON.stringify(firstChargeSent?.output ?? '').includes(failRefs[0])) throw new Error('the model was not sent the error text');

const tn = (n) => (scenario === 'mcp' ? `payments-mcp/${n}` : n);
const lookupCall = { tool: 'lookup_customer', attempts: 1, attempt_statuses: ['ok'], retry_layer: null, failed_attempts_hidden: false, span_names: [tn('lookup_customer')], call_ids: [null] };
let expect;
if (scenario === 'recall') {
  expect = {
    calls: [lookupCall,
      { tool: 'charge_card', attempts: 1, attempt_statuses: ['error'], retry_layer: null, failed_attempts_hidden: false, span_names: ['charge_card'], call_ids: [null] },
      { tool: 'charge_card', attempts: 1, attempt_statuses: ['ok'], retry_layer: 'agent', failed_attempts_hidden: false, span_names: ['charge_card'], call_ids: [null] }],
    agent_spans: [{ name: 'checkoutFlow', marker: 'genkit:metadata:subtype=flow (the root, genkit:isRoot=true)' }, { name: 'generate', marker: 'genkit:type=util, genkit:name=generate (the outermost one, child of checkoutFlow; one more nested generate per tool turn)' }],
    notes: 'charge_card threw once. Genkit\'s tool loop rethrows a tool error (the whole generate would fail), so a generate middleware (generateMiddleware `tool` hook, `use` on ai.generate) caught it and returned the tool response {error: <message>} for the model, which called charge_card again with a new ref and changed arguments (backup card, email, IBAN): two logical calls, the second an agent-level retry. The thrown execution\'s `charge_card` span is status ERROR (status message = the error text), genkit:state=error, genkit:isFailureSource=true, an exception event; it has genkit:input and no genkit:output. The generate span around it ends UNSET (the middleware swallowed the error); the {error: <message>} response the model got appears only in the next generate / model spans\' genkit:input. Span tree: checkoutFlow (root, genkit:type=action, genkit:metadata:subtype=flow, genkit:isRoot=true) > generate (genkit:type=util) > [model span, tool spans of that turn, generate of the next turn > ...]: each tool turn opens a NESTED generate span, so the tree is as deep as the number of turns. Every span is INTERNAL, scope genkit-tracer; successful spans end UNSET (never OK), genkit:state=success. Tool spans (genkit:type=action, genkit:metadata:subtype=tool) have the arguments in genkit:input and the result in genkit:output (JSON) and carry NO call id: the toolRequest ref appears only inside the model spans\' genkit:output (message.content[].toolRequest {ref, name, input}) and the generate / model spans\' genkit:input (messages[].content[].toolRequest / toolResponse {name, ref, output}: Genkit\'s own Part vocabulary), so call_ids are null.',
  };
} else if (scenario === 'retry') {
  expect = {
    calls: [lookupCall,
      { tool: 'charge_card', attempts: 3, attempt_statuses: ['error', 'error', 'ok'], retry_layer: 'tool_runtime', failed_attempts_hidden: false, span_names: ['charge_card', 'charge_card', 'charge_card'], call_ids: [null, null, null] }],
    agent_spans: [{ name: 'checkoutFlow', marker: 'genkit:metadata:subtype=flow (the root, genkit:isRoot=true)' }, { name: 'generate', marker: 'genkit:type=util, genkit:name=generate (the outermost one, child of checkoutFlow; one more nested generate per tool turn)' }],
    notes: 'charge_card threw twice; a generate middleware `tool` hook (generateMiddleware, `use` on ai.generate; Genkit ships no tool retry, its `retry` middleware wraps model calls only) called next() again for the SAME tool request (same ref, same input), so ONE model tool call was executed three times. The two thrown executions\' `charge_card` spans are status ERROR (status message = the error text, each with its own decline ref), genkit:state=error, genkit:isFailureSource=true, an exception event, no genkit:output; the third is UNSET with genkit:output. All three are siblings under the same generate span with identical genkit:input; no span marks the retry itself (the middleware runs in no span of its own) and the model only ever saw the successful response. Span tree: checkoutFlow (root, genkit:type=action, genkit:metadata:subtype=flow, genkit:isRoot=true) > generate (genkit:type=util) > [model span, tool spans of that turn, generate of the next turn > ...]: each tool turn opens a NESTED generate span, so the tree is as deep as the number of turns. Every span is INTERNAL, scope genkit-tracer; successful spans end UNSET (never OK), genkit:state=success. Tool spans (genkit:type=action, genkit:metadata:subtype=tool) have the arguments in genkit:input and the result in genkit:output (JSON) and carry NO call id: the toolRequest ref appears only inside the model spans\' genkit:output (message.content[].toolRequest {ref, name, input}) and the generate / model spans\' genkit:input (messages[].content[].toolRequest / toolResponse {name, ref, output}: Genkit\'s own Part vocabulary), so call_ids are null.',
  };
} else {
  expect = {
    calls: [lookupCall,
      { tool: 'charge_card', attempts: 1, attempt_statuses: ['error'], retry_layer: null, failed_attempts_hidden: true, span_names: [tn('charge_card')], call_ids: [null] },
      { tool: 'charge_card', attempts: 1, attempt_statuses: ['ok'], retry_layer: 'agent', failed_attempts_hidden: false, span_names: [tn('charge_card')], call_ids: [null] }],
    agent_spans: [{ name: 'checkoutFlow', marker: 'genkit:metadata:subtype=flow (the root, genkit:isRoot=true)' }, { name: 'generate', marker: 'genkit:type=util, genkit:name=generate (the outermost one, child of checkoutFlow; one more nested generate per tool turn)' }],
    notes: 'charge_card (MCP, through @genkit-ai/mcp createMcpClient over InMemoryTransport) returned isError: true once. The plugin turns an isError result into the tool output {error: <text>} (no throw), so the failed `payments-mcp/charge_card` span is status UNSET, genkit:state=success, with genkit:output {"error":"<text>"}, exactly like a successful call apart from that output; the isError flag itself appears nowhere in the trace. The model got {error: <text>} as the toolResponse output and called charge_card again with a new ref and changed arguments (backup card, email, IBAN): two logical calls, the second an agent-level retry. MCP tool spans are named `payments-mcp/<tool>` (genkit:name, genkit:key /tool/payments-mcp/<tool>) while the model is offered and requests the short name (`charge_card`, tool definition metadata.originalName = payments-mcp/charge_card). Successful MCP results are the parsed JSON document (the text part parsed), not the CallToolResult. Span tree: checkoutFlow (root, genkit:type=action, genkit:metadata:subtype=flow, genkit:isRoot=true) > generate (genkit:type=util) > [model span, tool spans of that turn, generate of the next turn > ...]: each tool turn opens a NESTED generate span, so the tree is as deep as the number of turns. Every span is INTERNAL, scope genkit-tracer; successful spans end UNSET (never OK), genkit:state=success. Tool spans (genkit:type=action, genkit:metadata:subtype=tool) have the arguments in genkit:input and the result in genkit:output (JSON) and carry NO call id: the toolRequest ref appears only inside the model spans\' genkit:output (message.content[].toolRequest {ref, name, input}) and the generate / model spans\' genkit:input (messages[].content[].toolRequest / toolResponse {name, ref, output}: Genkit\'s own Part vocabulary), so call_ids are null.',
  };
}
const pkgs = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url))).dependencies;
fs.writeFileSync(truthFile, JSON.stringify({
  sdk: `genkit js (built-in OTel tracing, batch span processor, scenario ${scenario})`,
  packages: pkgs,
  tools: truthTools.map(({ tool, call_id, arguments: a, result, failed }) => ({ tool, call_id, arguments: a, result, failed })),
  expect,
  note: scenario === 'mcp' ? 'tool results are MCP CallToolResult objects as the server returned them; call_id is the scripted toolRequest ref, matched by order' : 'call_id is the scripted toolRequest ref, matched by order; a thrown error is recorded as `result` = the text it threw, with failed: true',
}, null, 2) + '\n');
