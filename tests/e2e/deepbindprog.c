/* dlopens libdeep.so (from the executable's directory) with RTLD_DEEPBIND (issue 23.9), records
 * main_work MAIN_CALLS times, calls deep_run(DEEP_CALLS, DEP_CALLS) in it, prints the counts
 * (flushed: stdio is not flushed on these paths), then ends the process from inside the library
 * with status 3, by argv[1]:
 *   _exit   the library's _exit(3)            _Exit   the library's _Exit(3)
 *   dep     _exit(3) in libdeepdep.so, a dependency loaded by the same dlopen
 *   exec    the library's execv of /bin/sh -c 'exit 3' (the shell, untraced, exits 3)
 *   lazy    as _exit, the library opened with RTLD_LAZY (its PLT slots not yet bound)
 * main is never instrumented. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

enum { MAIN_CALLS = 10, DEEP_CALLS = 700, DEP_CALLS = 300 };

KEEP void main_work(void)
{
    BARRIER();
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "_exit";
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n <= 0)
        return 2;
    path[n] = '\0';
    strcpy(strrchr(path, '/') + 1, "libdeep.so");
    int lazy = strcmp(how, "lazy") == 0;
    void *h = dlopen(path, (lazy ? RTLD_LAZY : RTLD_NOW) | RTLD_DEEPBIND);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 4;
    }
    void (*run)(long, long) = (void (*)(long, long))dlsym(h, "deep_run");
    void (*end)(const char *) = (void (*)(const char *))dlsym(h, "deep_end");
    if (!run || !end)
        return 5;
    for (int i = 0; i < MAIN_CALLS; i++)
        main_work();
    run(DEEP_CALLS, DEP_CALLS);
    printf("count main_work %d\ncount deep_run 1\ncount deep_work %d\ncount dep_work %d\n",
           MAIN_CALLS, DEEP_CALLS, DEP_CALLS);
    printf("threads 1\nthreadwork %d\n", MAIN_CALLS + 1 + DEEP_CALLS + DEP_CALLS);
    fflush(stdout);
    end(lazy ? "_exit" : how);
    return 6;
}
