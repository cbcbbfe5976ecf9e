// Tiny OTLP/HTTP trace receiver on 127.0.0.1. Each POST /v1/traces body is written as one
// line (an ExportTraceServiceRequest in OTLP/JSON) to the output file.
// Machine-identifying values are neutralised before writing (see README.md):
//  - resource attributes host.* / process.* / os.* get fixed neutral values,
//  - the capture directory, home directory, user name and host name inside any string
//    (e.g. file paths in exception stack traces) are replaced.
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const NEUTRAL = {
  'host.name': 'capture-host',
  'host.id': 'capture-host-id',
  'host.arch': 'amd64',
  'os.type': 'linux',
  'os.description': 'Linux',
  'os.version': '6.0.0',
  'process.pid': 1,
  'process.executable.name': 'node',
  'process.executable.path': '/usr/local/bin/node',
  'process.command': '/app/capture.mjs',
  'process.command_args': ['/usr/local/bin/node', '/app/capture.mjs'],
  'process.owner': 'app',
};

function anyValue(v) {
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'number') return Number.isInteger(v) ? { intValue: v } : { doubleValue: v };
  if (Array.isArray(v)) return { arrayValue: { values: v.map(anyValue) } };
  return { stringValue: String(v) };
}

function neutraliseResource(req) {
  for (const rs of req.resourceSpans ?? []) {
    for (const kv of rs.resource?.attributes ?? []) {
      if (kv.key in NEUTRAL) kv.value = anyValue(NEUTRAL[kv.key]);
    }
  }
  return req;
}

function scrubString(s, replacements) {
  for (const [from, to] of replacements) s = s.split(from).join(to);
  return s;
}

export async function startReceiver(outFile, { captureDir = process.cwd() } = {}) {
  const replacements = [
    [path.resolve(captureDir), '/app'],
    [os.homedir(), '/home/app'],
  ];
  const user = os.userInfo().username;
  const host = os.hostname();
  fs.mkdirSync(path.dirname(outFile), { recursive: true });
  fs.writeFileSync(outFile, '');
  const state = { requests: 0, spans: 0 };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const ct = req.headers['content-type'] ?? '';
      if (req.method !== 'POST' || !req.url.startsWith('/v1/traces') || !ct.includes('json')) {
        console.error(`receiver: unexpected ${req.method} ${req.url} content-type=${ct} (${body.length} bytes)`);
        res.writeHead(415).end();
        return;
      }
      let parsed = neutraliseResource(JSON.parse(body.toString('utf8')));
      let line = scrubString(JSON.stringify(parsed), replacements);
      // host / user names only as whole JSON string values or path segments
      if (host && host !== 'localhost') line = line.split(host).join('capture-host');
      if (user && user !== 'root' && user.length > 3) line = line.split(`/${user}/`).join('/app/');
      fs.appendFileSync(outFile, line + '\n');
      state.requests++;
      for (const rs of parsed.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? []) state.spans += (ss.spans ?? []).length;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    state,
    close: () => new Promise((r) => server.close(r)),
  };
}
