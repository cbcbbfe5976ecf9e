// Writes ../README.md from the captures and their truth files (all tables are computed).
// usage: node make_readme.mjs
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';

const dir = new URL('..', import.meta.url).pathname;
const here = new URL('.', import.meta.url).pathname;
const CAPTURES = [
  ['vercel_ai_v7', 'batch', '@ai-sdk/otel `OpenTelemetry` (GenAI semconv), `ToolLoopAgent.generate`'],
  ['vercel_ai_v7_simple', 'simple (one request per span)', 'same run as `vercel_ai_v7`, SimpleSpanProcessor'],
  ['vercel_ai_v7_legacy', 'batch', '@ai-sdk/otel `LegacyOpenTelemetry` (`ai.*` attributes)'],
  ['vercel_ai_v7_stream', 'batch', 'as `vercel_ai_v7`, streamed: `ToolLoopAgent.stream` (streamText) over the mock model\'s `doStream` (text deltas, `tool-input-start`/`-delta`/`-end` then `tool-call` chunks), `fullStream` consumed whole'],
  ['vercel_ai_v7_legacy_stream', 'batch', 'as `vercel_ai_v7_legacy`, streamed like `vercel_ai_v7_stream`'],
  ['mastra', 'batch (inside @mastra/otel-exporter)', '`Agent.generate` via `Mastra` + `Observability` + `OtelExporter` (provider `custom`, `http/json`)'],
  ['langchain_openinference', 'batch', '`createAgent` (LangGraph) + `toolRetryMiddleware`, OpenInference LangChain instrumentation'],
  ['strands', 'batch', '`Agent.invoke`, tools from an in-process MCP server via `McpClient`, default (legacy) GenAI events'],
  ['strands_latest', 'batch', 'as `strands` with `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`'],
  ['strands_hidden', 'batch', '`Agent.invoke` + MCP tools; `charge_card` returns `isError: true` twice, an `AfterToolCallEvent` hook re-runs it (one toolUseId, three executions)'],
  ['strands_recall', 'batch', '`Agent.invoke` + MCP tools; `charge_card` returns `isError: true` once, the model calls it again (new toolUseId, backup card)'],
  ['openai_agents_recall', 'batch', '`run(agent)` (`@openai/agents`) over `OpenAIChatCompletionsModel` with a scripted `fetch`, OpenInference OpenAI Agents instrumentation; `charge_card` throws once (custom `errorFunction` gives the model the error text), the model calls it again'],
  ['openai_agents_hidden', 'batch', 'as `openai_agents_recall`, but `charge_card` returns an error text instead of throwing'],
  ['langchain_traceloop_retry', 'batch (traceloop SDK)', '`createAgent` (LangGraph) + `toolRetryMiddleware` inside `traceloop.withAgent`, OpenLLMetry (`@traceloop/node-server-sdk`) LangChain instrumentation; `charge_card` throws twice, the third execution succeeds'],
  ['langchain_traceloop_recall', 'batch (traceloop SDK)', 'as `langchain_traceloop_retry` without middleware; the thrown error goes back to the model as a ToolMessage (status `error`), the model calls `charge_card` again'],
  ['langchain_traceloop_hidden', 'batch (traceloop SDK)', 'as `langchain_traceloop_recall`, but `charge_card` returns a ToolMessage with status `error` instead of throwing'],
  ['langchain_openinference_turn_diff', 'batch', '`createAgent` (LangGraph), OpenInference; ONE model turn calls `lookup_customer` twice with different arguments'],
  ['langchain_openinference_turn_same', 'batch', 'as `langchain_openinference_turn_diff` with the SAME arguments on both calls (two calls, not a retry)'],
  ['strands_undici_retryagent', 'batch', 'Strands `tool()` that POSTs to an in-process service through undici `RetryAgent` (503, 503, 200), `@opentelemetry/instrumentation-undici` + `instrumentation-http`'],
  ['strands_http_retryloop', 'batch', 'as `strands_undici_retryagent` with `node:http` and a hand-written retry loop, `@opentelemetry/instrumentation-http`'],
  ['strands_unrecovered', 'batch', '`Agent.invoke` + MCP tools; `charge_card` returns `isError: true` on every execution, the `AfterToolCallEvent` hook re-runs it once (one toolUseId, two failed executions), the model answers that the payment went through'],
  ['openai_agents_unrecovered', 'batch', 'as `openai_agents_recall`, but the model does not call `charge_card` again after it threw and answers that the payment went through'],
  ['langchain_traceloop_unrecovered', 'batch (traceloop SDK)', 'as `langchain_traceloop_retry` with `toolRetryMiddleware({maxRetries: 1})`; `charge_card` throws on both executions, the middleware hands the model its failure ToolMessage, the model answers that the payment went through'],
  ['langchain_openinference_unrecovered', 'batch', 'as `langchain_openinference` with `toolRetryMiddleware({maxRetries: 1})`; `charge_card` throws on both executions, the middleware hands the model its failure ToolMessage, the model answers that the payment went through'],
  ['openai_agents_recall_stream', 'batch', 'as `openai_agents_recall`, streamed: `run(agent, input, { stream: true })`, the scripted `fetch` answers each `stream: true` request with SSE `chat.completion.chunk` events (word text deltas, tool call id/name then arguments in pieces, finish_reason, usage, `[DONE]`), every stream event read, then `result.completed`'],
  ['openai_agents_responses_recall', 'batch', 'as `openai_agents_recall` over the SDK\'s default model, `OpenAIResponsesModel` (Responses API, not streamed): the scripted `fetch` answers each `POST /responses` with a `response` object (`output`: a `message` item with an `output_text` part and a `function_call` item with `call_id`, `name` and the `arguments` JSON string; the request\'s instructions and tools echoed) and checks that the next request carries the `function_call_output` items'],
  ['langchain_openinference_stream', 'batch', 'as `langchain_openinference`, streamed: `agent.stream(input, { streamMode: [\'updates\', \'messages\'] })` read to its end over a streaming subclass of `fakeModel()` (`StreamingFakeModel`: text deltas, `tool_call_chunks` with the arguments in pieces, a finish/usage chunk)'],
  ['mastra_stream', 'batch (inside @mastra/otel-exporter)', 'as `mastra`, streamed: `Agent.stream` over the mock model\'s `doStream` (text deltas, `tool-input-start`/`-delta`/`-end` then `tool-call` chunks), `fullStream` read to its end, then `getFullOutput()`'],
  ['strands_stream', 'batch', 'as `strands`, streamed: `Agent.stream` read to its end with `for await` (the result from its `agentResultEvent`), the scripted `Model` streaming the text in word deltas and the tool input in `toolUseInputDelta` pieces'],
  ['openllmetry_openai_recall', 'batch (traceloop SDK)', 'no framework: a hand-written tool loop over the plain `openai` client (`chat.completions.create` with `tools`, a scripted `fetch` answering 4 completions), OpenLLMetry (`@traceloop/node-server-sdk`) OpenAI instrumentation, the run inside `traceloop.withAgent`, each tool inside `traceloop.withTool`; `charge_card` throws once (the loop sends `Error: <message>` back as the tool message, and the span of the execution that threw is never ended, so never exported), the model calls it again with a new call id and a backup card'],
  ['langchain_openinference_chatopenai', 'batch', 'as `langchain_openinference` with the provider class users run instead of `fakeModel()`: `new ChatOpenAI({ model: \'gpt-4o-mini\', apiKey: \'test\', configuration: { fetch } })` (`@langchain/openai` over `openai`); the scripted `fetch` answers the three non-streamed `POST /chat/completions` requests in process (`chat.completion` objects, tool calls as `tool_calls` with JSON-string `arguments`) and checks that each later request carries the earlier tool calls and tool messages'],
  ['vercel_ai_v7_mcp', 'batch', 'as `vercel_ai_v7`, with the tools from an in-process MCP server (`McpServer` over `InMemoryTransport`) through the AI SDK\'s MCP client (`createMCPClient` from `@ai-sdk/mcp`, `client.tools()`); `charge_card` returns `isError: true` once (not thrown: the tool span ends UNSET), the model calls it again with a new call id and a backup card'],
  ['openai_agents_mcp', 'batch', 'as `openai_agents_recall`, with the tools from an MCP server in the same process (`McpServer` over `StreamableHTTPServerTransport` on a node http server on 127.0.0.1) through the SDK\'s `MCPServerStreamableHttp` (`mcpServers` on the agent); `charge_card` returns `isError: true` once (the SDK drops the flag: the TOOL span is OK), the model calls it again with a new call id and a backup card'],
  ['adk_recall', 'batch', 'Google ADK JS (`LlmAgent` + `InMemoryRunner`) with its own tracing; `charge_card` (a `FunctionTool`) throws once: its `execute_tool` span then holds no attribute at all and the failure is only the `{error}` function response in the next `call_llm` span\'s `llm_request`; the model calls it again with a backup card'],
  ['adk_simple', 'simple (one request per span)', 'as `adk_recall` with a SimpleSpanProcessor, its own values'],
  ['adk_mcp', 'batch', 'as `adk_recall` with the tools from an MCP server over Streamable HTTP on 127.0.0.1 (`MCPToolset`); `charge_card` returns `isError: true` once, which is only in `gcp.vertex.agent.tool_response` and in later `llm_request`s'],
  ['adk_retry', 'batch', 'as `adk_recall` with `charge_card` a `NodeTool` over a workflow `FunctionNode` with a `retryConfig`: it throws once and the node runner re-runs it under one `execute_tool` span (`execute_node_attempt` spans carrying the call id as `adk.node.run_id`)'],
  ['langgraph_retrypolicy', 'batch', 'LangGraph.js `StateGraph` with a `ToolNode` added with a `retryPolicy` (`handleToolErrors: false`), OpenInference; `charge_card` throws once and LangGraph re-runs the `tools` node: each attempt under its own `tools` task span, the call id only in the model\'s `tool_calls`'],
  ['langgraph_retrypolicy_mcp', 'batch', 'as `langgraph_retrypolicy` with the tools from an in-process MCP server through `@langchain/mcp-adapters`; `isError: true` once, which the adapter throws as a `ToolException`'],
  ['genkit_recall', 'batch', 'Firebase Genkit (`ai.generate` in a flow over a `defineModel` scripted model) with its own tracing: tool spans named for the tool, no recognition rule names them; the model\'s `toolRequest`/`toolResponse` parts in `genkit:input`/`genkit:output`; `charge_card` throws once, a middleware hands the model `{error}`, the model calls it again'],
  ['genkit_retry', 'batch', 'as `genkit_recall`; a middleware re-runs `charge_card` for the same tool request after two throws (three executions, one ref)'],
  ['genkit_mcp', 'batch', 'as `genkit_recall` with the tools from an in-process MCP server (`@genkit-ai/mcp`); `isError: true` becomes the output `{error}` on an UNSET span'],
  ['voltagent_recall', 'batch', 'VoltAgent (`Agent.generateText` over `MockLanguageModelV3`) with its own observability: `tool.execution:<tool>` spans, no recognition rule names them, and no span copies the model\'s calls (its `llm` span lists the tools offered); `charge_card` throws once, the model calls it again'],
  ['voltagent_mcp', 'batch', 'as `voltagent_recall` with the tools from an MCP server on 127.0.0.1 (`payments_<tool>` names); `isError: true` once, the tool span stays OK'],
  ['py_adk_recall', 'composed from upstream tests', 'Google ADK Python 1.38.0 (its functional goldens): an `on_tool_error_callback` turns the raise into `{"error": …}`, the span stays UNSET; ids are stripped from what the model is sent'],
  ['py_ag2_recall', 'composed from upstream tests', 'AG2 with OpenInference: one AGENT span per turn, `tool_call.id` on TOOL spans, the reply `[true, {…}]`'],
  ['py_crewai_recall', 'composed from upstream tests', 'CrewAI with OpenInference (event listener): `<tool>.run` TOOL spans without call ids; the model\'s calls flattened and in `output.value`'],
  ['py_logfire_mcp_recall', 'composed from upstream tests', 'OpenAI Agents Python with Logfire\'s integration and `instrument_mcp`: `Function: {name}` spans over `MCP request: tools/call` and the server\'s span; `isError` only in the bare `CallToolResult` responses'],
  ['py_logfire_openai_agents_recall', 'composed from upstream tests', 'OpenAI Agents Python with Logfire\'s integration: `Function: {name}` spans with `input`, `output`, `error`; the model\'s messages in `events` and `raw_input`'],
  ['py_mcp_sdk_recall', 'composed from upstream sources', 'the MCP Python SDK\'s own spans: `MCP send tools/call <tool>` (client) over `tools/call <tool>` (SERVER, which alone says ERROR); no arguments, results or call ids anywhere'],
  ['py_openinference_langgraph_recall', 'composed from upstream tests', 'LangGraph Python with OpenInference: `input.value` a Python repr, output `{"type":"tool","data":{…}}`; the ToolNode turns the raise into an error ToolMessage'],
  ['py_openinference_langgraph_handled', 'composed from upstream tests', 'as `py_openinference_langgraph_recall`, the tool handling its own `ToolException`: the TOOL span OK, `"status": "error"` in its output'],
  ['py_openinference_openai_agents_handoff', 'composed from upstream tests', 'OpenAI Agents Python with OpenInference: a triage agent hands off (a `handoff to <agent>` TOOL span) to a payments agent that calls the tools'],
  ['py_openllmetry_fastmcp_recall', 'composed from upstream tests', 'OpenLLMetry\'s MCP instrumentation over FastMCP: the client\'s `<tool>.tool` span and, beside it under `mcp.server`, the server\'s'],
  ['py_openllmetry_langgraph_retry', 'composed from upstream tests', 'LangGraph Python with OpenLLMetry: `execute_tool <tool>` spans whose arguments are the callback envelope `{input_str, tags, metadata, inputs, kwargs}`; a retry policy re-runs the failed call'],
  ['py_pydantic_ai_recall', 'composed from upstream tests', 'Pydantic AI with its instrumentation (format 5): `execute_tool <tool>`, `ModelRetry`\'s result text'],
  ['py_semantic_kernel_recall', 'composed from upstream sources', 'Semantic Kernel Python\'s model diagnostics: `execute_tool <Plugin>-<function>`, the result `str()` of the value (a Python repr); the model\'s messages are logs, not spans'],
  ['py_strands_latest_recall', 'composed from upstream sources', 'Strands Agents Python with the latest GenAI semconv: arguments and results only in `gen_ai.client.inference.operation.details` events'],
];
const KIND = ['UNSPECIFIED', 'INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'];
const STATUS = ['UNSET', 'OK', 'ERROR'];
const run = (...a) => execFileSync('node', [here + 'analyze.mjs', ...a], { encoding: 'utf8', maxBuffer: 1 << 26 });
const short = (t, n = 300) => (t.length > n ? t.slice(0, n) + '…' : t);

let summary = '| capture | SDK + versions | exporter / span processor | requests | spans | where tool payloads appear (location keys) |\n|---|---|---|---|---|---|\n';
let details = '';
for (const [name, proc, what] of CAPTURES) {
  // a capture the processor does not handle yet waits in pending/ (README.intro.md)
  const at = fs.existsSync(`${dir}${name}.jsonl`) ? dir : `${dir}pending/`;
  const jsonl = `${at}${name}.jsonl`, truthF = `${at}${name}.truth.json`;
  if (!fs.existsSync(jsonl)) continue;
  const truth = JSON.parse(fs.readFileSync(truthF, 'utf8'));
  const a = JSON.parse(run(jsonl, truthF, '--json'));
  const shapes = run(jsonl, truthF, '--shapes').trim();
  const lines = fs.readFileSync(jsonl, 'utf8').split('\n').filter(Boolean);
  const spans = lines.flatMap((l) => JSON.parse(l).resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => ({ ...s, scope: ss.scope?.name })))));
  const pk = Object.entries(truth.packages).filter(([k]) => (!k.startsWith('@opentelemetry/') || k === '@opentelemetry/exporter-trace-otlp-http') && k !== 'zod').map(([k, v]) => `\`${k}\` ${v}`).join(', ');
  const locs = [...new Set(a.hits.map((h) => h.loc))];
  summary += `| \`${name}\` | ${pk} | ${proc} | ${lines.length} | ${spans.length} | ${locs.map((l) => '`' + l.replace(/^attr /, '') + '`').join(', ')} |\n`;
  const byName = new Map();
  for (const s of spans) {
    const k = `\`${s.name}\` ${KIND[s.kind]}`;
    byName.set(k, (byName.get(k) ?? 0) + 1);
  }
  const toolSpans = spans.filter((s) => /charge_card|lookup_customer|toolCall/.test(s.name) && !/^chat|invoke/.test(s.name));
  details += `\n### \`${name}\`\n\n${what}. Exporter: ${proc}. ${lines.length} request(s), ${spans.length} spans`;
  details += ` (scope${new Set(spans.map((s) => s.scope)).size > 1 ? 's' : ''} ${[...new Set(spans.map((s) => '`' + s.scope + '`'))].join(', ')}).\n\n`;
  details += `Spans: ${[...byName].map(([k, n]) => `${k} ×${n}`).join(', ')}.\n\n`;
  details += `Tool attempts (from truth): ${truth.tools.map((t) => `${t.tool}${t.failed ? ' (failed)' : ''}`).join(', ')}. `;
  details += `Tool spans: ${toolSpans.map((s) => { const ts = (s.attributes ?? []).find((x) => x.key === 'gen_ai.tool.status')?.value?.stringValue; return `\`${s.name}\` status=${STATUS[s.status?.code ?? 0]}${ts ? ` gen_ai.tool.status=${ts}` : ''}`; }).join('; ')}.\n\n`;
  const missing = truth.raw_values.filter((r) => !a.hits.some((h) => h.values.includes(r)));
  if (missing.length) details += `raw_values never found verbatim (they occur only JSON-escaped inside another JSON string): ${missing.map((m) => '`' + short(m, 60) + '`').join(', ')}.\n\n`;
  details += '| span name | kind (operation) | location | # spans | values of |\n|---|---|---|---|---|\n';
  for (const h of a.hits) details += `| \`${h.spanName}\` | ${h.kind} | \`${h.loc}\` | ${h.count} | ${h.origins.sort().join(', ')} |\n`;
  details += `\nJSON shape per location (merged over all its occurrences; \`<payload:…>\` marks a tool argument/result copy, \`<json-string>\` a JSON document inside a string):\n\n${shapes}\n\nShortened examples:\n\n`;
  const seen = new Set();
  for (const h of a.hits) { if (seen.has(h.loc)) continue; seen.add(h.loc); details += `- \`${h.loc}\` on \`${h.spanName}\`: \`${short(h.example).replace(/\n/g, '\\n').replace(/`/g, "'")}\`\n`; }
}

const intro = fs.readFileSync(here + 'README.intro.md', 'utf8');
fs.writeFileSync(dir + 'README.md', intro.replace('{{SUMMARY}}', summary).replace('{{DETAILS}}', details));
console.log('wrote', dir + 'README.md');
