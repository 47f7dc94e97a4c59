/* Host of libexitsplug.so (issue 23.8: destructors at exit). Its own instrumented function,
 * host_work, is called HOST_CALLS times in main and HOST_FINI_CALLS times from its own ELF
 * destructor. argv[1]:
 *   dlopen    dlopen the plugin (from the executable's directory) in main, never dlclose it
 *   dlclose   the same, and dlclose it before main returns (its destructors run in dlclose)
 *   exit      as dlopen; the plugin's ELF destructor calls exit(7) after its calls
 *   early     (exitshost-early) the plugin was dlopen'd before main by the constructor of a
 *             library linked into the executable (exitsload.c); main finds it with RTLD_NOLOAD
 * Prints the exact counts of every instrumented function (progs.h), all on the main thread, then
 * returns 0 (the exit mode ends with status 7). main and the destructors are never
 * instrumented. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

enum {
    HOST_CALLS = 10,
    HOST_FINI_CALLS = 20,
    PLUG_CALLS = 30,
    DTOR_CALLS = 1000,
    FINI_CALLS = 500
};

KEEP void host_work(void)
{
    BARRIER();
}

__attribute__((destructor, xray_never_instrument)) static void host_fini(void)
{
    for (int i = 0; i < HOST_FINI_CALLS; i++)
        host_work();
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "dlopen";
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n <= 0)
        return 2;
    path[n] = '\0';
    strcpy(strrchr(path, '/') + 1, "libexitsplug.so");
    int early = strcmp(how, "early") == 0;
    void *h = dlopen(path, early ? RTLD_NOW | RTLD_NOLOAD : RTLD_NOW);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 3;
    }
    long (*call)(long) = (long (*)(long))dlsym(h, "plug_call");
    void (*exit_at_fini)(int) = (void (*)(int))dlsym(h, "plug_exit_at_fini");
    if (!call || !exit_at_fini)
        return 4;
    for (int i = 0; i < HOST_CALLS; i++)
        host_work();
    if (call(PLUG_CALLS) != PLUG_CALLS)
        return 5;
    int exits = strcmp(how, "exit") == 0;
    if (exits)
        exit_at_fini(7);
    printf("count host_work %d\n", HOST_CALLS + HOST_FINI_CALLS);
    printf("count plug_call 1\n");
    printf("count plug_work %d\n", PLUG_CALLS + DTOR_CALLS);
    printf("count plug_fini %d\n", FINI_CALLS);
    if (exits)
        printf("count plug_exit_at_fini 1\n");
    printf("threads 1\nthreadwork %d\n",
           HOST_CALLS + HOST_FINI_CALLS + 1 + PLUG_CALLS + DTOR_CALLS + FINI_CALLS + exits);
    fflush(stdout);
    if (strcmp(how, "dlclose") == 0 && dlclose(h) != 0)
        return 6;
    if (early)
        dlclose(h); /* the RTLD_NOLOAD reference; the loader's keeps it loaded */
    return 0;
}
