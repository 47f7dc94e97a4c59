/* Thread names as the program sets them, for the sidecar's `thread` lines.
 *
 * The kernel's name of a thread (its comm) can be read back only by a system call the program's
 * sandbox may forbid (prctl, or /proc), so the runtime never asks: it watches the calls that set
 * one, pthread_setname_np and prctl(PR_SET_NAME) (threads.c interposes both), and keeps the name
 * per pthread_t. A thread that was never named has its creator's name, which the runtime takes
 * to be the program's (program_invocation_short_name, as the kernel truncates it). pthread_t
 * values are reused once a thread is joined: every name carries a sequence number, and a thread
 * takes only a name given after its pthread_create began (str_thread_birth, census.c), never
 * one its pthread_t had in an earlier thread.
 *
 * Threads: a mutex around the table; str_names_get_unlocked is the crash path's, which may not
 * wait for it.
 */
#include "str.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

enum { MAX_NAMES = 1024 };

static struct {
    pthread_t t;
    uint64_t seq;
    char name[16];
} names[MAX_NAMES];
static size_t nnames;
static _Atomic uint64_t seq;

uint64_t str_names_seq(void)
{
    return atomic_fetch_add_explicit(&seq, 1, memory_order_relaxed) + 1;
}
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;

/* name as the kernel keeps it: at most 15 bytes; control bytes (a sidecar line ends at a
 * newline) as '?'. */
static void clean(char out[16], const char *name)
{
    size_t i = 0;
    for (; i < 15 && name && name[i]; i++)
        out[i] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '?' : name[i];
    out[i] = '\0';
}

static long find(pthread_t t)
{
    for (size_t i = 0; i < nnames; i++)
        if (pthread_equal(names[i].t, t))
            return (long)i;
    return -1;
}

void str_names_set(pthread_t t, const char *name)
{
    pthread_mutex_lock(&names_lock);
    long i = find(t);
    if (i < 0 && nnames < MAX_NAMES) {
        i = (long)nnames++;
        names[i].t = t;
    }
    if (i >= 0) {
        clean(names[i].name, name);
        names[i].seq = str_names_seq();
    }
    pthread_mutex_unlock(&names_lock);
}

static void get(pthread_t t, uint64_t birth, char out[16])
{
    long i = find(t);
    if (i >= 0 && names[i].seq > birth)
        memcpy(out, names[i].name, 16);
    else
        clean(out, program_invocation_short_name);
}

void str_names_get(pthread_t t, uint64_t birth, char out[16])
{
    pthread_mutex_lock(&names_lock);
    get(t, birth, out);
    pthread_mutex_unlock(&names_lock);
}

void str_names_get_unlocked(pthread_t t, uint64_t birth, char out[16])
{
    get(t, birth, out);
}
