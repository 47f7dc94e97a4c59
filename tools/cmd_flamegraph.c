/* sledtrace flamegraph: a self-contained interactive SVG flame graph of the aggregated stacks.
 *
 * Same data as `sledtrace stack` (one streaming pass, memory grows with distinct stacks). Layout
 * as flamegraph.pl: root ("all") at the bottom, callees above their caller, siblings sorted by
 * name, widths proportional to the inclusive weight. An embedded script (no network) zooms on a
 * clicked frame, resets the zoom, and searches frame names by regular expression (prompt()).
 * --diff OLD (a differential flame graph, as flamegraph.pl's difference mode): the layout is this
 * trace's; each frame's colour is its self weight's change against the same stack, by name
 * (stackpaths.h), in OLD: white unchanged, red grew, blue shrank, depth relative to the largest
 * change. Stacks only in OLD have no frame (stack --diff lists them). */
#include "callstack.h"
#include "output.h"
#include "stackpaths.h"
#include "window.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SVG_W = 1200, PAD = 10, FRAME_H = 16, TOP = 44 };
/* Pixels per character of a label (12px monospace). Monospace fonts advance about 0.6 em, 7.2 px
 * (DejaVu Sans Mono, Chromium's monospace on Debian: 7.22 px): at 7 a long label ran a few pixels
 * past its frame into the next one. 7.5 keeps it inside; the script's lab() uses the same. */
#define CHAR_W 7.5

static void help(FILE *out)
{
    fputs("usage: sledtrace flamegraph TRACE -o OUT.svg [--by time|count] [--tid N]\n"
          "                            [--from TIME] [--to TIME] [--filter P]\n"
          "                            [--exclude P] [--max-depth N] [--min-duration TIME]\n"
          "                            [--syms FILE [--force-syms]]\n"
          "\n"
          "Write an interactive flame graph of the aggregated call stacks (see 'sledtrace\n"
          "stack') as a self-contained SVG: hover a frame for its name, weight and share,\n"
          "click to zoom on it, 'Reset zoom' to go back, 'Search' to highlight functions\n"
          "matching a regular expression. Open it in a web browser.\n"
          "\n"
          "  -o, --output FILE  the SVG file to write (required)\n"
          "  --by time|count    width: inclusive time (default) or number of calls\n"
          "  --from TIME, --to TIME\n"
          "                     only the time in this window (since the earliest thread\n"
          "                     start, as replay shows it; 10us, 2.5ms, 1s): calls crossing\n"
          "                     an edge count with their part inside it (summary on\n"
          "                     stderr: how many were clipped)\n"
          "  --filter P         only the calls of functions matching P and their callees\n"
          "                     (subtree); callers above a match stay as the frames below\n"
          "                     it, as wide as the matches. P: comma-separated\n"
          "                     [LIB:]GLOB, on names as shown (repeatable)\n"
          "  --exclude P        not the calls of functions matching P nor their subtree:\n"
          "                     their time is dropped (wins over --filter)\n"
          "  --max-depth N      at most N frames high: a deeper call's time counts in\n"
          "                     its ancestor at depth N-1 (top level: 0)\n"
          "  --min-duration TIME  not the calls shorter than TIME: their time counts in\n"
          "                     the caller shown (summary on stderr: calls shown)\n"
          "  --tid N            only thread N\n"
          "  --per-thread       a root per thread (its name and tid) above its stacks\n"
          "  --raw-times        times as measured, the tracer's own cost included\n"
          "                     (default: corrected, when the trace records that cost)\n"
          "  --syms FILE        symbols file (default: TRACE with .fdr replaced by .syms), or\n"
          "                     the traced binary: refused if its build id is not the one\n"
          "                     the trace's symbols file records\n"
          "  --force-syms       use a --syms binary even if its build id differs\n"
          "  --names MODE  C++ names: short (default: namespaces and name), full or mangled\n"
          "  --diff OLD         a differential flame graph: TRACE's stacks, each frame\n"
          "                     coloured by how much its self weight grew (red) or shrank\n"
          "                     (blue) against the same stack (by name) in the trace OLD;\n"
          "                     the numbers on hover. OLD is read with its own symbols file\n",
          out);
}

static void xml_esc(FILE *f, const char *s, size_t max)
{
    for (size_t i = 0; s[i] && i < max; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&apos;", f);
            break;
        default:
            fputc(c < 0x20 || c == 0x7f ? '?' : c, f);
        }
    }
}

/* Label fitting w pixels: name, name truncated with "..", or nothing. Characters are counted,
 * not bytes, as the script's lab() counts them (a UTF-8 name kept its load-time label only until
 * a zoom or 'Reset zoom' redrew it). */
static void label(FILE *f, const char *name, double w)
{
    double c = (w - 6) / CHAR_W;
    if (c < 3)
        return;
    size_t n = 0, len = strlen(name);
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)name[i] & 0xc0) != 0x80;
    if ((double)n <= c) {
        xml_esc(f, name, len);
        return;
    }
    /* the bytes of the first c - 2 characters */
    size_t keep = (size_t)c - 2, k = 0;
    for (size_t chars = 0; k < len; k++) {
        if (((unsigned char)name[k] & 0xc0) != 0x80 && chars++ == keep)
            break;
    }
    xml_esc(f, name, k);
    fputs("..", f);
}

static char **g_names;
static const struct cs_tree *g_tree;

static int cmp_child(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    uint32_t pa_ = g_tree->n[a].parent, pb_ = g_tree->n[b].parent;
    if (pa_ != pb_)
        return pa_ < pb_ ? -1 : 1;
    int c = strcmp(g_names[a], g_names[b]);
    return c ? c : (a < b ? -1 : a > b);
}

static const char script[] =
    "var PAD=10,FW=1180,fr=[].slice.call(document.querySelectorAll('g.f'));\n"
    "function num(g,k){return +g.getAttribute('data-'+k);}\n"
    "function lab(n,w){var c=Math.floor((w-6)/7.5),a=Array.from(n);if(c<3)return '';"
    "return a.length<=c?n:a.slice(0,c-2).join('')+'..';}\n"
    "function show(zx,zw,zd){var e=1e-9;fr.forEach(function(g){"
    "var x=num(g,'x'),w=num(g,'w'),d=num(g,'d'),nx,nw,vis;"
    "if(d<zd){vis=x<=zx+e&&x+w>=zx+zw-e;nx=0;nw=1;}"
    "else{vis=x>=zx-e&&x+w<=zx+zw+e;nx=(x-zx)/zw;nw=w/zw;}"
    "g.style.display=vis?'':'none';if(!vis)return;"
    "var r=g.getElementsByTagName('rect')[0],t=g.getElementsByTagName('text')[0],"
    "px=PAD+nx*FW,pw=nw*FW;r.setAttribute('x',px.toFixed(2));"
    "r.setAttribute('width',pw.toFixed(2));t.setAttribute('x',(px+3).toFixed(2));"
    "t.textContent=lab(g.getAttribute('data-n'),pw);});}\n"
    "fr.forEach(function(g){g.addEventListener('click',function(){"
    "show(num(g,'x'),num(g,'w'),num(g,'d'));"
    "document.getElementById('unzoom').style.opacity='1';});});\n"
    "document.getElementById('unzoom').addEventListener('click',function(){"
    "show(0,1,0);this.style.opacity='0.3';});\n"
    "document.getElementById('search').addEventListener('click',function(){"
    "var q=prompt('Highlight functions matching (regular expression, empty: clear):','');"
    "if(q===null)return;var re=null;"
    "if(q!==''){try{re=new RegExp(q);}catch(err){alert('bad regular expression');return;}}"
    "var m=[];fr.forEach(function(g){var r=g.getElementsByTagName('rect')[0],"
    "hit=re!==null&&re.test(g.getAttribute('data-n'));"
    "r.setAttribute('fill',hit?'rgb(230,0,230)':g.getAttribute('data-c'));"
    "if(hit)m.push([num(g,'x'),num(g,'w')]);});"
    "m.sort(function(a,b){return a[0]-b[0]||b[1]-a[1];});var end=-1,cov=0;"
    "m.forEach(function(a){if(a[0]>=end-1e-12){cov+=a[1];end=a[0]+a[1];}});"
    "document.getElementById('matched').textContent=re?"
    "'Matched: '+(100*cov).toFixed(2)+'%':'';});\n";

/* --diff: per node, the self weight of the same stack in the old trace and in the new one. */
struct fg_diff {
    const uint64_t *old, *new_;
    uint64_t maxabs; /* the largest |new - old| of any node: full colour */
    const char *old_path;
};

/* v to two decimals, halves away from zero, as the script's toFixed(2) rounds when it redraws:
 * printf rounds an exact tie (710.625) to even, and 'Reset zoom' then moved a frame by 0.01 px. */
static double half_up(double v)
{
    return floor(v * 100 + 0.5) / 100;
}

static int write_svg(FILE *f, const struct cs_tree *tr, char **names, const uint64_t *tot,
                     const double *x, const uint32_t *depth, const uint32_t *order, size_t nord,
                     uint32_t maxd, bool by_count, const struct fg_diff *df)
{
    int height = TOP + (int)(maxd + 1) * FRAME_H + PAD;
    double fw = SVG_W - 2 * PAD;
    fprintf(f,
            "<?xml version=\"1.0\" standalone=\"no\"?>\n"
            "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "xmlns=\"http://www.w3.org/2000/svg\">\n"
            "<style>text{font-family:monospace;font-size:12px;fill:#000}"
            "g.f{cursor:pointer}g.f:hover rect{stroke:#000;stroke-width:0.5}"
            "#unzoom,#search{cursor:pointer}</style>\n"
            "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f0\"/>\n"
            "<text x=\"%d\" y=\"20\" text-anchor=\"middle\" style=\"font-size:16px\">"
            "%s (%s)</text>\n"
            "<text id=\"unzoom\" x=\"%d\" y=\"20\" style=\"opacity:0.3\">Reset zoom</text>\n"
            "<text id=\"search\" x=\"%d\" y=\"20\" text-anchor=\"end\">Search</text>\n"
            "<text id=\"matched\" x=\"%d\" y=\"36\" text-anchor=\"end\"></text>\n",
            SVG_W, height, SVG_W, height, SVG_W, height, SVG_W / 2,
            df ? "Differential flame graph" : "Flame graph", by_count ? "calls" : "time", PAD,
            SVG_W - PAD, SVG_W - PAD);
    if (df) {
        fprintf(f, "<text x=\"%d\" y=\"36\">widths: this trace; colours: self %s against ", PAD,
                by_count ? "calls" : "time");
        const char *base = strrchr(df->old_path, '/'); /* the name: the line has 1200 px */
        xml_esc(f, base && base[1] ? base + 1 : df->old_path, SIZE_MAX);
        fputs(" (red: more, blue: less)</text>\n", f);
    }
    uint64_t total = tot[0];
    for (size_t k = 0; k < nord; k++) {
        uint32_t i = order[k];
        if (tot[i] == 0)
            continue;
        double fx = total ? x[i] / (double)total : 0,
               fwid = total ? (double)tot[i] / (double)total : 0;
        double px = half_up(PAD + fx * fw), pw = half_up(fwid * fw);
        int y = height - PAD - (int)(depth[i] + 1) * FRAME_H;
        uint32_t h = 2166136261u;
        for (const char *p = names[i]; *p; p++)
            h = (h ^ (unsigned char)*p) * 16777619u;
        unsigned cr = 205 + h % 51, cg = (h >> 8) % 231, cb = (h >> 16) % 56;
        char wb[48], db[160] = "";
        if (by_count)
            snprintf(wb, sizeof wb, "%" PRIu64 " call%s", tot[i], tot[i] == 1 ? "" : "s");
        else
            tool_fmt_ns(wb, sizeof wb, tot[i]);
        if (df && i) {
            /* white: unchanged; red (blue) as deep as the self weight grew (shrank), against
             * the largest change of any frame */
            uint64_t o = df->old[i], nw = df->new_[i], d = nw > o ? nw - o : o - nw;
            unsigned k = df->maxabs ? (unsigned)(200.0 * (double)d / (double)df->maxabs) : 0;
            cr = nw >= o ? 255 : 255 - k;
            cg = 255 - k;
            cb = nw > o ? 255 - k : 255;
            char a[32], b[32], c[32];
            tool_fmt_weight(a, sizeof a, o, by_count);
            tool_fmt_weight(b, sizeof b, nw, by_count);
            tool_fmt_weight(c, sizeof c, d, by_count);
            int len =
                snprintf(db, sizeof db, "; self %s -&gt; %s, %c%s", a, b, nw < o ? '-' : '+', c);
            if (o && len > 0 && (size_t)len < sizeof db)
                snprintf(db + len, sizeof db - (size_t)len, " (%+.1f%%)",
                         100.0 * ((double)nw - (double)o) / (double)o);
        } else if (df) {
            cr = cg = cb = 240;
        }
        fprintf(f,
                "<g class=\"f\" data-x=\"%.12g\" data-w=\"%.12g\" data-d=\"%" PRIu32
                "\" data-c=\"rgb(%u,%u,%u)\" data-n=\"",
                fx, fwid, depth[i], cr, cg, cb);
        xml_esc(f, names[i], SIZE_MAX);
        fputs("\"><title>", f);
        xml_esc(f, names[i], SIZE_MAX);
        fprintf(f,
                " (%s, %.2f%%%s)</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
                "rx=\"2\" fill=\"rgb(%u,%u,%u)\"/><text x=\"%.2f\" y=\"%d\">",
                wb, total ? 100.0 * (double)tot[i] / (double)total : 0.0, db, px, y, pw,
                FRAME_H - 1, cr, cg, cb, half_up(px + 3), y + FRAME_H - 4);
        label(f, names[i], pw);
        fputs("</text></g>\n", f);
    }
    (void)tr;
    if (total == 0)
        fprintf(f, "<text x=\"%d\" y=\"%d\">no closed calls in the trace</text>\n", PAD, TOP + 12);
    fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n", script);
    return 0;
}

int cmd_flamegraph(int argc, char **argv)
{
    int32_t tid = 0;
    bool have_tid = false, per_thread = false;
    const char *path = NULL, *syms_path = NULL, *out = NULL, *old_path = NULL;
    bool by_count = false;
    struct tool_window win = {0};
    if (tool_wants_help(argc, argv)) {
        help(stdout);
        return EXIT_OK;
    }
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int m;
        if ((m = tool_option(argc, argv, &i, "flamegraph", "--by", &v)) != 0) {
            if (m < 0 || cs_parse_by("flamegraph", v, &by_count) != 0)
                return EXIT_USAGE;
        } else if ((m = tool_option(argc, argv, &i, "flamegraph", "-o", &v)) != 0 ||
                   (m = tool_option(argc, argv, &i, "flamegraph", "--output", &v)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            out = v;
        } else if ((m = tool_option(argc, argv, &i, "flamegraph", "--diff", &v)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            old_path = v;
        } else if (strcmp(argv[i], "--per-thread") == 0) {
            per_thread = true;
        } else if ((m = tool_window_option(argc, argv, &i, "flamegraph", &win)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
        } else if ((m = tool_tid_option(argc, argv, &i, "flamegraph", &tid)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            have_tid = true;
        } else if (tool_trace_arg(argc, argv, &i, "flamegraph", &path, &syms_path) < 0) {
            return EXIT_USAGE;
        }
    }
    if (!out) {
        tool_err("flamegraph: -o OUT.svg is required (- for standard output)");
        return EXIT_USAGE;
    }
    if (old_path &&
        (have_tid || per_thread || tool_window_timed(&win) || tool_window_filtered(&win))) {
        tool_err("flamegraph: --diff compares whole traces: no --tid, --per-thread (thread ids "
                 "differ between runs), --from, --to or call filters");
        return EXIT_USAGE;
    }
    if (!tool_default_trace(&path, "flamegraph"))
        return EXIT_USAGE;
    struct sp_list old = {0};
    if (old_path && sp_load(old_path, NULL, by_count, &old) != EXIT_OK)
        return EXIT_BAD_TRACE;

    struct cs_tree tree = {0};
    struct callstack cs = {0};
    struct stf_syms *syms = NULL;
    uint64_t freq = 0;
    tree.per_thread = per_thread;
    cs.window = &win;
    uint64_t shown = 0;
    int status = tool_window_tree_load(path, syms_path, have_tid ? &tid : NULL, &tree, &cs, &syms,
                                       &freq, &shown);
    size_t nn = tree.nn;
    char **names = NULL;
    uint64_t *tot = NULL;
    double *x = NULL;
    uint32_t *depth = NULL, *order = NULL;
    uint64_t *dold = NULL, *dnew = NULL;
    struct fg_diff df = {.old_path = old_path};
    if (status == EXIT_OK) {
        names = cs_tree_names(&tree, syms);
        tot = calloc(nn, sizeof *tot);
        x = calloc(nn, sizeof *x);
        depth = calloc(nn, sizeof *depth);
        order = calloc(nn, sizeof *order);
        if (!names || !tot || !x || !depth || !order) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
        }
    }
    if (status == EXIT_OK && old_path) {
        dold = calloc(nn, sizeof *dold);
        dnew = calloc(nn, sizeof *dnew);
        status = dold && dnew ? EXIT_OK : EXIT_BAD_TRACE;
        for (size_t i = 1; status == EXIT_OK && i < nn; i++) {
            char *p = sp_path_of(&tree, names, (uint32_t)i);
            if (!p) {
                status = EXIT_BAD_TRACE;
                break;
            }
            dold[i] = sp_weight(&old, p);
            free(p);
            dnew[i] = cs_node_weight(&tree.n[i], by_count, freq);
        }
        if (status != EXIT_OK)
            tool_err("out of memory");
        df.old = dold;
        df.new_ = dnew;
    }
    if (status == EXIT_OK) {
        /* Parents are created before their children: index order is a topological order. */
        uint32_t maxd = 0;
        for (size_t i = nn; i-- > 1;) {
            const struct cs_node *n = &tree.n[i];
            tot[i] += cs_node_weight(n, by_count, freq);
            tot[n->parent] += tot[i];
        }
        for (size_t i = 1; dold && i < nn; i++) {
            /* full colour for the largest change of a frame that is drawn (weight > 0) */
            uint64_t d = dnew[i] > dold[i] ? dnew[i] - dold[i] : dold[i] - dnew[i];
            if (tot[i] && d > df.maxabs)
                df.maxabs = d;
        }
        for (size_t i = 0; i < nn; i++) {
            order[i] = (uint32_t)i;
            depth[i] = i ? depth[tree.n[i].parent] + 1 : 0;
            if (tot[i] && depth[i] > maxd)
                maxd = depth[i];
        }
        g_tree = &tree;
        g_names = names;
        if (nn > 1)
            qsort(order + 1, nn - 1, sizeof *order, cmp_child);
        /* Children start at their parent's left edge, in name order. */
        uint32_t cur_parent = UINT32_MAX;
        double off = 0;
        for (size_t k = 1; k < nn; k++) {
            uint32_t i = order[k], p = tree.n[i].parent;
            if (p != cur_parent) {
                cur_parent = p;
                off = x[p];
            }
            x[i] = off;
            off += (double)tot[i];
        }
        struct tool_out o;
        FILE *f = tool_out_open(&o, out);
        if (!f) {
            status = EXIT_BAD_TRACE;
        } else {
            write_svg(f, &tree, names, tot, x, depth, order, nn, maxd, by_count,
                      old_path ? &df : NULL);
            if (tool_out_close(&o, 1) != 0)
                status = EXIT_BAD_TRACE;
        }
        if (status == EXIT_OK)
            cs_summary(stderr, &cs, freq);
        if (status == EXIT_OK && tool_window_timed(&win))
            fprintf(stderr, "# window: calls clipped at its edges: %" PRIu64 "\n", cs.clipped);
        if (status == EXIT_OK)
            tool_window_note(stderr, "# ", &win, shown, cs.calls);
    }
    cs_names_free(names, nn);
    sp_list_free(&old);
    free(dold);
    free(dnew);
    free(tot);
    free(x);
    free(depth);
    free(order);
    cs_tree_free(&tree);
    cs_free(&cs);
    stf_syms_free(syms);
    return status;
}
