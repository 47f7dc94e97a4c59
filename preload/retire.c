/* The end of a thread's recording: its exit (the pthread key's destructor), strict seccomp, a
 * clone sharing its TLS, and vfork, whose child records into buffers of its own that the parent
 * retires after it (part of the buffers module: buffers.c lists its files).
 *
 * Retiring a thread: its side ring is drained, it leaves the registry (O(1)), its name and counts
 * go to the exited threads' (final.c), and its last chunk is handed over as `final`: the writer
 * frees its buffers once that is written (queue.c). Asynchronous signals are blocked meanwhile
 * (block_async), so that no handler of the program runs while the registry lock or a half-made
 * change is held.
 *
 * Memory ordering: the cursor is the thread's TLS, gone once it exits: th->cursor is cleared
 * before the last chunk is handed over (release store of `handed`, acquire in queue.c drain). vfork's
 * switch of th->cursor is ordered with the writer by the registry lock; pos with release,
 * paired with the acquire in queue.c write_committed. Calls record.c, forks.c.
 */
#include "str.h"
#include "bufs.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Retires th, the calling thread's (TLS) buffers: its records go out, its counts are added to
 * the exited threads', the cursor is emptied. Asynchronous signals are blocked by the caller. */
static void retire(struct str_thread *th)
{
    struct str_tls *t = &str_tls;
    struct str_cursor *cur = &str_cursor;
    cur->nest++;
    str_drain_side(cur);
    char name[16];
    str_names_get(th->self, th->birth, name);
    pthread_mutex_lock(&str_registry_lock);
    /* O(1): a walk of the list here, under the lock, made 4000 live threads exiting at once
     * cost 4000^2/2 visits of as many pages (retire was 15% of that run's CPU). */
    if (th->pprev) { /* a vfork child's buffers are never registered */
        *th->pprev = th->next;
        if (th->next)
            th->next->pprev = th->pprev;
        th->pprev = NULL;
    }
    if (str_nnamed < MAX_NAMED) {
        str_named[str_nnamed] = (struct str_named){.pid = th->pid, .tid = th->tid};
        memcpy(str_named[str_nnamed++].name, name, sizeof name);
    }
    pthread_mutex_unlock(&str_registry_lock);
    int can_hand_over = 1;
    if (th->dropping) {
        /* Its last chunk is already handed over: wait for a free one to carry the gap's
         * marker. */
        uint64_t tsc = str_now();
        can_hand_over = str_next_chunk(th, 1);
        if (can_hand_over) {
            str_start_block(cur, th, tsc);
            str_end_gap(cur, th);
        }
    } else if (str_cfg.policy != STR_FLIGHT &&
               !str_in_chunk(str_cur_chunk(th),
                             atomic_load_explicit(&cur->pos, memory_order_relaxed))) {
        /* Between two chunks (a switch cut short: record.c's top): the final hand-over needs
         * the next one, written, to carry its flag (it holds nothing of the thread's). */
        can_hand_over = str_next_chunk(th, 1);
    }
    atomic_fetch_add_explicit(&str_exited_discarded, th->discarded, memory_order_relaxed);
    atomic_fetch_add_explicit(&str_exited_lost_nested, th->lost_nested, memory_order_relaxed);
    atomic_fetch_add_explicit(&str_exited_dropped, t->dropped, memory_order_relaxed);
    t->dropped = 0;
    t->th = NULL;
    /* The cursor is this thread's TLS, gone once it exits: nothing may read it through th from
     * now on (the flight policy's dump of an exited thread's ring, write_committed). hand_over
     * reads the cursor here, then publishes th with the chunk (release store of `handed`,
     * acquire in queue.c drain). */
    uintptr_t last = atomic_load_explicit(&cur->pos, memory_order_relaxed);
    th->cursor = NULL;
    if (can_hand_over && atomic_load_explicit(&str_state, memory_order_relaxed) == ST_ACTIVE)
        str_hand_over_at(th, last, 1); /* the flush thread frees th after writing it */
    atomic_store_explicit(&cur->end, 0, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&cur->pos, 0, memory_order_relaxed);
    cur->nest--;
}

/* pthread key destructor: the thread is exiting. */
void str_thread_exit(void *arg)
{
    struct str_thread *th = arg;
    struct str_tls *t = &str_tls;
    int saved = errno;
    if (!th || (t->th != th && !(t->held && t->fork_th == th)))
        return;
    /* No handler runs until the thread is retired (block_async): not while the lock is held,
     * nor between leaving the registry and handing the last chunk over (a handler calling _exit
     * there would find the thread's records nowhere). */
    sigset_t mask;
    block_async(&mask);
    if (t->held) {
        /* A held fork child's thread is ending (str_thread_strict and str_thread_share end the
         * hold before they get here): none of the code its fork interrupted runs again. Its
         * recording goes onto its cursor, the parent's buffers go; th may be those (the key's
         * value in a child that has recorded nothing): then there is nothing to retire. */
        str_end_hold(1);
        if (t->th != th) {
            pthread_sigmask(SIG_SETMASK, &mask, NULL);
            errno = saved;
            return;
        }
    }
    t->dead = 1;
    /* Before the buffers are handed over: once their last chunk is written, the flush thread
     * may give their slot, alternate stack included, to the next thread. */
    if (!str_altstack_thread_exit())
        th->slot_lost = 1;
    retire(th);
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    errno = saved;
}

void str_thread_share(void)
{
    str_tls.shared = 1;
    str_thread_strict();
}

void str_thread_unshare(void)
{
    str_tls.shared = 0;
    str_tls.dead = 0; /* the next event registers the thread afresh */
    str_thread_unstrict();
}

/* vfork: see str.h. Nothing is done unless the thread is tracing, outside the tracer (a vfork
 * from a handler that interrupted it leaves everything as it is: the child then records
 * nothing, see refill) and not already vforking or shared. The registry lock orders the switch
 * of th->cursor with the flush thread, which reads a thread's committed records through it. */
void str_vfork_begin(void)
{
    struct str_tls *t = &str_tls;
    struct str_cursor *c = &str_cursor, *keep = &t->vfork_cursor;
    if (t->vfork) {
        t->vfork++; /* a vfork in a vfork child: its child records as the child's, see end */
        return;
    }
    int saved = errno;
    if (t->held && c->nest == 0) {
        /* A held fork child outside the tracer: no interrupted level is left, and the vfork
         * child must not end the hold in its parent's memory (hot.c would, at its first event). */
        sigset_t mask;
        block_async(&mask);
        str_end_hold(1);
        pthread_sigmask(SIG_SETMASK, &mask, NULL);
    }
    if (t->shared || t->dead || c->nest != 0 ||
        atomic_load_explicit(&str_state, memory_order_acquire) != ST_ACTIVE ||
        (int32_t)syscall(SYS_getpid) != str_pid) {
        errno = saved;
        return;
    }
    sigset_t mask;
    block_async(&mask);
    c->nest++;
    str_drain_side(c);
    c->nest--;
    pthread_mutex_lock(&str_registry_lock);
    keep->last_tsc = c->last_tsc;
    keep->nest = 0;
    atomic_store_explicit(&keep->stable, atomic_load_explicit(&c->stable, memory_order_relaxed),
                          memory_order_relaxed);
    keep->side_r = c->side_r;
    atomic_store_explicit(&keep->side_w, atomic_load_explicit(&c->side_w, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(&keep->end, atomic_load_explicit(&c->end, memory_order_relaxed),
                          memory_order_relaxed);
    /* Release: pairs with the acquire in write_committed, which reads pos through th->cursor. */
    atomic_store_explicit(&keep->pos, atomic_load_explicit(&c->pos, memory_order_relaxed),
                          memory_order_release);
    if (t->th)
        t->th->cursor = keep;
    pthread_mutex_unlock(&str_registry_lock);
    t->vfork_th = t->th;
    t->vfork_dropped = t->dropped;
    t->th = NULL;
    t->dropped = 0;
    atomic_store_explicit(&c->end, 0, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&c->pos, 0, memory_order_relaxed);
    c->side_r = 0;
    atomic_store_explicit(&c->side_w, 0, memory_order_relaxed);
    t->vfork = 1;
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    errno = saved;
}

/* In the parent once vfork has returned (or failed): the child has exec'd or ended, and the
 * buffers it recorded into (t->th, not registered) are retired as an exiting thread's would
 * be, by this thread, on the cursor the child left. Then the thread's own state comes back. */
void str_vfork_end(void)
{
    struct str_tls *t = &str_tls;
    struct str_cursor *c = &str_cursor, *keep = &t->vfork_cursor;
    if (!t->vfork)
        return;
    if (t->vfork > 1) {
        t->vfork--;
        return;
    }
    int saved = errno;
    sigset_t mask;
    block_async(&mask);
    if (t->th)
        retire(t->th);
    /* The child may have left the cursor anywhere (killed inside the tracer, or exec'd from a
     * handler): all of it is put back. */
    c->nest = 0;
    pthread_mutex_lock(&str_registry_lock);
    atomic_store_explicit(&c->end, 0, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&c->pos, atomic_load_explicit(&keep->pos, memory_order_relaxed),
                          memory_order_release);
    c->last_tsc = keep->last_tsc;
    c->side_r = keep->side_r;
    atomic_store_explicit(&c->stable, atomic_load_explicit(&keep->stable, memory_order_relaxed),
                          memory_order_release);
    atomic_store_explicit(&c->side_w, atomic_load_explicit(&keep->side_w, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&c->end, atomic_load_explicit(&keep->end, memory_order_relaxed),
                          memory_order_relaxed);
    t->th = t->vfork_th;
    if (t->th)
        t->th->cursor = c;
    pthread_mutex_unlock(&str_registry_lock);
    t->dropped = t->vfork_dropped;
    t->vfork_th = NULL;
    t->vfork = 0;
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    errno = saved;
}

void str_thread_strict(void)
{
    struct str_tls *t = &str_tls;
    if (t->held) {
        /* A held fork child's recording goes onto its cursor, to be retired with it; the
         * interrupted code may still run (strict mode entered from the handler that forked):
         * the parent's buffers stay mapped. */
        sigset_t mask;
        block_async(&mask);
        str_end_hold(0);
        pthread_sigmask(SIG_SETMASK, &mask, NULL);
    }
    if (t->th)
        str_thread_exit(t->th);
    atomic_signal_fence(memory_order_seq_cst);
    str_cursor.nest = STR_NEST_STRICT;
}

void str_thread_unstrict(void)
{
    str_cursor.nest = 0;
}
