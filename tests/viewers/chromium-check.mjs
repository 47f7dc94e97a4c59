// The flame graph and the call graph as a person sees them in a web browser: each SVG is opened
// as a page (file:// URL) in headless Chromium (Debian's chromium, $CHROMIUM, driven over the
// DevTools protocol by npm playwright-core, pinned by package-lock.json: it launches that binary
// and downloads nothing), and what the page then holds is read back from the live DOM and
// compared with the tool's own text output for the same trace.
//
// Flame graph (`sledtrace flamegraph`), against `sledtrace stack --format folded` with the same
// options: every frame (its stack found from its row and left edge, data-d and data-x: its
// parent is the frame one row down starting nearest before it) is a stack prefix of the folded
// lines and every prefix has its frame, once; each rectangle's x and width, as Chromium lays it
// out, are its weight's share of the total (within the SVG's rounding to 0.01 px), its row is its
// depth; its <title> (the hover text) is "NAME (WEIGHT, SHARE%)" with the weight as the tool
// prints it; its visible label is the name, cut with "..", or nothing when the frame is too
// narrow, and a label is drawn inside its rectangle, on top. Hovering outlines the frame. Then,
// with real mouse clicks and a real prompt() answered: clicking a frame zooms on it (it and its
// callers span the full width, its callees are rescaled, every other frame is hidden), 'Reset
// zoom' brings back exactly what the page showed after load, 'Search' highlights the frames
// matching a regular expression and shows the share of the total they cover, an empty answer
// clears it, and a bad one is refused with an alert.
//
// Call graph (`sledtrace graph`, laid out by Graphviz's dot, $DOT, as SVG): every node shows the
// lines of its DOT label (name, calls, total) and every edge its label, between the nodes the DOT
// names, each text inside its node's box; plus counts the traced programs are known to make.
//
// A screenshot of each page, checked to be a PNG of the page's size, stays in WORKDIR for a
// person to look at (a flame graph's with its search's highlights). Traces: the checked-in real
// ones ($SLEDTRACE_DATA) and the crafted one $FLAME_TRACE writes. Prints TAP, one test point per
// page, each difference on stderr; exits 1 after any.
// Usage: node chromium-check.mjs WORKDIR
//   (env: VIEWERS_MODULES, SLEDTRACE_BIN, SLEDTRACE_DATA, FLAME_TRACE, CHROMIUM, DOT)
import {execFileSync} from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

const work = process.argv[2];
const env = (name) => {
  const v = process.env[name];
  if (!v) {
    console.error(`chromium-check: ${name} not set`);
    process.exit(2);
  }
  return v;
};
if (!work) {
  console.error('usage: node chromium-check.mjs WORKDIR');
  process.exit(2);
}
const modules = env('VIEWERS_MODULES');
const sledtrace = env('SLEDTRACE_BIN');
const data = env('SLEDTRACE_DATA');
const dotBin = env('DOT');
const {chromium} = await import(
  pathToFileURL(path.join(modules, 'playwright-core', 'index.mjs')).href);

fs.rmSync(work, {recursive: true, force: true});
fs.mkdirSync(work, {recursive: true});
const crafted = path.join(work, 'crafted.fdr');
execFileSync(env('FLAME_TRACE'), [crafted]);

// The SVG's layout (tools/cmd_flamegraph.c).
const SVG_W = 1200, PAD = 10, FW = SVG_W - 2 * PAD, FRAME_H = 16;
const HIGHLIGHT = 'rgb(230,0,230)';

let failures = 0;
function fail(what, msg) {
  failures++;
  if (failures <= 40) console.error(`FAIL ${what}: ${msg}`);
  else if (failures === 41) console.error('(more failures not shown)');
}
const near = (a, b, tol) => Math.abs(a - b) <= tol;

function run(prog, args) {
  return execFileSync(prog, args, {encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe']});
}

// tool_fmt_ns (tools/common.c): exact below 1 ms, printf's %.3f / %.6f above; for those, the
// value must be within half a unit of the last digit.
function fmtNsOk(s, ns) {
  if (ns < 1000) return s === `${ns}ns`;
  if (ns < 1e6) return s === `${Math.floor(ns / 1000)}.${String(ns % 1000).padStart(3, '0')}us`;
  const m = /^(\d+\.\d+)(ms|s)$/.exec(s);
  if (!m) return false;
  const [unit, digits] = ns < 1e9 ? [1e6, 3] : [1e9, 6];
  return m[2] === (unit === 1e6 ? 'ms' : 's') && m[1].split('.')[1].length === digits &&
         Math.abs(Number(m[1]) * unit - ns) <= unit * 0.5 * 10 ** -digits * (1 + 1e-9);
}

// The label the SVG writes at load (label() in cmd_flamegraph.c): as many characters (code
// points) as (w - 6) / 7.5 allows, cut with "..", none under 3.
function writtenLabel(name, w) {
  const c = (w - 6) / 7.5;
  if (c < 3) return '';
  const chars = Array.from(name);
  return chars.length <= c ? name : chars.slice(0, Math.floor(c) - 2).join('') + '..';
}

// The expected frames: the folded stacks' prefixes under "all", inclusive weights, laid out as
// the flame graph does (children from their parent's left edge, sorted by name bytes).
function expectedFrames(folded) {
  const root = {name: 'all', path: 'all', w: 0, kids: new Map(), parent: null};
  for (const line of folded.split('\n')) {
    if (!line) continue;
    const sp = line.lastIndexOf(' ');
    const w = Number(line.slice(sp + 1));
    root.w += w;
    let n = root;
    for (const name of line.slice(0, sp).split(';')) {
      let k = n.kids.get(name);
      if (!k) {
        k = {name, path: `${n.path};${name}`, w: 0, kids: new Map(), parent: n};
        n.kids.set(name, k);
      }
      k.w += w;
      n = k;
    }
  }
  const all = new Map();
  const lay = (n, x, d) => {
    n.x = x;
    n.d = d;
    if (n.w > 0) all.set(n.path, n);
    let off = x;
    const kids = [...n.kids.values()].sort((a, b) => Buffer.compare(Buffer.from(a.name),
                                                                    Buffer.from(b.name)));
    for (const k of kids) {
      lay(k, off, d + 1);
      off += k.w;
    }
  };
  lay(root, 0, 0);
  return {root, all, total: root.w};
}

// What the page shows of every frame, in document order.
function readFrames(page) {
  return page.evaluate(() => [...document.querySelectorAll('g.f')].map((g) => {
    const r = g.querySelector('rect'), t = g.querySelector('text');
    const shown = getComputedStyle(g).display !== 'none';
    const rb = r.getBBox(), tb = t.getBBox();
    let onTop = null;
    if (shown && t.textContent) {
      const box = t.getBoundingClientRect();
      const hit = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
      onTop = hit !== null && g.contains(hit);
    }
    return {
      n: g.getAttribute('data-n'), x: Number(g.getAttribute('data-x')),
      w: Number(g.getAttribute('data-w')), d: Number(g.getAttribute('data-d')),
      c: g.getAttribute('data-c'), title: g.querySelector('title').textContent,
      label: t.textContent, shown, fill: getComputedStyle(r).fill.replace(/ /g, ''),
      rect: {x: rb.x, y: rb.y, w: rb.width, h: rb.height},
      text: {x: tb.x, y: tb.y, w: tb.width, h: tb.height}, onTop,
    };
  }));
}

// Each frame's stack, from where it is drawn: its parent is the frame one row down whose left
// edge is the nearest at or before its own.
function stacks(frames) {
  const byDepth = [];
  frames.forEach((f, i) => (byDepth[f.d] ??= []).push(i));
  const paths = new Array(frames.length);
  for (const [d, idx] of byDepth.entries()) {
    for (const i of idx ?? []) {
      const name = frames[i].n;
      if (d === 0) {
        paths[i] = name;
        continue;
      }
      let best = -1;
      for (const j of byDepth[d - 1] ?? []) {
        if (frames[j].x <= frames[i].x + 1e-12 && (best < 0 || frames[j].x > frames[best].x))
          best = j;
      }
      paths[i] = best < 0 ? `?;${name}` : `${paths[best]};${name}`;
    }
  }
  return paths;
}

const TOL = 0.006; // rect x and width are written to 0.01 px; getBBox() gives floats

function checkLabelDrawn(what, f) {
  if (!f.label) return;
  const r = f.rect, t = f.text;
  if (t.x < r.x - 0.01 || t.x + t.w > r.x + r.w + 0.01)
    fail(what, `label '${f.label}' drawn over [${t.x}, ${t.x + t.w}] px, past its frame's ` +
         `[${r.x}, ${r.x + r.w}]`);
  if (t.y < r.y - 1 || t.y + t.h > r.y + r.h + 1)
    fail(what, `label '${f.label}' drawn at y [${t.y}, ${t.y + t.h}], frame ` +
         `[${r.y}, ${r.y + r.h}]`);
  if (f.onTop !== true) fail(what, `label '${f.label}' is covered by something else`);
}

// A label shown after a zoom: the name, or a cut of it with "..", none only when narrow.
function checkLabelShape(what, f) {
  const name = f.n;
  if (f.label === '') {
    if (f.rect.w >= 6 + 3 * 7.5) fail(what, `no label on a frame ${f.rect.w} px wide`);
  } else if (f.label !== name &&
             !(f.label.endsWith('..') && name.startsWith(f.label.slice(0, -2)))) {
    fail(what, `label '${f.label}' is neither the name nor a cut of it`);
  }
  checkLabelDrawn(what, f);
}

async function checkFlame(browser, c) {
  const svg = path.join(work, `${c.id}.svg`);
  run(sledtrace, ['flamegraph', c.trace, '-o', svg, ...c.opts, ...(c.diff ? ['--diff', c.diff] : [])]);
  const exp = expectedFrames(run(sledtrace, ['stack', c.trace, '--format', 'folded', ...c.opts]));
  // --diff: each stack's self weight in the old trace and in this one, from stack --diff
  const diff = new Map();
  if (c.diff) {
    const folded = run(sledtrace, ['stack', c.trace, '--format', 'folded', '--diff', c.diff,
                                   ...c.opts]);
    for (const line of folded.split('\n')) {
      const m = /^(.*) (\d+) (\d+)$/s.exec(line);
      if (m) diff.set(`all;${m[1]}`, {o: Number(m[2]), n: Number(m[3])});
    }
  }
  const changeOf = (p) => diff.get(p) ?? {o: 0, n: 0};
  let maxabs = 0;
  for (const p of exp.all.keys()) {
    const {o, n} = changeOf(p);
    if (p !== 'all') maxabs = Math.max(maxabs, Math.abs(n - o));
  }
  const fmtW = (s, w) => c.byCount ? s === String(w) : fmtNsOk(s, w);
  const height = Number(/<svg [^>]*height="(\d+)"/.exec(fs.readFileSync(svg, 'utf8'))[1]);
  const page = await browser.newPage({viewport: {width: SVG_W, height}});
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  await page.goto(pathToFileURL(svg).href, {waitUntil: 'load'});
  const what = `flame ${c.id}`;
  const total = exp.total;

  // After load: every frame where and as it should be.
  const loaded = await readFrames(page);
  const paths = stacks(loaded);
  const seen = new Set();
  loaded.forEach((f, i) => {
    const p = paths[i], e = exp.all.get(p), at = `${what} ${p}`;
    if (!e) return fail(what, `a frame for '${p}', which no folded stack starts with`);
    if (seen.has(p)) return fail(what, `two frames for '${p}'`);
    seen.add(p);
    if (!f.shown) fail(at, 'hidden after load');
    if (f.d !== e.d) fail(at, `data-d ${f.d}, depth ${e.d}`);
    if (!near(f.x * total, e.x, total * 1e-11) || !near(f.w * total, e.w, total * 1e-11))
      fail(at, `data-x/-w ${f.x}/${f.w}, the weights say ${e.x / total}/${e.w / total}`);
    const x = PAD + (e.x / total) * FW, w = (e.w / total) * FW;
    if (!near(f.rect.x, x, TOL) || !near(f.rect.w, w, TOL))
      fail(at, `drawn at x ${f.rect.x} width ${f.rect.w} px; weight ${e.w} of ${total} ` +
           `puts it at ${x.toFixed(3)} width ${w.toFixed(3)}`);
    const y = height - PAD - (e.d + 1) * FRAME_H;
    if (f.rect.y !== y || f.rect.h !== FRAME_H - 1)
      fail(at, `row y ${f.rect.y} height ${f.rect.h}, depth ${e.d} is y ${y} height 15`);
    const m = /^(.*) \(([^(),]*), (\d+\.\d\d)%(?:; self (\S+) -> (\S+), ([+-])(\S+?)(?: \(([+-]\d+\.\d)%\))?)?\)$/s
                .exec(f.title);
    if (!m) return fail(at, `title '${f.title}' is not 'NAME (WEIGHT, SHARE%)'`);
    if (c.diff && p === 'all') {
      if (m[4] !== undefined || f.c !== 'rgb(240,240,240)')
        fail(at, `the root is ${f.c} with '${f.title}': grey, no change`);
    } else if (c.diff) {
      // colour: white unchanged, red grew, blue shrank, as deep as the change against the
      // largest change of a frame; hover: both self weights, the change, the relative change
      const {o, n} = changeOf(p), d = Math.abs(n - o);
      const k = maxabs ? Math.floor((200 * d) / maxabs) : 0;
      const want = `rgb(${n >= o ? 255 : 255 - k},${255 - k},${n > o ? 255 - k : 255})`;
      if (f.c !== want) fail(at, `coloured ${f.c}; self ${o} -> ${n} of largest change ${maxabs} is ${want}`);
      if (m[4] === undefined || !fmtW(m[4], o) || !fmtW(m[5], n) || m[6] !== (n < o ? '-' : '+') ||
          !fmtW(m[7], d))
        fail(at, `title '${f.title}' for self ${o} -> ${n}`);
      else if ((m[8] !== undefined) !== (o > 0) ||
               (o > 0 && !near(Number(m[8]), (100 * (n - o)) / o, 0.05 + 1e-9)))
        fail(at, `title '${f.title}': relative change of ${o} -> ${n}`);
    } else if (m[4] !== undefined) {
      fail(at, `title '${f.title}' has a change without --diff`);
    }
    if (m[1] !== e.name || f.n !== e.name)
      fail(at, `title names '${m[1]}', data-n '${f.n}', the stack '${e.name}'`);
    const weightOk = c.byCount ? m[2] === `${e.w} call${e.w === 1 ? '' : 's'}`
                               : fmtNsOk(m[2], e.w);
    if (!weightOk) fail(at, `title weight '${m[2]}', folded weight ${e.w}`);
    if (!near(Number(m[3]), (100 * e.w) / total, 0.005 + 1e-9))
      fail(at, `title share ${m[3]}%, ${e.w} of ${total} is ${(100 * e.w) / total}%`);
    const want = writtenLabel(e.name, w);
    if (f.label !== want) fail(at, `label '${f.label}', want '${want}' at ${w.toFixed(2)} px`);
    checkLabelDrawn(at, f);
    if (f.fill !== f.c.replace(/ /g, '')) fail(at, `filled ${f.fill}, data-c ${f.c}`);
  });
  for (const p of exp.all.keys()) if (!seen.has(p)) fail(what, `no frame for stack '${p}'`);
  const byPath = new Map(paths.map((p, i) => [p, i]));

  // Hover: the frame under the mouse is outlined.
  const deep = [...exp.all.values()].filter((e) => e.w / total * FW >= 4 && e.d > 0)
                 .sort((a, b) => b.d - a.d || b.w - a.w)[0] ?? exp.root;
  const hx = PAD + ((deep.x + deep.w / 2) / total) * FW;
  const hy = height - PAD - (deep.d + 1) * FRAME_H + 2;
  await page.mouse.move(hx, hy);
  const stroke = await page.evaluate((i) => getComputedStyle(
    document.querySelectorAll('g.f')[i].querySelector('rect')).stroke, byPath.get(deep.path));
  if (stroke.replace(/ /g, '') !== 'rgb(0,0,0)')
    fail(what, `hovering ${deep.path} leaves its outline ${stroke}`);

  // Zoom: click the frame with the most callees below it (then the widest), not "all".
  const size = (e) => 1 + [...e.kids.values()].reduce((s, k) => s + (k.w > 0 ? size(k) : 0), 0);
  const z = c.zoom ? exp.all.get(c.zoom)
                   : [...exp.all.values()].filter((e) => e.d > 0 && e.w / total * FW >= 4)
                       .sort((a, b) => size(b) - size(a) || b.w - a.w)[0];
  let zoomed = 'nothing';
  if (z) {
    zoomed = z.path;
    await page.mouse.click(PAD + ((z.x + z.w / 2) / total) * FW,
                           height - PAD - (z.d + 1) * FRAME_H + FRAME_H / 2);
    const after = await readFrames(page);
    after.forEach((f, i) => {
      const p = paths[i], e = exp.all.get(p), at = `${what} zoomed on ${z.path}: ${p}`;
      if (!e) return;
      const above = p === z.path || z.path.startsWith(`${p};`), below = p.startsWith(`${z.path};`);
      if (!above && !below) {
        if (f.shown) fail(at, 'still shown');
        return;
      }
      if (!f.shown) return fail(at, 'hidden');
      const x = above ? PAD : PAD + ((e.x - z.x) / z.w) * FW, w = above ? FW : (e.w / z.w) * FW;
      if (!near(f.rect.x, x, TOL) || !near(f.rect.w, w, TOL))
        fail(at, `drawn at x ${f.rect.x} width ${f.rect.w}, want ${x.toFixed(3)} ${w.toFixed(3)}`);
      checkLabelShape(at, f);
    });
    const opacity = await page.evaluate(() =>
      getComputedStyle(document.getElementById('unzoom')).opacity);
    if (opacity !== '1') fail(what, `'Reset zoom' opacity ${opacity} while zoomed`);
    // Reset zoom: as after load.
    await clickText(page, 'unzoom');
    const reset = await readFrames(page);
    reset.forEach((f, i) => {
      const g = loaded[i], at = `${what} after 'Reset zoom': ${paths[i]}`;
      if (f.shown !== g.shown || !near(f.rect.x, g.rect.x, 0.0051) ||
          !near(f.rect.w, g.rect.w, 0.0051) || f.label !== g.label)
        fail(at, `x ${f.rect.x} width ${f.rect.w} label '${f.label}'; after load: ` +
             `x ${g.rect.x} width ${g.rect.w} label '${g.label}'`);
    });
  }

  // Search, answered as a person answers prompt(); the frames whose name matches are
  // highlighted, the share of the total under them (outermost matches) is shown.
  const re = new RegExp(c.search);
  const dialog = await search(page, c.search);
  if (dialog.type !== 'prompt') fail(what, `'Search' opened a ${dialog.type}, not a prompt`);
  let cov = 0;
  for (const e of exp.all.values()) {
    let a = e.parent, under = false;
    for (; a; a = a.parent) under ||= re.test(a.name);
    if (re.test(e.name) && !under) cov += e.w;
  }
  const matched = await page.textContent('#matched');
  const mm = /^Matched: (\d+\.\d\d)%$/.exec(matched);
  if (!mm || !near(Number(mm[1]), (100 * cov) / total, 0.005 + 1e-9))
    fail(what, `search /${c.search}/ shows '${matched}', the stacks give ${(100 * cov) / total}%`);
  const hl = await readFrames(page);
  hl.forEach((f, i) => {
    const want = re.test(f.n) ? HIGHLIGHT : f.c.replace(/ /g, '');
    if (f.fill !== want) fail(`${what} search /${c.search}/ ${paths[i]}`, `filled ${f.fill}`);
  });
  await page.screenshot({path: path.join(work, `${c.id}.png`)});
  checkPng(what, path.join(work, `${c.id}.png`), SVG_W, height);
  // An empty answer clears the search.
  await search(page, '');
  const cleared = await readFrames(page);
  if ((await page.textContent('#matched')) !== '' ||
      cleared.some((f) => f.fill !== f.c.replace(/ /g, '')))
    fail(what, 'an empty search leaves highlights or the matched share');
  // A bad expression is refused.
  const bad = await search(page, '(');
  const alerted = bad.next;
  if (!alerted || alerted.type !== 'alert' || !/bad regular expression/.test(alerted.message))
    fail(what, `a bad regular expression gives ${JSON.stringify(alerted)}`);
  if (errors.length) fail(what, `page errors: ${errors.join('; ')}`);
  await page.close();
  return `${loaded.length} frames; zoomed on ${zoomed}; ` +
         `/${c.search}/ matched ${matched.replace('Matched: ', '')}`;
}

async function clickText(page, id) {
  const b = await page.evaluate((i) => {
    const r = document.getElementById(i).getBoundingClientRect();
    return {x: r.x + r.width / 2, y: r.y + r.height / 2};
  }, id);
  await page.mouse.click(b.x, b.y);
}

// Clicks 'Search' and answers its prompt with answer; returns the prompt (and the dialog that
// follows it, if any, accepted).
async function search(page, answer) {
  const seen = [];
  const handler = async (d) => {
    seen.push({type: d.type(), message: d.message()});
    if (d.type() === 'prompt') await d.accept(answer);
    else await d.accept();
  };
  page.on('dialog', handler);
  await clickText(page, 'search');
  await page.evaluate(() => new Promise((r) => setTimeout(r, 0)));
  page.off('dialog', handler);
  return {...(seen[0] ?? {type: 'none'}), next: seen[1]};
}

function checkPng(what, file, width, height) {
  const b = fs.readFileSync(file);
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (b.length < 24 || !b.subarray(0, 8).equals(sig) || b.toString('latin1', 12, 16) !== 'IHDR')
    return fail(what, `${file} is not a PNG`);
  const w = b.readUInt32BE(16), h = b.readUInt32BE(20);
  if (w !== width || h !== height)
    fail(what, `screenshot ${w}x${h}, the page is ${width}x${height}`);
}

// DOT's double-quoted label as Graphviz shows it: lines at \n, \\ and \" for \ and ".
function dotLines(s) {
  return s.replace(/\\(.)/g, (_, ch) => (ch === 'n' ? '\n' : ch)).split('\n');
}

async function checkGraph(browser, c) {
  const what = `graph ${c.id}`;
  const dot = run(sledtrace, ['graph', c.trace]);
  const nodes = new Map(), edges = new Map();
  for (const line of dot.split('\n')) {
    let m = /^ {2}(f\d+) \[label="((?:[^"\\]|\\.)*)"\];$/.exec(line);
    if (m) nodes.set(m[1], dotLines(m[2]));
    m = /^ {2}(f\d+) -> (f\d+) \[label="((?:[^"\\]|\\.)*)"\];$/.exec(line);
    if (m) edges.set(`${m[1]}->${m[2]}`, dotLines(m[3]));
  }
  if (!nodes.size) return fail(what, `no nodes in the DOT:\n${dot}`);
  const svg = path.join(work, `${c.id}-graph.svg`);
  fs.writeFileSync(svg, execFileSync(dotBin, ['-Tsvg'], {input: dot}));
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(pathToFileURL(svg).href, {waitUntil: 'load'});
  const shown = await page.evaluate(() => {
    const read = (cls) => [...document.querySelectorAll(`g.${cls}`)].map((g) => {
      const shape = g.querySelector('polygon, ellipse, path');
      const sb = shape.getBoundingClientRect();
      return {
        title: g.querySelector('title').textContent,
        lines: [...g.querySelectorAll('text')].map((t) => t.textContent),
        inside: [...g.querySelectorAll('text')].every((t) => {
          const b = t.getBoundingClientRect();
          return b.width > 0 && b.left >= sb.left && b.right <= sb.right && b.top >= sb.top &&
                 b.bottom <= sb.bottom;
        }),
      };
    });
    const svg = document.querySelector('svg').getBoundingClientRect();
    return {nodes: read('node'), edges: read('edge'), w: Math.ceil(svg.width),
            h: Math.ceil(svg.height)};
  });
  const cmp = (kind, want, got, checkInside) => {
    const seen = new Set();
    for (const g of got) {
      const lines = want.get(g.title);
      if (!lines) {
        fail(what, `${kind} '${g.title}' on the page is not in the DOT`);
        continue;
      }
      seen.add(g.title);
      if (JSON.stringify(g.lines) !== JSON.stringify(lines))
        fail(what, `${kind} ${g.title} shows ${JSON.stringify(g.lines)}, the DOT says ` +
             `${JSON.stringify(lines)}`);
      if (checkInside && !g.inside) fail(what, `${kind} ${g.title}: text outside its box`);
    }
    for (const k of want.keys()) if (!seen.has(k)) fail(what, `${kind} ${k} is not on the page`);
  };
  cmp('node', nodes, shown.nodes, true);
  cmp('edge', edges, shown.edges, false);
  const byName = new Map(shown.nodes.map((n) => [n.lines[0], n.lines]));
  for (const [name, calls] of Object.entries(c.calls)) {
    const lines = byName.get(name);
    if (!lines || lines[1] !== `calls: ${calls}`)
      fail(what, `node ${name} shows ${JSON.stringify(lines)}; it was called ${calls} times`);
  }
  // (fullPage never returns on an SVG document: the viewport is made the drawing's size)
  const vw = Math.min(shown.w, 4000), vh = Math.min(shown.h, 4000);
  await page.setViewportSize({width: vw, height: vh});
  const png = path.join(work, `${c.id}-graph.png`);
  await page.screenshot({path: png});
  checkPng(what, png, vw, vh);
  if (errors.length) fail(what, `page errors: ${errors.join('; ')}`);
  await page.close();
  return `${shown.nodes.length} nodes, ${shown.edges.length} edges`;
}

const mt = path.join(data, 'real-mt.fdr');
const flames = [
  {id: 'real-mt', trace: mt, opts: [], search: '^fib$', zoom: 'all;worker'},
  {id: 'real-mt-count', trace: mt, opts: ['--by', 'count'], byCount: true,
   search: 'status|fib'},
  {id: 'real-mt-per-thread', trace: mt, opts: ['--per-thread'], search: 'thread'},
  {id: 'real-events', trace: path.join(data, 'real-events.fdr'), opts: [], search: 'deep'},
  {id: 'real-lossy', trace: path.join(data, 'real-lossy.fdr'), opts: [], search: 'tick'},
  {id: 'crafted', trace: crafted, opts: [], search: 'ü|rec|&',
   zoom: 'all;main;compute_the_checksum_of_every_block_in_the_input_buffer_twice'},
  {id: 'crafted-count', trace: crafted, opts: ['--by', 'count'], byCount: true,
   search: '^leaf$'},
  // differential: real-mt's main grew against real-events', its workers are new; the other
  // way round main shrank (blue), by count
  {id: 'diff', trace: mt, diff: path.join(data, 'real-events.fdr'), opts: [], search: 'fib'},
  {id: 'diff-count', trace: path.join(data, 'real-events.fdr'), diff: mt,
   opts: ['--by', 'count'], byCount: true, search: 'main'},
];
const graphs = [
  // tests/format/test_golden.c: fib_mt makes 2 x 25 fib calls from its 2 workers.
  {id: 'real-mt', trace: mt, calls: {main: 1, worker: 2, fib: 50}},
  {id: 'real-events', trace: path.join(data, 'real-events.fdr'), calls: {main: 1}},
  {id: 'crafted', trace: crafted,
   calls: {main: 1, leaf: 13, rec: 5, '#9': 1, 'cmp<a&b>"q"\\\\x': 1, worker: 1}},
];

const browser = await chromium.launch({
  executablePath: env('CHROMIUM'),
  // as root (CI) Chromium only starts without its sandbox; no GPU in a container
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const version = browser.version();
// TAP (meson's protocol 'tap'): one test point per page; the differences go to stderr.
console.log(`1..${flames.length + graphs.length}`);
let point = 0, notOk = 0;
async function step(what, check) {
  const before = failures;
  let summary;
  try {
    summary = await check();
  } catch (e) {
    fail(what, e.stack ?? String(e));
  }
  point++;
  if (failures === before) {
    console.log(`ok ${point} - ${what}: ${summary}`);
  } else {
    notOk++;
    console.log(`not ok ${point} - ${what}: ${failures - before} differences (see stderr)`);
  }
}
try {
  for (const c of flames) await step(`flame ${c.id}`, () => checkFlame(browser, c));
  for (const c of graphs) await step(`graph ${c.id}`, () => checkGraph(browser, c));
} finally {
  await browser.close();
}
console.log(`# Chromium ${version}; pages and screenshots in ${work}`);
process.exit(notOk ? 1 : 0);
