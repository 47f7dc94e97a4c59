// Loads a Chrome trace_event JSON file with the Chrome DevTools trace engine (the Performance
// panel's own parser, npm @paulirish/trace_engine, pinned by package-lock.json) and prints what
// it made of the file's function calls ("cat":"function"), one line per thread, then the
// trace's time range:
//   thread PID TID CALLS N0 N1 ...   calls in the thread's tree, then calls at depth 0, 1, ...
//   bounds MIN MAX                   Meta.traceBounds, microseconds, shortest round-trip form
// A call the engine left out of its tree (it drops one that ends after its parent) is not
// counted; a sibling it opened inside the previous call counts one level too deep.
// Usage: node devtools-check.mjs NODE_MODULES TRACE.json
import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

const [modules, file] = process.argv.slice(2);
if (!modules || !file) {
  console.error('usage: node devtools-check.mjs NODE_MODULES TRACE.json');
  process.exit(2);
}
const pkg = path.join(modules, '@paulirish', 'trace_engine');
const Trace = await import(pathToFileURL(path.join(pkg, 'models', 'trace', 'trace.js')).href);
// The engine expects a browser's DOMRect; the package's own runner brings a polyfill.
const {polyfillDOMRect} = await import(pathToFileURL(path.join(pkg, 'analyze-trace.mjs')).href);
polyfillDOMRect();

const json = JSON.parse(fs.readFileSync(file, 'utf8'));
const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(json.traceEvents ?? json);
const parsed = model.parsedTrace();
const data = parsed.data ?? parsed;

for (const [pid, proc] of data.Renderer.processes) {
  for (const [tid, thread] of proc.threads) {
    const depths = [];
    let calls = 0;
    const walk = (node) => {
      if (node.entry.cat === 'function') {
        calls++;
        depths[node.depth] = (depths[node.depth] ?? 0) + 1;
      }
      for (const child of node.children) walk(child);
    };
    for (const root of thread.tree.roots) walk(root);
    const counts = Array.from(depths, (n) => n ?? 0);
    console.log(['thread', pid, tid, calls, ...counts].join(' '));
  }
}
const b = data.Meta.traceBounds;
console.log(`bounds ${String(b.min)} ${String(b.max)}`);
