/* Bulk decoding (stf_reader_funcs, stf_cursor_funcs) and cursor clones: on the checked-in real
 * traces and on crafted ones (many blocks per thread, TSC wraps, CPU changes, call arguments,
 * events, a record with a bad action, a block cut short), a walk that takes function records
 * in bulk wherever it can gives exactly the items of a walk with stf_cursor_next (kind, TSC,
 * id, action, in order), with the same warnings and statistics; a reader read from a pipe
 * (not mapped) agrees with one that maps the file; a clone walks each thread as the cursor it
 * was made from does. */
#include "tracegen.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* One item as both walks can give it. */
struct rec {
    int kind;
    uint64_t tsc;
    uint32_t id;
    uint8_t action;
};

struct walk {
    struct rec *r;
    size_t n, cap;
    uint64_t warnings;
    uint64_t last_off;
};

static void add(struct walk *w, struct rec r)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 256;
        w->r = realloc(w->r, w->cap * sizeof *w->r);
        cr_assert_not_null(w->r);
    }
    w->r[w->n++] = r;
}

static struct rec of_item(const struct stf_item *it)
{
    if (it->kind != STF_K_FUNCTION)
        return (struct rec){.kind = it->kind, .tsc = it->tsc};
    return (struct rec){.kind = it->kind, .tsc = it->tsc, .id = it->func_id, .action = it->action};
}

static void count_warning(void *ctx, uint64_t off, const char *msg)
{
    (void)off, (void)msg;
    ((struct walk *)ctx)->warnings++;
}

/* Every thread of the trace at path, walked item by item (batch 0) or taking up to `batch`
 * function records at a time wherever the cursor gives them. */
static void walk_cursor(const char *path, size_t batch, struct walk *w)
{
    struct stf_cursor *c;
    char err[256];
    cr_assert_eq(stf_cursor_open_warn(&c, path, 0, count_warning, w, err, sizeof err), STF_OK, "%s",
                 err);
    struct stf_func f[64];
    for (size_t th = 0; th < stf_cursor_threads(c); th++) {
        cr_assert_eq(stf_cursor_select(c, th, NULL, NULL, NULL), STF_OK);
        for (;;) {
            size_t n = batch ? stf_cursor_funcs(c, f, batch) : 0;
            for (size_t i = 0; i < n; i++)
                add(w, (struct rec){STF_K_FUNCTION, f[i].tsc, f[i].id, f[i].action});
            if (n)
                continue;
            struct stf_item it;
            int rc = stf_cursor_next(c, &it);
            if (rc != STF_OK) {
                cr_assert_eq(rc, STF_END);
                break;
            }
            add(w, of_item(&it));
        }
    }
    struct stf_reader_stats st;
    stf_cursor_stats(c, &st);
    add(w, (struct rec){.kind = -1, .tsc = st.records, .id = (uint32_t)st.blocks});
    add(w, (struct rec){.kind = -2, .tsc = st.bytes});
    stf_cursor_close(c);
}

static void assert_same(const struct walk *a, const struct walk *b, const char *what)
{
    cr_assert_eq(a->n, b->n, "%s: %zu items, %zu in bulk", what, a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        const struct rec *x = &a->r[i], *y = &b->r[i];
        cr_assert(x->kind == y->kind && x->tsc == y->tsc && x->id == y->id &&
                      x->action == y->action,
                  "%s: item %zu differs (kind %d/%d, tsc %llu/%llu, id %u/%u, action %u/%u)", what,
                  i, x->kind, y->kind, (unsigned long long)x->tsc, (unsigned long long)y->tsc,
                  x->id, y->id, x->action, y->action);
    }
    cr_assert_eq(a->warnings, b->warnings, "%s: warnings", what);
}

static void check_cursor(const char *path)
{
    struct walk one = {0};
    walk_cursor(path, 0, &one);
    cr_assert_gt(one.n, 2);
    const size_t batches[] = {1, 3, 64};
    for (size_t k = 0; k < 3; k++) {
        struct walk bulk = {0};
        walk_cursor(path, batches[k], &bulk);
        char what[512];
        snprintf(what, sizeof what, "%s, batch %zu", path, batches[k]);
        assert_same(&one, &bulk, what);
        free(bulk.r);
    }
    free(one.r);
}

/* The streaming reader over fd, item by item or in bulk; strict or lenient. */
static void walk_reader_fd(int fd, int flags, size_t batch, struct walk *w)
{
    struct stf_reader *r;
    cr_assert_eq(stf_reader_open_fd(&r, fd, flags), STF_OK);
    stf_reader_set_warn(r, count_warning, w);
    struct stf_func f[64];
    int rc;
    for (;;) {
        size_t n = batch ? stf_reader_funcs(r, f, batch) : 0;
        for (size_t i = 0; i < n; i++)
            add(w, (struct rec){STF_K_FUNCTION, f[i].tsc, f[i].id, f[i].action});
        if (n) {
            uint64_t off = stf_reader_offset(r);
            cr_assert_gt(off, w->last_off); /* moved over them */
            w->last_off = off;
            continue;
        }
        struct stf_item it;
        if ((rc = stf_reader_next(r, &it)) != STF_OK)
            break;
        add(w, of_item(&it));
    }
    struct stf_reader_stats st;
    stf_reader_stats(r, &st);
    add(w, (struct rec){.kind = rc, .tsc = st.records, .id = (uint32_t)st.blocks});
    add(w, (struct rec){.kind = -100, .tsc = st.bytes});
    stf_reader_close(r);
}

/* The file at path through a pipe: the reader cannot map it and reads it instead. */
static int pipe_of(const char *path)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(p[0]);
        int in = open(path, O_RDONLY);
        char buf[4096];
        ssize_t k;
        while (in >= 0 && (k = read(in, buf, sizeof buf)) > 0)
            if (write(p[1], buf, (size_t)k) != k)
                break;
        _exit(0);
    }
    close(p[1]);
    return p[0];
}

static void check_reader(const char *path)
{
    for (int flags = 0; flags <= STF_READ_STRICT; flags++) {
        struct walk one = {0}, bulk = {0}, piped = {0};
        int fd = open(path, O_RDONLY);
        cr_assert_geq(fd, 0);
        walk_reader_fd(fd, flags, 0, &one);
        close(fd);
        fd = open(path, O_RDONLY);
        walk_reader_fd(fd, flags, 5, &bulk);
        close(fd);
        fd = pipe_of(path);
        walk_reader_fd(fd, flags, 64, &piped);
        close(fd);
        wait(NULL);
        assert_same(&one, &bulk, path);
        assert_same(&one, &piped, path);
        free(one.r);
        free(bulk.r);
        free(piped.r);
    }
}

static char *data(const char *name)
{
    const char *d = getenv("SLEDTRACE_DATA");
    cr_assert_not_null(d, "SLEDTRACE_DATA is not set");
    char *p = malloc(strlen(d) + strlen(name) + 2);
    sprintf(p, "%s/%s", d, name);
    return p;
}

Test(batch, real_traces)
{
    const char *names[] = {"real-events.fdr", "real-lossy.fdr", "real-mt.fdr"};
    for (size_t i = 0; i < 3; i++) {
        char *p = data(names[i]);
        check_cursor(p);
        check_reader(p);
        free(p);
    }
}

/* Two threads, each over many small blocks (interleaved in the file), with CPU changes, TSC
 * wraps, call arguments, events and a loss marker between function records. */
static char *crafted(void)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    uint64_t tsc[2] = {1000, 5000};
    for (int b = 0; b < 12; b++) {
        for (int th = 0; th < 2; th++) {
            tg_block_begin(&g, 100 + th, 100, (uint16_t)(b % 3), tsc[th]);
            for (int i = 0; i < 40; i++) {
                tsc[th] += 7 + (uint64_t)i;
                tg_func(&g, 1 + (uint32_t)(i % 5), i % 2 ? STF_EXIT : STF_ENTER, tsc[th]);
                if (i == 10 && b % 2)
                    tg_new_cpu(&g, (uint16_t)(b + 5), tsc[th] -= 3);
                if (i == 20 && b == 4) {
                    tsc[th] += 1ull << 33; /* no delta holds it: a TSC wrap */
                    tg_func(&g, 9, STF_ENTER_ARGS, tsc[th]);
                    tg_call_arg(&g, 77);
                    tg_call_arg(&g, 78);
                }
                if (i == 30 && b == 6)
                    tg_custom(&g, tsc[th] += 2, "ev", 2);
                if (i == 31 && b == 7) {
                    uint8_t loss[STF_LOSS_SIZE];
                    stf_encode_loss(loss, 9);
                    tg_custom(&g, tsc[th] += 1, loss + STF_META_SIZE, STF_LOSS_PAYLOAD);
                }
                if (i == 35 && b == 8)
                    tg_typed(&g, tsc[th] += 1, 3, "t", 1);
            }
            tg_block_end(&g);
        }
    }
    char *p = tg_tmpname(".fdr");
    cr_assert_eq(tg_write(&g, p), 0);
    tg_free(&g);
    return p;
}

Test(batch, crafted_trace)
{
    char *p = crafted();
    check_cursor(p);
    check_reader(p);
    unlink(p);
    free(p);
}

/* A function record with action 5 in the middle of a run (lenient: a warning, the rest of the
 * block skipped), a function record before NewCPUId, and a last block cut inside a record. */
Test(batch, damaged_trace)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 7, 7, 0, 100);
    for (int i = 0; i < 20; i++)
        tg_func(&g, 3, i % 2 ? STF_EXIT : STF_ENTER, 110 + (uint64_t)i);
    uint8_t bad[8];
    stf_put32(bad, (4u << 4) | (5u << 1));
    stf_put32(bad + 4, 1);
    tg_raw(&g, bad, 8);
    tg_func(&g, 3, STF_ENTER, 200);
    tg_block_end(&g);
    tg_block_begin(&g, 7, 7, 1, 300);
    for (int i = 0; i < 9; i++)
        tg_func(&g, 4, i % 2 ? STF_EXIT : STF_ENTER, 310 + (uint64_t)i);
    tg_block_end(&g);
    char *p = tg_tmpname(".fdr");
    cr_assert_eq(tg_write(&g, p), 0);
    tg_free(&g);
    /* cut the last block 4 bytes into its last record */
    FILE *f = fopen(p, "r+b");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    cr_assert_eq(truncate(p, size - 4), 0);
    check_cursor(p);
    check_reader(p);
    struct walk w = {0};
    walk_cursor(p, 64, &w);
    cr_assert_eq(w.warnings, 2); /* the bad action, the torn block */
    free(w.r);
    unlink(p);
    free(p);
}

/* A clone walks every thread as its original does, and the original is unmoved by it. */
Test(batch, clone_walks_alike)
{
    char *p = data("real-mt.fdr");
    struct stf_cursor *c, *d;
    char err[256];
    cr_assert_eq(stf_cursor_open(&c, p, 0, err, sizeof err), STF_OK, "%s", err);
    cr_assert_eq(stf_cursor_clone(&d, c), STF_OK);
    cr_assert_eq(stf_cursor_threads(d), stf_cursor_threads(c));
    cr_assert_gt(stf_cursor_threads(c), 1);
    for (size_t th = stf_cursor_threads(c); th-- > 0;) {
        int32_t p1, t1, p2, t2;
        uint64_t n1, n2;
        cr_assert_eq(stf_cursor_select(c, th, &p1, &t1, &n1), STF_OK);
        cr_assert_eq(stf_cursor_select(d, th, &p2, &t2, &n2), STF_OK);
        cr_assert(p1 == p2 && t1 == t2 && n1 == n2);
        struct stf_item a, b;
        struct stf_func f[16];
        uint64_t seen = 0;
        for (;;) {
            size_t n = stf_cursor_funcs(d, f, 16);
            for (size_t i = 0; i < n; i++, seen++) {
                cr_assert_eq(stf_cursor_next(c, &a), STF_OK);
                cr_assert(a.kind == STF_K_FUNCTION && a.tsc == f[i].tsc && a.func_id == f[i].id &&
                          a.action == f[i].action);
            }
            if (n)
                continue;
            int r1 = stf_cursor_next(c, &a), r2 = stf_cursor_next(d, &b);
            cr_assert_eq(r1, r2);
            if (r1 != STF_OK)
                break;
            seen++;
            cr_assert(a.kind == b.kind && a.offset == b.offset && a.tsc == b.tsc);
        }
        cr_assert_eq(seen, n1);
    }
    stf_cursor_close(d);
    stf_cursor_close(c);
    free(p);
}

/* A reader that reads (a pipe) has no mapping to share: no clone, no dup. */
Test(batch, no_dup_without_mapping)
{
    char *p = data("real-mt.fdr");
    int fd = pipe_of(p);
    struct stf_reader *r, *d = (struct stf_reader *)&fd;
    cr_assert_eq(stf_reader_open_fd(&r, fd, 0), STF_OK);
    cr_assert_eq(stf_reader_dup(&d, r), STF_ERR_ARG);
    cr_assert_null(d);
    stf_reader_close(r);
    close(fd);
    wait(NULL);
    free(p);
}
