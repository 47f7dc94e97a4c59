/* Loads ctorlib (argv[1]) ROUNDS times; each time its constructor's thread runs while dlopen
 * returns (and the runtime patches); the host waits until the thread has made a call, stops
 * it, dlcloses. How many of its calls were traced is not knowable (some come before the
 * patching), so it prints only "rounds N". */
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
        long (*calls)(void) = (long (*)(void))dlsym(h, "ctor_calls");
        if (!stop || !calls)
            return 4;
        for (int ms = 0; calls() == 0 && ms < 5000; ms++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        if (stop() <= 0)
            return 5;
        dlclose(h);
        done++;
    }
    printf("rounds %d\n", done);
    return 0;
}
