/* Linked into exitshost-early: its constructor, run by the dynamic loader before main (and
 * before __libc_start_main registers the loader's _dl_fini on exit's list), dlopens
 * libexitsplug.so from the executable's directory, as a framework loading its plugins at
 * start-up would. The plugin's C++ static object is then destroyed from inside _dl_fini. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void *exitsload_handle;

__attribute__((constructor)) static void exitsload_init(void)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n <= 0)
        return;
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    if (!slash)
        return;
    strcpy(slash + 1, "libexitsplug.so");
    exitsload_handle = dlopen(path, RTLD_NOW);
}
