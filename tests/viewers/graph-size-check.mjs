// The call graph at a real program's size, as a person sees it in a web browser (issue 28.3):
// `sledtrace graph` of a trace of 150 functions ($GRAPH_TRACE writes it, and prints the call
// graph it wrote: the ground truth), laid out by Graphviz's dot ($DOT) as SVG, opened as a page
// in headless Chromium ($CHROMIUM, driven by the pinned npm playwright-core, as
// chromium-check.mjs does), and read back from the live DOM. Twice:
//
// - without options: the drawing has a non-zero size, it holds a node for every one of the 150
//   functions and an edge for every caller -> callee pair the program has, and nothing else
//   (each <g class="node">'s <title> is fID for a function ID of the trace, its first line that
//   function's name; each <g class="edge">'s title fA->fB a call the program makes);
// - with --focus stage2_step1 --min-share 1: exactly the nodes the focus should hold, computed
//   here from the program's call graph (the function, everything it calls and everything that
//   calls it, transitively: not its callers' other callees, not its callees' other callers),
//   less those whose total is under 1% of the largest kept total (the generator's totals), and
//   the edges between them; and its width is under FOCUS_MAX_PX, where the unfocused drawing
//   is many times wider (each point's summary says how wide: `graph | dot -Tsvg` on xz drew
//   8387 pt).
//
// Prints TAP, a test point per drawing (each difference on stderr); without chromium or dot,
// a plan of 0 with the reason (TAP's skip). A screenshot of each page's top left corner stays in
// WORKDIR with the SVGs.
// Usage: node graph-size-check.mjs WORKDIR
//   (env: VIEWERS_MODULES, SLEDTRACE_BIN, GRAPH_TRACE, CHROMIUM, DOT; CHROMIUM or DOT empty
//   when not found)
import {execFileSync} from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

const FOCUS = 'stage2_step1';
const MIN_SHARE = 1;
// A focused graph of 8 boxes fits a screen; the unfocused one of 150 does not.
const FOCUS_MAX_PX = 1200;

const work = process.argv[2];
if (!work) {
  console.error('usage: node graph-size-check.mjs WORKDIR');
  process.exit(2);
}
for (const [name, what] of [['CHROMIUM', 'chromium'], ['DOT', "graphviz's dot"]]) {
  if (!process.env[name]) {
    console.log(`1..0 # SKIP ${what} not found (scripts/setup.sh installs it)`);
    process.exit(0);
  }
}
const env = (name) => {
  const v = process.env[name];
  if (!v) {
    console.error(`graph-size-check: ${name} not set`);
    process.exit(2);
  }
  return v;
};
const sledtrace = env('SLEDTRACE_BIN');
const {chromium} = await import(
  pathToFileURL(path.join(env('VIEWERS_MODULES'), 'playwright-core', 'index.mjs')).href);

fs.rmSync(work, {recursive: true, force: true});
fs.mkdirSync(work, {recursive: true});
const trace = path.join(work, 'graph150.fdr');
const truth = JSON.parse(execFileSync(env('GRAPH_TRACE'), [trace], {encoding: 'utf8'}));
const fns = new Map(truth.functions.map((f) => [f.id, f]));
const callers = new Map([...fns.keys()].map((id) => [id, []]));
for (const f of fns.values()) for (const c of f.callees) callers.get(c).push(f.id);

let failures = 0;
function fail(what, msg) {
  failures++;
  if (failures <= 40) console.error(`FAIL ${what}: ${msg}`);
  else if (failures === 41) console.error('(more failures not shown)');
}

// Every function reachable from `from` along `next`, `from` included.
function reach(from, next) {
  const seen = new Set(from), todo = [...from];
  while (todo.length) {
    for (const n of next(todo.pop())) {
      if (!seen.has(n)) {
        seen.add(n);
        todo.push(n);
      }
    }
  }
  return seen;
}

// The node ids --focus FOCUS --min-share MIN_SHARE should draw, from the program's call graph.
function focusedIds() {
  const roots = [...fns.values()].filter((f) => f.name === FOCUS).map((f) => f.id);
  const keep = new Set([...reach(roots, (id) => fns.get(id).callees),
                        ...reach(roots, (id) => callers.get(id))]);
  const top = Math.max(...[...keep].map((id) => fns.get(id).total_ns));
  return new Set([...keep].filter((id) => fns.get(id).total_ns >= MIN_SHARE / 100 * top));
}

function edgesAmong(ids) {
  const e = new Set();
  for (const id of ids)
    for (const c of fns.get(id).callees) if (ids.has(c)) e.add(`f${id}->f${c}`);
  return e;
}

async function checkDrawing(browser, c) {
  const what = `graph ${c.id}`;
  const dot = execFileSync(sledtrace, ['graph', trace, ...c.opts], {encoding: 'utf8'});
  const svg = path.join(work, `${c.id}.svg`);
  fs.writeFileSync(svg, execFileSync(env('DOT'), ['-Tsvg'], {input: dot}));
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(pathToFileURL(svg).href, {waitUntil: 'load'});
  const shown = await page.evaluate(() => {
    const root = document.querySelector('svg');
    const box = (el) => {
      const b = el.getBoundingClientRect();
      return {w: b.width, h: b.height};
    };
    return {
      svg: box(root),
      pt: root.getAttribute('width'),
      nodes: [...document.querySelectorAll('g.node')].map((g) => ({
        title: g.querySelector('title')?.textContent,
        name: g.querySelector('text')?.textContent,
        box: box(g),
      })),
      edges: [...document.querySelectorAll('g.edge')].map((g) => g.querySelector('title')
        ?.textContent),
    };
  });
  if (!(shown.svg.w > 0 && shown.svg.h > 0))
    fail(what, `the drawing is ${shown.svg.w} x ${shown.svg.h} px`);
  const got = new Set();
  for (const n of shown.nodes) {
    const m = /^f(\d+)$/.exec(n.title ?? '');
    const f = m && fns.get(Number(m[1]));
    if (!f) {
      fail(what, `node '${n.title}' is not a function of the trace`);
      continue;
    }
    if (n.name !== f.name) fail(what, `node ${n.title} shows '${n.name}', not '${f.name}'`);
    if (!(n.box.w > 0 && n.box.h > 0)) fail(what, `node ${f.name} is ${n.box.w} x ${n.box.h} px`);
    if (got.has(f.id)) fail(what, `node ${f.name} drawn twice`);
    got.add(f.id);
  }
  const want = c.want();
  for (const id of want)
    if (!got.has(id)) fail(what, `${fns.get(id).name} should be drawn and is not`);
  for (const id of got)
    if (!want.has(id)) fail(what, `${fns.get(id).name} is drawn and should not be`);
  // dot titles an edge fA->fB (its &#45; is '-' in the DOM)
  const wantEdges = edgesAmong(want), gotEdges = new Set(shown.edges);
  for (const e of wantEdges) if (!gotEdges.has(e)) fail(what, `edge ${e} is not drawn`);
  for (const e of gotEdges) if (!wantEdges.has(e)) fail(what, `edge ${e} is not a call`);
  if (shown.edges.length !== gotEdges.size) fail(what, 'an edge is drawn twice');
  if (c.maxWidth && !(shown.svg.w < c.maxWidth))
    fail(what, `${Math.round(shown.svg.w)} px wide, over the bound of ${c.maxWidth} px`);
  // (fullPage never returns on an SVG document: the viewport shows the top left corner)
  await page.setViewportSize({width: Math.min(Math.ceil(shown.svg.w), 1600),
                              height: Math.min(Math.ceil(shown.svg.h), 1200)});
  await page.screenshot({path: path.join(work, `${c.id}.png`)});
  if (errors.length) fail(what, `page errors: ${errors.join('; ')}`);
  await page.close();
  return `${got.size} nodes, ${gotEdges.size} edges, ${shown.pt} = ` +
         `${Math.round(shown.svg.w)} x ${Math.round(shown.svg.h)} px`;
}

const drawings = [
  {id: 'all', opts: [], want: () => new Set(fns.keys())},
  {id: `focus-${FOCUS}`, opts: ['--focus', FOCUS, '--min-share', String(MIN_SHARE)],
   want: focusedIds, maxWidth: FOCUS_MAX_PX},
];

const browser = await chromium.launch({
  executablePath: env('CHROMIUM'),
  // as root (CI) Chromium only starts without its sandbox; no GPU in a container
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
console.log(`1..${drawings.length}`);
let point = 0, notOk = 0;
try {
  for (const c of drawings) {
    const before = failures;
    let summary;
    try {
      summary = await checkDrawing(browser, c);
    } catch (e) {
      fail(`graph ${c.id}`, e.stack ?? String(e));
    }
    point++;
    if (failures === before) {
      console.log(`ok ${point} - graph ${c.id}: ${summary}`);
    } else {
      notOk++;
      console.log(`not ok ${point} - graph ${c.id}: ${failures - before} differences (see stderr)`);
    }
  }
} finally {
  await browser.close();
}
console.log(`# ${fns.size} functions; SVGs and screenshots in ${work}`);
process.exit(notOk ? 1 : 0);
