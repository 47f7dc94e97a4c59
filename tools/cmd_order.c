/* sledtrace order: a symbol ordering file from traces (issue 15.3): the functions in the order
 * the program first called them, for lld's --symbol-ordering-file.
 *
 * Each trace is read once (tool_trace: thread after thread); a function's first call is its
 * earliest enter record's time since the trace's own start (tool_trace_base), in ns, so that
 * traces of several runs and their threads merge: the earliest first call wins, ties go to the
 * function called more often (over all traces), then to the name. Names are the linker's
 * (mangled); the tracer's pseudo-functions and ids without a name are left out, and so are
 * functions never called: the linker places them after the listed ones.
 *
 * --pages BINARY measures what the order is for: the distinct 4 KiB pages of BINARY's text
 * that the first 1,000 and 10,000 calls of the first trace (by time, over all its threads) and
 * all its calls touch, a call touching every page of its function ([st_value, +st_size) of
 * BINARY's symbol of that name). Given the binary before and after relinking with the order,
 * the two figures say what the order saved. Memory: one entry per function per trace, and the
 * first 10,000 calls (a max-heap by time). */
#include "common.h"
#include "names.h"
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_PAGES_BINS = 8, PAGE = 4096 };
static const uint64_t page_counts[] = {1000, 10000};
enum { HEAP_MAX = 10000 };

static void help(FILE *out)
{
    fputs("usage: sledtrace order TRACE... [-o FILE] [--pages BINARY]...\n"
          "\n"
          "Write the functions in the order the program first called them, one linker\n"
          "symbol per line: a symbol ordering file for lld. Relink with it to put the\n"
          "functions a run needs first next to each other:\n"
          "    clang -ffunction-sections -fuse-ld=lld -Wl,--symbol-ordering-file=FILE ...\n"
          "Several traces (runs, threads) merge: the earliest first call (time since each\n"
          "trace's start) wins, ties go to the function called more often. Functions never\n"
          "called are left to the linker (after the listed ones). The functions of traced\n"
          "shared libraries are listed too: lld warns about names the linked object lacks\n"
          "(-Wl,--no-warn-symbol-ordering quiets it).\n"
          "\n"
          "  -o, --output FILE  where to write the order (default: standard output)\n"
          "  --pages BINARY     also report the distinct 4 KiB text pages of BINARY that the\n"
          "                     first 1000 and 10000 calls of the first TRACE (and all its\n"
          "                     calls) touch; give the binary before and after relinking\n",
          out);
}

struct ofn {
    char *name; /* NULL until the trace's names are looked up (by id) */
    uint32_t id;
    uint64_t first_ns, calls;
};

struct olist {
    struct ofn *f;
    size_t n, cap;
};

static int cmp_name(const void *pa, const void *pb)
{
    return strcmp(((const struct ofn *)pa)->name, ((const struct ofn *)pb)->name);
}

static int cmp_order(const void *pa, const void *pb)
{
    const struct ofn *a = pa, *b = pb;
    if (a->first_ns != b->first_ns)
        return a->first_ns < b->first_ns ? -1 : 1;
    if (a->calls != b->calls)
        return a->calls > b->calls ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* The first calls of a trace: a max-heap by tsc of at most HEAP_MAX (tsc, id). */
struct call {
    uint64_t tsc;
    uint32_t id;
};

struct heap {
    struct call c[HEAP_MAX];
    size_t n;
};

static void heap_add(struct heap *h, uint64_t tsc, uint32_t id)
{
    size_t i;
    if (h->n < HEAP_MAX) {
        i = h->n++;
        while (i && h->c[(i - 1) / 2].tsc < tsc) {
            h->c[i] = h->c[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        h->c[i] = (struct call){tsc, id};
        return;
    }
    if (tsc >= h->c[0].tsc)
        return;
    i = 0; /* replace the latest, sift down */
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        uint64_t mt = tsc;
        if (l < h->n && h->c[l].tsc > mt)
            m = l, mt = h->c[l].tsc;
        if (r < h->n && h->c[r].tsc > mt)
            m = r;
        if (m == i)
            break;
        h->c[i] = h->c[m];
        i = m;
    }
    h->c[i] = (struct call){tsc, id};
}

static int cmp_call(const void *pa, const void *pb)
{
    const struct call *a = pa, *b = pb;
    return (a->tsc > b->tsc) - (a->tsc < b->tsc);
}

/* One trace: its functions appended to l (name, first call, calls); with h, its first calls
 * kept there and its names in *syms_out (the caller frees it). An exit code. */
static int read_trace(const char *path, struct olist *l, struct heap *h, struct stf_syms **syms_out,
                      uint64_t *all_calls, size_t *unnamed)
{
    struct tool_trace t;
    if (tool_trace_open(&t, path, NULL, "reading", false) != EXIT_OK)
        return EXIT_BAD_TRACE;
    uint64_t base = tool_trace_base(&t);
    struct u64map ids = {0};
    struct ofn *fs = NULL;
    size_t nf = 0, capf = 0;
    struct stf_item it;
    int rc, status = EXIT_OK;
    while ((rc = tool_trace_next(&t, &it)) == STF_OK) {
        if (it.kind != STF_K_FUNCTION || (it.action != STF_ENTER && it.action != STF_ENTER_ARGS))
            continue;
        if (stf_pseudo_name(it.func_id))
            continue;
        bool added;
        long k = u64map_get(&ids, it.func_id, &added);
        if (k >= 0 && added && (size_t)k >= capf) {
            struct ofn *nfs = tool_grow(fs, &capf, sizeof *fs, 256);
            if (!nfs)
                k = -1;
            else
                fs = nfs;
        }
        if (k < 0) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
            break;
        }
        uint64_t ns = tool_ticks_to_ns(it.tsc > base ? it.tsc - base : 0, t.freq);
        if (added) {
            fs[k] = (struct ofn){.id = it.func_id, .first_ns = ns};
            nf++;
        }
        if (ns < fs[k].first_ns)
            fs[k].first_ns = ns;
        fs[k].calls++;
        if (h) {
            heap_add(h, it.tsc, it.func_id);
            ++*all_calls;
        }
    }
    if (tool_trace_end(&t, rc) != EXIT_OK && status == EXIT_OK)
        status = EXIT_BAD_TRACE;
    for (size_t i = 0; i < nf && status == EXIT_OK; i++) {
        char buf[32];
        const char *nm = stf_syms_name(t.syms, fs[i].id, buf, sizeof buf);
        if (nm == buf) {
            ++*unnamed; /* "#id": no symbol to order */
            continue;
        }
        if (l->n == l->cap) {
            struct ofn *nl = tool_grow(l->f, &l->cap, sizeof *l->f, 256);
            if (!nl) {
                tool_err("out of memory");
                status = EXIT_BAD_TRACE;
                break;
            }
            l->f = nl;
        }
        char *dup = strdup(nm);
        if (!dup) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
            break;
        }
        l->f[l->n++] = (struct ofn){.name = dup, .first_ns = fs[i].first_ns, .calls = fs[i].calls};
    }
    free(fs);
    u64map_free(&ids);
    if (syms_out && status == EXIT_OK) {
        *syms_out = t.syms; /* the caller's now */
        t.syms = NULL;
    }
    tool_trace_close(&t);
    return status;
}

/* A binary's function symbols, sorted by name. */
struct esym {
    char *name;
    uint64_t addr, size;
};

static int cmp_esym(const void *pa, const void *pb)
{
    return strcmp(((const struct esym *)pa)->name, ((const struct esym *)pb)->name);
}

/* BINARY's STT_FUNC symbols (.symtab, else .dynsym) into *out (sorted by name) and its text
 * pages (the executable sections' sizes over 4 KiB, rounded up) into *text_pages. An exit code,
 * the error printed. */
static int load_elf_syms(const char *bin, struct esym **out, size_t *n, uint64_t *text_pages)
{
    *out = NULL;
    *n = 0;
    *text_pages = 0;
    if (elf_version(EV_CURRENT) == EV_NONE) {
        tool_err("order: libelf: %s", elf_errmsg(-1));
        return EXIT_BAD_TRACE;
    }
    int fd = open(bin, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        tool_err("order: %s: %s", bin, strerror(errno));
        return EXIT_BAD_TRACE;
    }
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    if (!e || elf_kind(e) != ELF_K_ELF) {
        tool_err("order: %s: offset 0: not an ELF file", bin);
        if (e)
            elf_end(e);
        close(fd);
        return EXIT_BAD_TRACE;
    }
    Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
    GElf_Shdr sh;
    while ((scn = elf_nextscn(e, scn)) != NULL) {
        if (!gelf_getshdr(scn, &sh))
            continue;
        if (sh.sh_type == SHT_SYMTAB)
            symtab = scn;
        else if (sh.sh_type == SHT_DYNSYM)
            dynsym = scn;
        if ((sh.sh_flags & SHF_EXECINSTR) && sh.sh_type == SHT_PROGBITS)
            *text_pages += (sh.sh_size + PAGE - 1) / PAGE;
    }
    scn = symtab ? symtab : dynsym;
    int status = EXIT_OK;
    Elf_Data *d = scn && gelf_getshdr(scn, &sh) ? elf_getdata(scn, NULL) : NULL;
    size_t cap = 0, count = d && sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
    for (size_t i = 0; i < count; i++) {
        GElf_Sym s;
        if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC || !s.st_value)
            continue;
        const char *nm = elf_strptr(e, sh.sh_link, s.st_name);
        if (!nm || !*nm)
            continue;
        if (*n == cap) {
            struct esym *g = tool_grow(*out, &cap, sizeof **out, 256);
            if (!g) {
                status = EXIT_BAD_TRACE;
                break;
            }
            *out = g;
        }
        (*out)[*n] = (struct esym){.name = strdup(nm), .addr = s.st_value, .size = s.st_size};
        if (!(*out)[*n].name) {
            status = EXIT_BAD_TRACE;
            break;
        }
        ++*n;
    }
    elf_end(e);
    close(fd);
    if (status != EXIT_OK)
        tool_err("out of memory");
    else if (!*n) {
        tool_err("order: %s: no function symbols (stripped?)", bin);
        status = EXIT_BAD_TRACE;
    } else
        qsort(*out, *n, sizeof **out, cmp_esym);
    return status;
}

static const struct esym *find_esym(const struct esym *s, size_t n, const char *name)
{
    struct esym key = {.name = (char *)name};
    return bsearch(&key, s, n, sizeof *s, cmp_esym);
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

/* The pages a function spans, appended to *pg (np entries, cap capacity): 0, -1 when out of
 * memory. */
static int add_pages(const struct esym *s, uint64_t **pg, size_t *np, size_t *cap)
{
    uint64_t end = s->addr + (s->size ? s->size : 1);
    for (uint64_t p = s->addr / PAGE; p <= (end - 1) / PAGE; p++) {
        if (*np == *cap) {
            uint64_t *g = tool_grow(*pg, cap, sizeof **pg, 1024);
            if (!g)
                return -1;
            *pg = g;
        }
        (*pg)[(*np)++] = p;
    }
    return 0;
}

static uint64_t distinct(uint64_t *pg, size_t np)
{
    qsort(pg, np, sizeof *pg, cmp_u64);
    uint64_t d = 0;
    for (size_t i = 0; i < np; i++)
        d += i == 0 || pg[i] != pg[i - 1];
    return d;
}

/* Distinct pages spanned by the functions of calls[0..n) in a binary's layout (es); calls of
 * functions it has no symbol for are counted in *missing. UINT64_MAX when out of memory. */
static uint64_t pages_of_calls(const struct call *calls, size_t n, const struct stf_syms *syms,
                               const struct esym *es, size_t nes, uint64_t **pg, size_t *cap,
                               uint64_t *missing)
{
    size_t np = 0;
    for (size_t i = 0; i < n; i++) {
        char buf[32];
        const char *nm = stf_syms_name(syms, calls[i].id, buf, sizeof buf);
        const struct esym *s = nm == buf ? NULL : find_esym(es, nes, nm);
        if (!s)
            ++*missing;
        else if (add_pages(s, pg, &np, cap) != 0)
            return UINT64_MAX;
    }
    return distinct(*pg, np);
}

int cmd_order(int argc, char **argv)
{
    if (tool_wants_help(argc, argv)) {
        help(stdout);
        return EXIT_OK;
    }
    const char *out = "-", *bins[MAX_PAGES_BINS];
    size_t nbins = 0;
    const char **traces = calloc((size_t)argc, sizeof *traces);
    size_t ntraces = 0;
    if (!traces) {
        tool_err("out of memory");
        return EXIT_BAD_TRACE;
    }
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int m;
        if ((m = tool_option(argc, argv, &i, "order", "-o", &v)) != 0 ||
            (m = tool_option(argc, argv, &i, "order", "--output", &v)) != 0) {
            if (m < 0)
                goto usage;
            out = v;
        } else if ((m = tool_option(argc, argv, &i, "order", "--pages", &v)) != 0) {
            if (m < 0)
                goto usage;
            if (nbins == MAX_PAGES_BINS) {
                tool_err("order: at most %d --pages binaries", MAX_PAGES_BINS);
                goto usage;
            }
            bins[nbins++] = v;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            tool_err("order: unknown option '%s' (see 'sledtrace order --help')", argv[i]);
            goto usage;
        } else {
            traces[ntraces++] = argv[i];
        }
    }
    if (!ntraces && !tool_default_trace(&traces[ntraces++], "order"))
        goto usage;
    tool_names_mode("mangled"); /* the linker's names */

    struct olist l = {0};
    struct heap *h = nbins ? calloc(1, sizeof *h) : NULL;
    struct stf_syms *syms0 = NULL;
    uint64_t all_calls = 0;
    size_t unnamed = 0;
    int status = nbins && !h ? EXIT_BAD_TRACE : EXIT_OK;
    if (status != EXIT_OK)
        tool_err("out of memory");
    for (size_t i = 0; i < ntraces && status == EXIT_OK; i++)
        status = read_trace(traces[i], &l, i == 0 ? h : NULL, i == 0 ? &syms0 : NULL, &all_calls,
                            &unnamed);
    size_t n = 0;
    if (status == EXIT_OK) {
        /* merge by name: earliest first call, summed calls */
        qsort(l.f, l.n, sizeof *l.f, cmp_name);
        for (size_t i = 0; i < l.n; i++) {
            if (n && strcmp(l.f[n - 1].name, l.f[i].name) == 0) {
                if (l.f[i].first_ns < l.f[n - 1].first_ns)
                    l.f[n - 1].first_ns = l.f[i].first_ns;
                l.f[n - 1].calls += l.f[i].calls;
                free(l.f[i].name);
            } else {
                l.f[n++] = l.f[i];
            }
        }
        l.n = n;
        qsort(l.f, n, sizeof *l.f, cmp_order);
        struct tool_out o;
        FILE *f = tool_out_open(&o, out);
        if (!f) {
            status = EXIT_BAD_TRACE;
        } else {
            for (size_t i = 0; i < n; i++)
                fprintf(f, "%s\n", l.f[i].name);
            if (tool_out_close(&o, 1) != 0)
                status = EXIT_BAD_TRACE;
        }
    }
    if (status == EXIT_OK) {
        fprintf(stderr, "# %zu functions in first-call order from %zu trace%s", n, ntraces,
                ntraces == 1 ? "" : "s");
        if (unnamed)
            fprintf(stderr, "; %zu without a name left out", unnamed);
        fputc('\n', stderr);
    }
    if (status == EXIT_OK && nbins) {
        qsort(h->c, h->n, sizeof h->c[0], cmp_call);
        uint64_t *pg = NULL; /* pages, scratch */
        size_t cap = 0;
        for (size_t b = 0; b < nbins && status == EXIT_OK; b++) {
            struct esym *es;
            size_t nes;
            uint64_t text;
            status = load_elf_syms(bins[b], &es, &nes, &text);
            if (status != EXIT_OK)
                break;
            printf("%s: %" PRIu64 " text pages; %s touched", bins[b], text, traces[0]);
            uint64_t missing = 0, p = 0;
            for (size_t k = 0; k < sizeof page_counts / sizeof page_counts[0]; k++) {
                size_t upto = page_counts[k] < h->n ? (size_t)page_counts[k] : h->n;
                p = pages_of_calls(h->c, upto, syms0, es, nes, &pg, &cap, &missing);
                if (p == UINT64_MAX)
                    break;
                printf(" %" PRIu64 " by the first %zu calls,", p, upto);
            }
            /* and every function the traces called, once each */
            size_t np = 0;
            for (size_t i = 0; p != UINT64_MAX && i < l.n; i++) {
                const struct esym *s = find_esym(es, nes, l.f[i].name);
                if (s && add_pages(s, &pg, &np, &cap) != 0)
                    p = UINT64_MAX;
            }
            if (p == UINT64_MAX) {
                tool_err("out of memory");
                status = EXIT_BAD_TRACE;
            } else {
                printf(" %" PRIu64 " by all %" PRIu64 " calls\n", distinct(pg, np), all_calls);
            }
            if (missing)
                fprintf(stderr,
                        "sledtrace: order: %s: warning: %" PRIu64
                        " of the first calls have no symbol there\n",
                        bins[b], missing);
            for (size_t i = 0; i < nes; i++)
                free(es[i].name);
            free(es);
        }
        free(pg);
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.f[i].name);
    free(l.f);
    free(h);
    stf_syms_free(syms0);
    free(traces);
    if (fflush(stdout) != 0)
        status = EXIT_BAD_TRACE;
    return status;
usage:
    free(traces);
    return EXIT_USAGE;
}
