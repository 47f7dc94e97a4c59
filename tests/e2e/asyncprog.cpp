/* Thread per task (issue 24): main launches TASKS tasks with std::async(std::launch::async), in
 * waves of WAVE futures outstanding at once, then .get()s each wave's results before the next
 * starts. libstdc++ runs every launch::async task on a new std::thread, so the program has
 * TASKS + 1 threads that run instrumented code (main included).
 *
 * Task i runs task(i), which calls, reps(i) = 1 + i % 5 times each: pool::parse, the function
 * template pool::fold<long>, and a lambda local to task(); then pool::fold<unsigned> once. main
 * itself is instrumented (1 call). Counts are printed under their mangled names (the sidecar's,
 * as clang 14 mangles them; clang names a lambda in a function body `$_0`, local to the
 * translation unit), in progs.h's format:
 *     count _ZN4pool5parseEl <n>              pool::parse(long)
 *     count _ZN4pool4foldIlEET_S1_S1_ <n>     long pool::fold<long>(long, long)
 *     count _ZN4pool4foldIjEET_S1_S1_ <n>     unsigned int pool::fold<unsigned int>(...)
 *     count _ZZ4tasklENK3$_0clEl <n>          task(long)::$_0::operator()(long) const
 *     count _Z4taskl <n>                      task(long)
 * followed by the process's peak resident memory, read after the last join:
 *     vmhwm_kb <n>
 * Every result is checked against the same math done without calls; a wrong one exits 1.
 *
 * Built with -fxray-instruction-threshold=1, so the parts of libstdc++'s <future> and <thread>
 * that are instantiated here (std::thread::_State_impl<...>::_M_run, the future's shared state,
 * std::vector<std::future<long>>...) have sleds too: a run traced with SLEDTRACE_EXCLUDE='*std::*'
 * records exactly the counts printed, a run traced whole records those too (same counts for the
 * program's functions) plus libstdc++'s. */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <vector>

#include "progs.h"

#define NOTRACE __attribute__((xray_never_instrument, noinline))

enum { TASKS = 1000, WAVE = 16 };

NOTRACE static long reps(long i)
{
    return 1 + i % 5;
}

namespace pool
{
KEEP long parse(long x)
{
    BARRIER();
    return x * 7 + 1;
}

template <typename T> KEEP T fold(T acc, T x)
{
    BARRIER();
    return acc ^ (x + acc / 3);
}
} // namespace pool

KEEP long task(long i)
{
    auto step = [i](long k) __attribute__((noinline))
    {
        BARRIER();
        return k * i + 1;
    };
    long acc = 0;
    for (long k = 0; k < reps(i); k++) {
        acc = pool::fold<long>(acc, pool::parse(k));
        acc += step(k);
    }
    return acc + (long)pool::fold<unsigned>((unsigned)acc, 3u);
}

/* task(i) without calls, for the check. */
NOTRACE static long expected(long i)
{
    long acc = 0;
    for (long k = 0; k < reps(i); k++) {
        long x = k * 7 + 1;
        acc = acc ^ (x + acc / 3);
        acc += k * i + 1;
    }
    unsigned u = (unsigned)acc;
    return acc + (long)(unsigned)(u ^ (3u + u / 3));
}

NOTRACE static long vmhwm_kb()
{
    FILE *f = std::fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && std::fgets(line, sizeof line, f))
        if (std::strncmp(line, "VmHWM:", 6) == 0)
            kb = std::strtol(line + 6, nullptr, 10);
    if (f)
        std::fclose(f);
    return kb;
}

static const char *const kParse = "_ZN4pool5parseEl";
static const char *const kFoldLong = "_ZN4pool4foldIlEET_S1_S1_";
static const char *const kFoldUnsigned = "_ZN4pool4foldIjEET_S1_S1_";
static const char *const kLambda = "_ZZ4tasklENK3$_0clEl";
static const char *const kTask = "_Z4taskl";

int main()
{
    std::vector<std::future<long>> wave;
    std::vector<long> which;
    int bad = 0;
    for (long i = 0; i < TASKS; i++) {
        wave.push_back(std::async(std::launch::async, task, i));
        which.push_back(i);
        if (wave.size() == WAVE || i == TASKS - 1) {
            for (size_t w = 0; w < wave.size(); w++)
                bad |= wave[w].get() != expected(which[w]);
            wave.clear();
            which.clear();
        }
    }
    if (bad) {
        std::printf("a task computed a wrong result\n");
        return 1;
    }
    long steps = 0;
    for (long i = 0; i < TASKS; i++)
        steps += reps(i);
    std::printf("count %s %ld\n", kParse, steps);
    std::printf("count %s %ld\n", kFoldLong, steps);
    std::printf("count %s %ld\n", kLambda, steps);
    std::printf("count %s %d\n", kFoldUnsigned, TASKS);
    std::printf("count %s %d\n", kTask, TASKS);
    std::printf("count main 1\n");
    std::printf("threads %d\n", TASKS + 1);
    std::printf("threadwork 1\n"); /* main */
    for (long i = 0; i < TASKS; i++)
        std::printf("threadwork %ld\n", 2 + 3 * reps(i));
    std::printf("vmhwm_kb %ld\n", vmhwm_kb());
    return 0;
}
