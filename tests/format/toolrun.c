/* See toolrun.h. */
#include "toolrun.h"

#include "stf.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tracegen.h"

char *tr_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int c;
    while ((c = fgetc(f)) != EOF) {
        if (n + 2 > cap) {
            cap = cap ? cap * 2 : 4096;
            buf = realloc(buf, cap);
            cr_assert(buf);
        }
        buf[n++] = (char)c;
    }
    fclose(f);
    if (!buf)
        buf = calloc(1, 1);
    buf[n] = '\0';
    return buf;
}

struct tr_out tr_run(const char *const *argv)
{
    char *po = tg_tmpname(".out"), *pe = tg_tmpname(".err");
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int fo = open(po, O_WRONLY | O_TRUNC), fe = open(pe, O_WRONLY | O_TRUNC);
        if (fo < 0 || fe < 0)
            _exit(120);
        dup2(fo, 1);
        dup2(fe, 2);
        execv(argv[0], (char *const *)argv);
        _exit(121);
    }
    int st;
    struct rusage ru;
    cr_assert_eq(wait4(pid, &st, 0, &ru), pid);
    struct tr_out r = {tr_slurp(po), tr_slurp(pe),
                       WIFEXITED(st) ? WEXITSTATUS(st) : 200 + WTERMSIG(st), ru.ru_maxrss};
    unlink(po);
    unlink(pe);
    free(po);
    free(pe);
    return r;
}

void tr_out_free(struct tr_out *r)
{
    free(r->o);
    free(r->e);
}

const char *tr_bin(void)
{
    const char *b = getenv("SLEDTRACE_BIN");
    cr_assert(b && *b, "SLEDTRACE_BIN not set");
    return b;
}

void tr_remove_trace(char *p)
{
    char *s = stf_syms_path_for(p);
    unlink(s);
    unlink(p);
    free(s);
    free(p);
}

void tr_write_syms(const char *trace, const char *text)
{
    char *s = stf_syms_path_for(trace);
    FILE *f = fopen(s, "w");
    cr_assert(f, "%s", s);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0, "%s", s);
    free(s);
}

char *tr_write_trace(const struct tg *g, bool with_syms)
{
    char *p = tg_tmpname(".fdr");
    cr_assert_eq(tg_write(g, p), 0);
    if (with_syms) {
        tr_write_syms(p, "sledtrace-syms\t1\no\t0\t0x0\t/bin/prog\nf\t0\t1\t0x1000\tmain\n"
                         "f\t0\t2\t0x1100\tf\nf\t0\t3\t0x1200\t\n");
    } else {
        char *s = stf_syms_path_for(p);
        unlink(s);
        free(s);
    }
    return p;
}

const char *tr_llvm_xray(void)
{
    const char *x = getenv("LLVM_XRAY");
    if (!x || !*x)
        cr_skip_test("llvm-xray not found");
    return x;
}
