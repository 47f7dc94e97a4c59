/* Thread names as the program sets them, for the sidecar's `thread` lines.
 *
 * The kernel's name of a thread (its comm) can be read back only by a system call the program's
 * sandbox may forbid (prctl, or /proc), so the runtime never asks: it watches the calls that set
 * one, pthread_setname_np and prctl(PR_SET_NAME) (threads.c interposes both), and keeps the name
 * per pthread_t. A thread that was never named has its creator's name, which the runtime takes
 * to be the program's (program_invocation_short_name, as the kernel truncates it). An entry is
 * dropped when a thread starts (threads.c), so a reused pthread_t never inherits a name.
 *
 * Threads: a mutex around the table; str_names_get_unlocked is the crash path's, which may not
 * wait for it.
 */
#include "str.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

enum { MAX_NAMES = 1024 };

static struct {
    pthread_t t;
    char name[16];
} names[MAX_NAMES];
static size_t nnames;
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
    if (i >= 0)
        clean(names[i].name, name);
    pthread_mutex_unlock(&names_lock);
}

void str_names_forget(pthread_t t)
{
    pthread_mutex_lock(&names_lock);
    long i = find(t);
    if (i >= 0)
        names[i] = names[--nnames];
    pthread_mutex_unlock(&names_lock);
}

static void get(pthread_t t, char out[16])
{
    long i = find(t);
    if (i >= 0)
        memcpy(out, names[i].name, 16);
    else
        clean(out, program_invocation_short_name);
}

void str_names_get(pthread_t t, char out[16])
{
    pthread_mutex_lock(&names_lock);
    get(t, out);
    pthread_mutex_unlock(&names_lock);
}

void str_names_get_unlocked(pthread_t t, char out[16])
{
    get(t, out);
}
