// Analyse a capture: fill raw_values into <name>.truth.json and report where they occur.
// usage: node analyze.mjs <name.jsonl> <name.truth.json> [--signature] [--json]
import fs from 'node:fs';

const [jsonl, truthFile, ...flags] = process.argv.slice(2);
const truth = JSON.parse(fs.readFileSync(truthFile, 'utf8'));

function leaves(v, out) {
  if (v == null) return out;
  if (typeof v === 'string') {
    if (v.length >= 8) out.add(v);
    // a tool result that is a JSON document (e.g. LangChain tools return JSON strings):
    // its leaves are searched for too, since copies may be re-encoded
    if (/^\s*[[{]/.test(v)) { try { leaves(JSON.parse(v), out); } catch {} }
  }
  else if (typeof v === 'number' || typeof v === 'bigint') { const s = String(v); if (s.length >= 8) out.add(s); }
  else if (Array.isArray(v)) v.forEach((x) => leaves(x, out));
  else if (typeof v === 'object') Object.values(v).forEach((x) => leaves(x, out));
  return out;
}
const raw = new Set();
const origin = new Map(); // value -> "tool#i args|result|error"
truth.tools.forEach((t, i) => {
  for (const [part, val] of [['args', t.arguments], [t.failed ? 'error' : 'result', t.result]]) {
    for (const s of leaves(val, new Set())) {
      raw.add(s);
      if (!origin.has(s)) origin.set(s, new Set());
      origin.get(s).add(`${t.tool}#${i + 1} ${part}`);
    }
  }
});
truth.raw_values = [...raw];
// keep key order: sdk, packages, tools, raw_values
fs.writeFileSync(truthFile, JSON.stringify({ sdk: truth.sdk, packages: truth.packages, tools: truth.tools, raw_values: truth.raw_values, ...Object.fromEntries(Object.entries(truth).filter(([k]) => !['sdk', 'packages', 'tools', 'raw_values'].includes(k))) }, null, 2) + '\n');

const KIND = ['UNSPECIFIED', 'INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'];
function flat(v) { // AnyValue -> string for searching / printing
  if (v == null) return '';
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return String(v.intValue);
  if ('doubleValue' in v) return String(v.doubleValue);
  if ('boolValue' in v) return String(v.boolValue);
  if ('arrayValue' in v) return JSON.stringify((v.arrayValue.values ?? []).map(flat));
  if ('kvlistValue' in v) return JSON.stringify(Object.fromEntries((v.kvlistValue.values ?? []).map((kv) => [kv.key, flat(kv.value)])));
  if ('bytesValue' in v) return Buffer.from(v.bytesValue, 'base64').toString('utf8');
  return '';
}
const spans = [];
for (const line of fs.readFileSync(jsonl, 'utf8').split('\n').filter(Boolean)) {
  const req = JSON.parse(line);
  for (const rs of req.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push({ s, scope: ss.scope?.name ?? '', resource: rs.resource });
}
const hits = new Map(); // loc key -> {spanName, kind, loc, values:Set, origins:Set, example}
function check(spanName, kind, loc, text) {
  const found = truth.raw_values.filter((r) => text.includes(r));
  if (!found.length) return;
  const k = `${spanName}\u0000${kind}\u0000${loc}`;
  if (!hits.has(k)) hits.set(k, { spanName, kind, loc, values: new Set(), origins: new Set(), example: text, count: 0 });
  const h = hits.get(k);
  h.count++;
  (h.all ??= []).push(text);
  found.forEach((f) => { h.values.add(f); origin.get(f).forEach((o) => h.origins.add(o)); });
}
const sig = [];
for (const { s, scope, resource } of spans) {
  const attr = (k) => (s.attributes ?? []).find((a) => a.key === k)?.value?.stringValue;
  const sub = attr('openinference.span.kind') ?? attr('gen_ai.operation.name');
  const kind = (KIND[s.kind] ?? String(s.kind)) + (sub ? ` (${sub})` : '');
  check(s.name, kind, 'span name', s.name);
  for (const kv of s.attributes ?? []) check(s.name, kind, `attr ${kv.key}`, flat(kv.value));
  for (const e of s.events ?? []) {
    check(s.name, kind, `event name ${e.name}`, e.name);
    for (const kv of e.attributes ?? []) check(s.name, kind, `event ${e.name} / attr ${kv.key}`, flat(kv.value));
  }
  if (s.status?.message) check(s.name, kind, 'status.message', s.status.message);
  for (const kv of resource?.attributes ?? []) check(s.name, kind, `resource ${kv.key}`, flat(kv.value));
  sig.push(`${scope} | ${s.name} | ${kind} | status=${s.status?.code ?? 0} | attrs=${(s.attributes ?? []).map((a) => a.key).sort().join(',')} | events=${(s.events ?? []).map((e) => e.name + '{' + (e.attributes ?? []).map((a) => a.key).sort().join(',') + '}').join(',')}`);
}
if (flags.includes('--signature')) { console.log(sig.sort().join('\n')); process.exit(0); }

// structural skeleton of a JSON value: literal values kept for discriminator keys, others typed
const LITERAL = new Set(['role', 'type', 'finish_reason', 'status', 'lc', 'kind']);
const PAYLOAD = new Set(['arguments', 'response', 'input', 'args', 'toolInput', 'result', 'toolResult']);
function isObj(x) { return x && typeof x === 'object' && !Array.isArray(x); }
function canMerge(a, b) {
  if (!isObj(a) || !isObj(b)) return JSON.stringify(a) === JSON.stringify(b);
  const ka = Object.keys(a).sort().join(), kb = Object.keys(b).sort().join();
  if (ka !== kb) return false;
  for (const k of Object.keys(a)) if (LITERAL.has(k) && a[k] !== b[k]) return false;
  if (Array.isArray(a.id) && JSON.stringify(a.id) !== JSON.stringify(b.id)) return false;
  return true;
}
function merge(a, b) {
  if (Array.isArray(a) && Array.isArray(b)) { const out = []; for (const x of [...a, ...b]) addTo(out, x); return out; }
  if (isObj(a) && isObj(b) && canMerge(a, b)) return Object.fromEntries(Object.keys(a).map((k) => [k, merge(a[k], b[k])]));
  if (JSON.stringify(a) === JSON.stringify(b)) return a;
  const alts = []; for (const x of [...(a?.['<oneOf>'] ?? [a]), ...(b?.['<oneOf>'] ?? [b])]) addTo(alts, x);
  return alts.length === 1 ? alts[0] : { '<oneOf>': alts };
}
function addTo(list, x) {
  const i = list.findIndex((e) => canMerge(e, x));
  if (i < 0) list.push(x); else list[i] = merge(list[i], x);
}
function skel(v, key) {
  if (PAYLOAD.has(key) && v && typeof v === 'object' && key !== 'toolResult') return Array.isArray(v) ? '<payload:array>' : '<payload:object>';
  if (PAYLOAD.has(key) && typeof v === 'string') return /^\s*[[{]/.test(v) ? '<payload:json-string>' : '<payload:string>';
  if (key === 'id' && Array.isArray(v)) return v.join('.');
  if (Array.isArray(v)) { const out = []; for (const x of v) addTo(out, skel(x)); return out; }
  if (isObj(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, skel(x, k)]));
  if (typeof v === 'string') {
    if (LITERAL.has(key)) return v;
    if (/^\s*[[{]/.test(v)) { try { return { '<json-string>': skel(JSON.parse(v)) }; } catch {} }
    return '<str>';
  }
  if (typeof v === 'number') return LITERAL.has(key) ? v : '<num>';
  return v;
}
const shapes = new Map(); // loc -> [values]
for (const h of hits.values()) {
  const k = `\`${h.loc}\` on \`${h.spanName}\``;
  if (!shapes.has(k)) shapes.set(k, []);
  for (const t of h.all) { try { const j = JSON.parse(t); if (j && typeof j === 'object') shapes.get(k).push(...(Array.isArray(j) ? j : [j])); } catch {} }
}
const short = (t, n = 400) => (t.length > n ? t.slice(0, n) + `…(+${t.length - n} chars)` : t);
const rows = [...hits.values()].sort((a, b) => a.loc.localeCompare(b.loc) || a.spanName.localeCompare(b.spanName));
if (flags.includes('--shapes')) {
  for (const [loc, vals] of shapes) if (vals.length) console.log(`- ${loc}: \`${JSON.stringify(skel(vals))}\``);
  process.exit(0);
}
if (flags.includes('--json')) { console.log(JSON.stringify({ spans: spans.length, hits: rows.map(({ all, ...h }) => ({ ...h, values: [...h.values], origins: [...h.origins] })) })); process.exit(0); }
console.log(`spans: ${spans.length}; raw_values: ${truth.raw_values.length}; found: ${new Set(rows.flatMap((h) => [...h.values])).size}`);
const missing = truth.raw_values.filter((r) => !rows.some((h) => h.values.has(r)));
if (missing.length) console.log('raw values not found anywhere:', missing);
console.log('\n| span name | kind | location | spans | payload of |\n|---|---|---|---|---|');
for (const h of rows) console.log(`| \`${h.spanName}\` | ${h.kind} | \`${h.loc}\` | ${h.count} | ${[...h.origins].sort().join(', ')} |`);
console.log('\nExamples (first occurrence, shortened):');
const seenLoc = new Set();
for (const h of rows) { if (seenLoc.has(h.loc)) continue; seenLoc.add(h.loc); console.log(`- \`${h.loc}\` on \`${h.spanName}\`: \`${short(h.example)}\``); }
