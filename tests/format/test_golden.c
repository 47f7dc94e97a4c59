/* Golden outputs of every trace-reading subcommand on a real trace checked in beside this file:
 * tests/format/data/real-mt.fdr (+ .syms), recorded by libsledtrace.so from the bench program
 * fib_mt (2 threads x fib(6): 2 x 25 fib calls). Each line of data/golden/commands.txt is
 * NAME|ARGS; the tool's stdout for ARGS, run in data/, must equal data/golden/NAME.out byte for
 * byte. scripts/update-goldens.sh rewrites the goldens after an intended output change. */
#include "toolrun.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *data_dir(void)
{
    const char *d = getenv("SLEDTRACE_DATA");
    cr_assert(d && *d, "SLEDTRACE_DATA not set");
    return d;
}

Test(golden, every_command_matches)
{
    cr_assert_eq(chdir(data_dir()), 0);
    char *list = tr_slurp("golden/commands.txt");
    int n = 0;
    for (char *line = strtok(list, "\n"); line; line = strtok(NULL, "\n")) {
        char *bar = strchr(line, '|');
        cr_assert(bar, "commands.txt: no '|' in \"%s\"", line);
        *bar = '\0';
        const char *argv[16] = {tr_bin()};
        int argc = 1;
        char *save = NULL;
        for (char *a = strtok_r(bar + 1, " ", &save); a; a = strtok_r(NULL, " ", &save)) {
            cr_assert_lt(argc, 15);
            argv[argc++] = a;
        }
        struct tr_out r = tr_run(argv);
        cr_assert_eq(r.code, 0, "%s: exit %d: %s", line, r.code, r.e);
        char path[256];
        snprintf(path, sizeof path, "golden/%s.out", line);
        char *want = tr_slurp(path);
        cr_assert_str_eq(r.o, want, "%s: output differs from %s", line, path);
        free(want);
        tr_out_free(&r);
        n++;
    }
    cr_assert_eq(n, 15);
    free(list);
}

/* The numbers the program knows, independent of the goldens: 2 x 25 fib calls, 2 workers. */
Test(golden, known_call_counts)
{
    cr_assert_eq(chdir(data_dir()), 0);
    const char *argv[] = {tr_bin(), "account", "real-mt.fdr", "--format", "csv", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "%s", r.e);
    cr_assert(strstr(r.o, "\nfib,1,50,"), "%s", r.o);
    cr_assert(strstr(r.o, "\nworker,3,2,"), "%s", r.o);
    cr_assert(strstr(r.o, "\nmain,2,1,"), "%s", r.o);
    tr_out_free(&r);
}
