/* Loads ctorlib (argv[1]) ROUNDS times; each time its constructor's thread runs while dlopen
 * returns (and the runtime patches), the host waits 2 ms, stops the thread, dlcloses. Prints
 * the calls of ctor_fib made while traced is not knowable (some before patching), so only
 * "rounds N" and the status count. */
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

enum { ROUNDS = 32 };

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int done = 0;
    for (int r = 0; r < ROUNDS; r++) {
        void *h = dlopen(argv[1], RTLD_NOW);
        if (!h)
            return 3;
        long (*stop)(void) = (long (*)(void))dlsym(h, "ctor_stop");
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        if (!stop || stop() <= 0)
            return 4;
        dlclose(h);
        done++;
    }
    printf("rounds %d\n", done);
    return 0;
}
