/* Hostile inputs to the built `sledtrace` ($SLEDTRACE_BIN): sidecars with malformed lines and
 * ids named twice (skipped with warnings, the rest still named), names full of terminal
 * control bytes, from a sidecar, a binary ($HOSTILE_NAMES_BIN) or a trace file's name (escaped
 * in every output), and call stacks deep enough to make indented output quadratic (replay caps
 * the indentation). */
#include "toolrun.h"
#include "tracegen.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Functions 1..4 called in turn at top level, one thread; 1 tick = 1 ns. */
static char *four_calls_trace(const char *syms_text, size_t syms_len)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 7, 7, 0, 100);
    for (uint32_t id = 1; id <= 4; id++) {
        tg_func(&g, id, STF_ENTER, 1000 * id);
        tg_func(&g, id, STF_EXIT, 1000 * id + 10 * id);
    }
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    tg_free(&g);
    char *s = stf_syms_path_for(p);
    FILE *f = fopen(s, "w");
    cr_assert(f);
    cr_assert_eq(fwrite(syms_text, 1, syms_len, f), syms_len);
    fclose(f);
    free(s);
    return p;
}

static struct tr_out account_csv(const char *p)
{
    const char *argv[] = {tr_bin(), "account", p, "--format", "csv", "--sort", "id", NULL};
    return tr_run(argv);
}

/* stderr of account --format csv: the warnings want, then only its summary (three lines: the
 * counters, what share is of, and what the times are). */
static void expect_warnings(const char *err, const char *want)
{
    size_t n = strlen(want);
    cr_assert(strncmp(err, want, n) == 0, "stderr:\n%s\nwanted first:\n%s", err, want);
    cr_assert(strncmp(err + n, "# functions: 4, calls: 4,", 25) == 0, "%s", err);
    const char *share = strchr(err + n, '\n') + 1;
    cr_assert(strncmp(share, "# share: ", 9) == 0, "%s", err);
    const char *times = strchr(share, '\n') + 1;
    cr_assert(strncmp(times, "# times: as measured; ", 22) == 0, "%s", err);
    cr_assert_null(strchr(times, '\n')[1] ? err : NULL, "more after the summary: %s", err);
}

/* One malformed line among good ones: the other names resolve, the skipped line's id shows as
 * #id, and the warning names the sidecar and the exact line. */
Test(hostile, malformed_sidecar_line_is_skipped)
{
    static const char syms[] = "sledtrace-syms\t1\n"
                               "o\t0\t0x0\t/bin/prog\n"
                               "f\t0\t1\t0x1000\tone\n"
                               "f\t0\t2\t0x11x0\ttwo\n"
                               "f\t0\t3\t0x1200\tthree\n"
                               "f\t0\t4\t0x1300\tfour\n";
    char *p = four_calls_trace(syms, sizeof syms - 1);
    struct tr_out r = account_csv(p);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o,
        "function,id,count,total_ns,share_pct,self_ns,mean_ns,selfcall_ns,min_ns,median_ns,p90_ns,"
        "p99_ns,max_ns,unfinished\n"
        "one,1,1,10,0.33,10,10,10,10,10,10,10,10,0\n"
        "#2,2,1,20,0.66,20,20,20,20,20,20,20,20,0\n"
        "three,3,1,30,0.99,30,30,30,30,30,30,30,30,0\n"
        "four,4,1,40,1.32,40,40,40,40,40,40,40,40,0\n");
    char *s = stf_syms_path_for(p);
    char want[512];
    snprintf(want, sizeof want,
             "sledtrace: warning: %s:4: bad address (expected 0x hex), line skipped\n", s);
    expect_warnings(r.e, want);
    free(s);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* A function id named twice is ambiguous: #id (not the first name), with a warning. */
Test(hostile, duplicate_function_id_is_unnamed)
{
    static const char syms[] = "sledtrace-syms\t1\n"
                               "f\t0\t1\t0x1000\tone\n"
                               "f\t0\t3\t0x1200\tthree\n"
                               "f\t0\t2\t0x1100\ttwo\n"
                               "f\t0\t3\t0x1300\tother\n";
    char *p = four_calls_trace(syms, sizeof syms - 1);
    const char *argv[] = {tr_bin(), "replay", p, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o,
                     "7        0.000000900       10ns  one\n"
                     "7        0.000001900       20ns  two\n"
                     "7        0.000002900       30ns  #3\n"
                     "7        0.000003900       40ns  #4\n"
                     "# shown: 4 of 4 calls, stack repairs: 0, unmatched exits: 0, "
                     "unfinished frames: 0\n"
                     "# times: as measured; this trace records no tracer cost (compiler-rt's, or "
                     "an older sledtrace's), so each call's figures include the tracer's own\n");
    char *s = stf_syms_path_for(p);
    char want[512];
    snprintf(want, sizeof want,
             "sledtrace: warning: %s:5: function 3 of object 0 named twice, it is left "
             "unnamed\n",
             s);
    cr_assert_str_eq(r.e, want);
    free(s);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* Many bad lines: the first 10 warnings, then a count; the good line still names its id. */
Test(hostile, sidecar_warnings_are_capped)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    cr_assert(m);
    fputs("sledtrace-syms\t1\n", m);
    for (int i = 0; i < 13; i++)
        fputs("f\t0\t2\n", m);
    fputs("f\t0\t1\t0x1000\tone\n", m);
    fclose(m);
    char *p = four_calls_trace(text, len);
    free(text);
    struct tr_out r = account_csv(p);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(strstr(r.o, "\none,1,1,"), "%s", r.o);
    cr_assert(strstr(r.o, "\n#2,2,1,"), "%s", r.o);
    char *s = stf_syms_path_for(p);
    char want[4096];
    size_t n = 0;
    for (int line = 2; line <= 11; line++)
        n += (size_t)snprintf(want + n, sizeof want - n,
                              "sledtrace: warning: %s:%d: function line needs 5 fields, line "
                              "skipped\n",
                              s, line);
    snprintf(want + n, sizeof want - n, "sledtrace: warning: %s: 3 more warnings not shown\n", s);
    expect_warnings(r.e, want);
    free(s);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* ---- names with terminal control bytes ---------------------------------------------------- */

/* Function i+1's name in the sidecar, and as every output shows it (tool_printable). Id 9's
 * line is cut by its newline (the rest, "line", is a line of its own, of no known type). */
static const char *const hostile_names[][2] = {
    {"clear\x1b[2J", "clear\\x1b[2J"},
    {"bell\a|tab\there|del\x7f", "bell\\x07|tab\\x09here|del\\x7f"},
    {"cr\rforged", "cr\\x0dforged"},
    {"csi\xc2\x9b"
     "2J",
     "csi\\xc2\\x9b2J"},
    {"raw\x9b|bad\xff|cut\xe2\x80", "raw\\x9b|bad\\xff|cut\\xe2\\x80"},
    {"rtl\xe2\x80\xae"
     "evil|iso\xe2\x81\xa6x",
     "rtl\\xe2\\x80\\xaeevil|iso\\xe2\\x81\\xa6x"},
    {"back\\slash \"q\" a;b <c> & caf\xc3\xa9", "back\\\\slash \"q\" a;b <c> & caf\xc3\xa9"},
    {"osc\x1b]0;title\x07", "osc\\x1b]0;title\\x07"},
    {"new\nline", "new"},
};
enum { NHOSTILE = sizeof hostile_names / sizeof hostile_names[0] };

/* Functions 1..NHOSTILE nested (1 calls 2 calls 3 ...), then a custom event with control bytes
 * in its payload; the executable's path in the sidecar has an OSC sequence. */
static char *hostile_trace(void)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 7, 7, 0, 100);
    for (uint32_t id = 1; id <= NHOSTILE; id++)
        tg_func(&g, id, STF_ENTER, 1000 + 10 * id);
    for (uint32_t id = NHOSTILE; id >= 1; id--)
        tg_func(&g, id, STF_EXIT, 2000 - 10 * id);
    static const char pay[] = "\x1b[2J\x9b\xe2\x80\xae!";
    tg_custom(&g, 2100, pay, (int32_t)(sizeof pay - 1));
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    tg_free(&g);
    char *s = stf_syms_path_for(p);
    FILE *f = fopen(s, "w");
    cr_assert(f);
    fputs("sledtrace-syms\t1\no\t0\t0x0\t/bin/\x1b]0;pwned\x07prog\n", f);
    for (int i = 0; i < NHOSTILE; i++)
        fprintf(f, "f\t0\t%d\t0x%x\t%s\n", i + 1, 0x1000 + i, hostile_names[i][0]);
    fclose(f);
    free(s);
    return p;
}

/* Length of the well-formed UTF-8 sequence at s, 0 if none. */
static size_t utf8_ok(const unsigned char *s)
{
    unsigned char c = s[0];
    size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                 : c >= 0xe0 && c <= 0xef ? 3
                 : c >= 0xf0 && c <= 0xf4 ? 4
                                          : 0;
    unsigned lo = c == 0xe0   ? 0xa0
                  : c == 0xf0 ? 0x90
                              : 0x80,
             hi = c == 0xed   ? 0x9f
                  : c == 0xf4 ? 0x8f
                              : 0xbf;
    if (!len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

/* out is valid UTF-8 with no control byte but \n and \t, no DEL, no C1 control and no bidi
 * embedding, override or isolate. */
static void assert_clean(const char *what, const char *out)
{
    const unsigned char *s = (const unsigned char *)out;
    for (size_t i = 0; s[i];) {
        unsigned char c = s[i];
        cr_assert(c >= 0x20 || c == '\n' || c == '\t', "%s: byte 0x%02x at %zu:\n%s", what, c, i,
                  out);
        cr_assert(c != 0x7f, "%s: DEL at %zu:\n%s", what, i, out);
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len = utf8_ok(s + i);
        cr_assert(len, "%s: not UTF-8 at %zu (0x%02x):\n%s", what, i, c, out);
        cr_assert(!(len == 2 && c == 0xc2 && s[i + 1] <= 0x9f), "%s: C1 control at %zu", what, i);
        cr_assert(!(len == 3 && c == 0xe2 &&
                    ((s[i + 1] == 0x80 && s[i + 2] >= 0xaa && s[i + 2] <= 0xae) ||
                     (s[i + 1] == 0x81 && s[i + 2] >= 0xa6 && s[i + 2] <= 0xa9))),
                  "%s: bidi control at %zu", what, i);
        i += len;
    }
}

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* Runs the tool with args (NULL-terminated, trace first) and checks stdout and stderr are
 * clean; returns stdout (malloc'd). */
static char *run_clean(const char *const *args)
{
    const char *argv[16] = {tr_bin()};
    size_t n = 1;
    for (; args[n - 1]; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    struct tr_out r = tr_run(argv);
    char what[128];
    snprintf(what, sizeof what, "%s %s%s%s", args[0], args[2] ? args[2] : "", args[2] ? " " : "",
             args[2] && args[3] ? args[3] : "");
    cr_assert_eq(r.code, 0, "%s: stderr: %s", what, r.e);
    assert_clean(what, r.o);
    assert_clean(what, r.e);
    char *o = r.o;
    free(r.e);
    return o;
}

/* Every name shows escaped, exactly `times` times, in text (each in the form given, prefixed
 * by pre and followed by post). */
static void names_shown(const char *what, const char *text, int times, const char *pre,
                        const char *post)
{
    for (int i = 0; i < NHOSTILE; i++) {
        char want[256];
        snprintf(want, sizeof want, "%s%s%s", pre, hostile_names[i][1], post);
        cr_assert_eq(count(text, want), times, "%s: '%s' not shown %d times:\n%s", what, want,
                     times, text);
    }
}

Test(hostile, control_bytes_in_names_are_escaped_in_text_outputs)
{
    char *p = hostile_trace();
    char *o = run_clean((const char *[]){"account", p, NULL});
    names_shown("account", o, 1, "  ", "\n");
    free(o);
    o = run_clean((const char *[]){"account", p, "--format", "csv", NULL});
    cr_assert_str_eq(
        o,
        "function,id,count,total_ns,share_pct,self_ns,mean_ns,selfcall_ns,min_ns,median_ns,p90_ns,"
        "p99_ns,max_ns,unfinished\n"
        "clear\\x1b[2J,1,1,980,100.00,20,980,20,980,980,980,980,980,0\n"
        "bell\\x07|tab\\x09here|del\\x7f,2,1,960,97.96,20,960,20,960,960,960,960,960,0\n"
        "cr\\x0dforged,3,1,940,95.92,20,940,20,940,940,940,940,940,0\n"
        "csi\\xc2\\x9b2J,4,1,920,93.88,20,920,20,920,920,920,920,920,0\n"
        "raw\\x9b|bad\\xff|cut\\xe2\\x80,5,1,900,91.84,20,900,20,900,900,900,900,900,0\n"
        "rtl\\xe2\\x80\\xaeevil|iso\\xe2\\x81\\xa6x,6,1,880,89.80,20,880,20,880,880,880,"
        "880,880,0\n"
        "\"back\\\\slash \"\"q\"\" a;b <c> & caf\xc3\xa9\",7,1,860,87.76,20,860,20,860,860,"
        "860,860,860,0\n"
        "osc\\x1b]0;title\\x07,8,1,840,85.71,20,840,20,840,840,840,840,840,0\n"
        "new,9,1,820,83.67,820,820,820,820,820,820,820,820,0\n");
    free(o);
    o = run_clean((const char *[]){"replay", p, NULL});
    /* "name {" at the entry, "} name" at the exit; the innermost call is one line */
    cr_assert_str_eq(
        o,
        "7        0.000000910             clear\\x1b[2J {\n"
        "7        0.000000920               bell\\x07|tab\\x09here|del\\x7f {\n"
        "7        0.000000930                 cr\\x0dforged {\n"
        "7        0.000000940                   csi\\xc2\\x9b2J {\n"
        "7        0.000000950                     raw\\x9b|bad\\xff|cut\\xe2\\x80 {\n"
        "7        0.000000960                       rtl\\xe2\\x80\\xaeevil|iso\\xe2\\x81\\xa6x {\n"
        "7        0.000000970                         back\\\\slash \"q\" a;b <c> & caf\xc3\xa9 {\n"
        "7        0.000000980                           osc\\x1b]0;title\\x07 {\n"
        "7        0.000000990      820ns                  new\n"
        "7        0.000001820      840ns                } osc\\x1b]0;title\\x07\n"
        "7        0.000001830      860ns              } back\\\\slash \"q\" a;b <c> & caf\xc3\xa9\n"
        "7        0.000001840      880ns            } rtl\\xe2\\x80\\xaeevil|iso\\xe2\\x81\\xa6x\n"
        "7        0.000001850      900ns          } raw\\x9b|bad\\xff|cut\\xe2\\x80\n"
        "7        0.000001860      920ns        } csi\\xc2\\x9b2J\n"
        "7        0.000001870      940ns      } cr\\x0dforged\n"
        "7        0.000001880      960ns    } bell\\x07|tab\\x09here|del\\x7f\n"
        "7        0.000001890      980ns  } clear\\x1b[2J\n"
        "# shown: 9 of 9 calls, stack repairs: 0, unmatched exits: 0, unfinished frames: 0\n"
        "# times: as measured; this trace records no tracer cost (compiler-rt's, or an older "
        "sledtrace's), so each call's figures include the tracer's own\n");
    free(o);
    o = run_clean((const char *[]){"replay", p, "--order", "exit", NULL});
    names_shown("replay exit", o, 1, "", "\n");
    free(o);
    o = run_clean((const char *[]){"stack", p, NULL});
    cr_assert(strstr(o, "clear\\x1b[2J;bell\\x07|tab\\x09here|del\\x7f;cr\\x0dforged;"), "%s", o);
    free(o);
    o = run_clean((const char *[]){"stack", p, "--format", "folded", NULL});
    /* ';' is the separator: a ';' in a name becomes ':' */
    cr_assert(
        strstr(o, ";back\\\\slash \"q\" a:b <c> & caf\xc3\xa9;osc\\x1b]0:title\\x07;new 820\n"),
        "%s", o);
    free(o);
    o = run_clean((const char *[]){"dump", p, NULL});
    names_shown("dump", o, 2, "name=", "\n");
    cr_assert(strstr(o, " data=\"\\x1b[2J\\x9b\\xe2\\x80\\xae!\"\n"), "%s", o);
    free(o);
    o = run_clean((const char *[]){"info", p, NULL});
    free(o);
    tr_remove_trace(p);
}

/* Parses an output file with python3 (json, yaml, xml.etree; DOT by its grammar's quoting
 * rule) and prints the function names in it, by id where the format gives ids, one a line.
 * convert --format yaml writes every byte >= 0x80 of a double-quoted scalar as \xXX, which YAML
 * reads as U+00XX: the names' UTF-8 is recovered by reading those back as bytes. */
static const char names_py[] =
    "import json, re, sys, xml.etree.ElementTree as E, yaml\n"
    "fmt, path = sys.argv[1], sys.argv[2]\n"
    "text = open(path, encoding='utf-8', errors='strict').read()\n"
    "if fmt == 'account':\n"
    "    names = [(f['id'], f['function']) for f in json.loads(text)['functions']]\n"
    "elif fmt == 'chrome':\n"
    "    d = json.loads(text)\n"
    "    names = [(e['args']['id'], e['name']) for e in d['traceEvents'] if e['ph'] == 'X']\n"
    "    names += [(0, e['args']['name']) for e in d['traceEvents'] if e['name'] == "
    "'process_name']\n"
    "elif fmt == 'yaml':\n"
    "    names = [(r['func-id'], r['function'].encode('latin-1').decode('utf-8')) for r in "
    "yaml.safe_load(text)['records'] if 'func-id' in r]\n"
    "elif fmt == 'svg':\n"
    "    g = [e for e in E.fromstring(text).iter() if e.get('class') == 'f']\n"
    "    names = [(i, e.get('data-n')) for i, e in enumerate(g) if e.get('data-n') != 'all']\n"
    "    assert all(e.find('{http://www.w3.org/2000/svg}title').text.startswith(e.get('data-n') "
    "+ ' (') for e in g)\n"
    "else:\n"
    "    q = r'\"((?:[^\"\\\\\\n]|\\\\.)*)\"'\n"
    "    lines = text.split('\\n')\n"
    "    assert lines[0] == 'digraph calls {' and lines[-2] == '}' and lines[-1] == ''\n"
    "    names = []\n"
    "    for l in lines[2:-4]:\n"
    "        m = re.fullmatch(r'  f(\\d+) \\[label=' + q + r'\\];', l)\n"
    "        if m:\n"
    "            lab = re.sub(r'\\\\(.)', lambda x: '\\n' if x[1] == 'n' else x[1], m[2])\n"
    "            names.append((int(m[1]), lab.split('\\n')[0]))\n"
    "        elif not re.fullmatch(r'  f\\d+ \\[style=filled, fillcolor=\"#ff[0-9a-f]{4}\"\\];', "
    "l):\n"
    "            assert re.fullmatch(r'  f\\d+ -> f\\d+ \\[label=' + q + r'\\];', l), l\n"
    "seen = set()\n"
    "for i, n in sorted(names, key=lambda x: x[0]):\n"
    "    if i not in seen:\n"
    "        seen.add(i)\n"
    "        sys.stdout.buffer.write(n.encode('utf-8') + b'\\n')\n";

/* The names fmt's output at path holds (see names_py), as one string. */
static char *names_in(const char *fmt, const char *path)
{
    char *py = tg_tmpname(".py"), *res = tg_tmpname(".txt");
    FILE *f = fopen(py, "w");
    cr_assert(f);
    fputs(names_py, f);
    fclose(f);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 %s %s %s > %s 2>&1", py, fmt, path, res);
    int st = system(cmd);
    char *out = tr_slurp(res);
    cr_assert_eq(st, 0, "%s output does not parse:\n%s", fmt, out);
    unlink(py);
    unlink(res);
    free(py);
    free(res);
    return out;
}

/* Runs the tool (args: trace first, then options, NULL-terminated) with its output in a file:
 * checks the bytes are clean and returns the names parsed from it. */
static char *parsed_names(const char *fmt, const char *const *args)
{
    char *o = run_clean(args);
    char *path = tg_tmpname(".out");
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(o, f);
    fclose(f);
    free(o);
    char *names = names_in(fmt, path);
    unlink(path);
    free(path);
    return names;
}

/* The printable names, one a line, in id order; with ';' as ':' when folded (stack views). */
static void expected_names(char *buf, size_t len, bool folded)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < NHOSTILE; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s\n", hostile_names[i][1]);
    for (char *p = buf; folded && *p; p++)
        if (*p == ';')
            *p = ':';
}

/* JSON, YAML, SVG and DOT stay valid with such names (quotes, '<', '&', backslashes in them),
 * hold no raw control byte, and give back exactly the escaped names. */
Test(hostile, control_bytes_in_names_keep_structured_outputs_valid)
{
    char *p = hostile_trace();
    char want[2048], chrome[2100];
    expected_names(want, sizeof want, false);
    snprintf(chrome, sizeof chrome, "\\x1b]0;pwned\\x07prog\n%s", want);
    char *n = parsed_names("account", (const char *[]){"account", p, "--format", "json", NULL});
    cr_assert_str_eq(n, want);
    free(n);
    n = parsed_names("chrome", (const char *[]){"convert", p, "--format", "chrome", NULL});
    cr_assert_str_eq(n, chrome);
    free(n);
    n = parsed_names("yaml", (const char *[]){"convert", p, "--format", "yaml", NULL});
    cr_assert_str_eq(n, want);
    free(n);
    n = parsed_names("dot", (const char *[]){"graph", p, NULL});
    cr_assert_str_eq(n, want);
    free(n);
    expected_names(want, sizeof want, true);
    n = parsed_names("svg", (const char *[]){"flamegraph", p, "-o", "-", NULL});
    cr_assert_str_eq(n, want);
    free(n);
    tr_remove_trace(p);
}

/* Names read from an instrumented binary (--syms BINARY) are escaped as well; a name with a
 * newline cannot be put in a sidecar line (it would end early and the rest would name id 1
 * "forged"), so that function is left unnamed. */
Test(hostile, names_from_a_binary_are_escaped)
{
    const char *bin = getenv("HOSTILE_NAMES_BIN");
    cr_assert(bin && *bin, "HOSTILE_NAMES_BIN not set");
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 7, 7, 0, 100);
    tg_func(&g, 3, STF_ENTER, 1000);
    tg_func(&g, 1, STF_ENTER, 1100);
    tg_func(&g, 1, STF_EXIT, 1200);
    tg_func(&g, 2, STF_ENTER, 1300);
    tg_func(&g, 2, STF_EXIT, 1500);
    tg_func(&g, 3, STF_EXIT, 2000);
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    tg_free(&g);
    const char *argv[] = {tr_bin(), "replay", p, "--syms", bin, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o,
                     "7        0.000000900             main {\n"
                     "7        0.000001000      100ns    shout\\x1b[2J\\x07\n"
                     "7        0.000001200      200ns    #2\n"
                     "7        0.000001900    1.000us  } main\n"
                     "# shown: 3 of 3 calls, stack repairs: 0, unmatched exits: 0, "
                     "unfinished frames: 0\n"
                     "# times: as measured; this trace records no tracer cost (compiler-rt's, or "
                     "an older sledtrace's), so each call's figures include the tracer's own\n");
    cr_assert_str_eq(r.e, "");
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* ---- deep stacks -------------------------------------------------------------------------- */

/* Line number n (1-based) of text, without its newline, into buf. */
static void nth_line(const char *text, int n, char *buf, size_t len)
{
    const char *p = text;
    for (int i = 1; i < n && p; i++) {
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    cr_assert(p && *p, "no line %d", n);
    size_t k = strcspn(p, "\n");
    cr_assert(k < len);
    memcpy(buf, p, k);
    buf[k] = '\0';
}

/* replay's indentation stops at depth 64 (128 spaces); deeper lines say "[depth N] ". With
 * 10,000 nested calls every line stays short (full indentation would print 200 MB). */
Test(hostile, replay_indentation_is_capped, .timeout = 60)
{
    enum { DEPTH = 10000 };
    struct tg g;
    tg_init(&g, 5, 1000000000, 1 << 20);
    tg_block_begin(&g, 1, 1, 0, 0);
    for (uint32_t i = 0; i < DEPTH; i++)
        tg_func(&g, 1, STF_ENTER, 10 + i);
    for (uint32_t i = 0; i < DEPTH; i++)
        tg_func(&g, 1, STF_EXIT, 10 + DEPTH + i);
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    tg_free(&g);
    tr_write_syms(p, "sledtrace-syms\t1\nf\t0\t1\t0x1000\trec\n");
    char sp[129];
    memset(sp, ' ', 128);
    sp[128] = '\0';
    char want[512], got[512];
    const char *orders[] = {"entry", "exit"};
    for (int k = 0; k < 2; k++) {
        const char *argv[] = {tr_bin(), "replay", p, "--order", orders[k], NULL};
        struct tr_out r = tr_run(argv);
        cr_assert_eq(r.code, 0, "stderr: %s", r.e);
        /* entry order: 2 * DEPTH - 1 lines (the innermost call is one) and the summary's two;
         * exit order: DEPTH lines and the summary's two */
        int lines = k == 0 ? 2 * DEPTH + 1 : DEPTH + 2;
        cr_assert_eq(count(r.o, "\n"), lines);
        /* The longest line: head 21, duration 10 + 2, indentation 128, "[depth 9999] " 13,
         * "} rec" or "rec {" 5, newline 1: 180 bytes. */
        size_t n = strlen(r.o);
        cr_assert_leq(n, (size_t)lines * 180, "%zu bytes for %d lines", n, lines);
        if (k == 0) {
            /* depth d enters at tick 10 + d, returns at 20009 - d: 19999 - 2d ticks (ns) */
            nth_line(r.o, 64, got, sizeof got); /* depth 63: indented, no marker */
            snprintf(want, sizeof want, "1        0.000000073             %.126srec {", sp);
            cr_assert_str_eq(got, want);
            nth_line(r.o, 65, got, sizeof got); /* depth 64: the cap */
            snprintf(want, sizeof want, "1        0.000000074             %s[depth 64] rec {", sp);
            cr_assert_str_eq(got, want);
            nth_line(r.o, 5001, got, sizeof got);
            snprintf(want, sizeof want, "1        0.000005010             %s[depth 5000] rec {",
                     sp);
            cr_assert_str_eq(got, want);
            nth_line(r.o, DEPTH, got, sizeof got); /* the innermost call: one line */
            snprintf(want, sizeof want, "1        0.000010009        1ns  %s[depth 9999] rec", sp);
            cr_assert_str_eq(got, want);
            nth_line(r.o, DEPTH + 1, got, sizeof got);
            snprintf(want, sizeof want, "1        0.000010011        3ns  %s[depth 9998] } rec",
                     sp);
            cr_assert_str_eq(got, want);
            nth_line(r.o, 2 * DEPTH - 1, got, sizeof got); /* the outermost call closes */
            cr_assert_str_eq(got, "1        0.000020009   19.999us  } rec");
        } else {
            nth_line(r.o, 1, got, sizeof got); /* the innermost returns first */
            snprintf(want, sizeof want, "1        0.000010009        1ns  %s[depth 9999] rec", sp);
            cr_assert_str_eq(got, want);
            nth_line(r.o, DEPTH - 64, got, sizeof got);
            snprintf(want, sizeof want, "1        0.000000074   19.871us  %s[depth 64] rec", sp);
            cr_assert_str_eq(got, want);
            nth_line(r.o, DEPTH - 63, got, sizeof got);
            snprintf(want, sizeof want, "1        0.000000073   19.873us  %.126srec", sp);
            cr_assert_str_eq(got, want);
        }
        tr_out_free(&r);
    }
    tr_remove_trace(p);
}

/* ---- run -------------------------------------------------------------------------------- */

/* `run` lists the traces of the process and of the images it exec'd, whose names the program
 * chose: a trace file named with an OSC title sequence is listed escaped. */
Test(hostile, run_lists_trace_names_escaped)
{
    char dir[] = "/tmp/stf-run-XXXXXX";
    cr_assert(mkdtemp(dir));
    char script[1024];
    /* A trace and a sidecar carrying the run's id (SLEDTRACE_RUN_ID, which run sets), as the
     * runtime would write them. */
    snprintf(script, sizeof script,
             "n=\"%s/sledtrace.$(printf '\\033')]0;x$(printf '\\007').$$\" && touch \"$n.fdr\" && "
             "printf 'sledtrace-syms\\t1\\nrun\\t%%s\\n' \"$SLEDTRACE_RUN_ID\" > \"$n.syms\" && "
             "echo $$",
             dir);
    const char *argv[] = {tr_bin(), "run", "-o", dir, "--", "/bin/sh", "-c", script, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    assert_clean("run", r.e);
    char want[512];
    snprintf(want, sizeof want, "sledtrace: trace written to %s/sledtrace.\\x1b]0;x\\x07.%ld.fdr\n",
             dir, strtol(r.o, NULL, 10));
    cr_assert(strstr(r.e, want), "'%s' not in:\n%s", want, r.e);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
    tr_out_free(&r);
}
