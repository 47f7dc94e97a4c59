/* ucontext coroutines: the runtime sees swapcontext, setcontext, makecontext and getcontext, so
 * that the tools can keep one call stack per coroutine (issue 23, item 12).
 *
 * Why. A program that switches stacks with swapcontext runs several call stacks on one thread:
 * coroutine A's frames stay open while B runs. The trace is one stream per thread, so without a
 * word from the runtime the tools would nest B's calls inside A's open frames (counts stay
 * exact, durations and the call tree are wrong). Here every switch records, in the switching
 * thread's stream, a typed event STF_TYPED_CONTEXT (format/stf.h) saying which context runs from
 * then on; the walker (tools/callstack.c) parks the current stack and resumes the target's.
 *
 * Context ids. A context is an execution context of the process, a stack of frames, not a
 * ucontext_t: the structure is only where a context saves itself while it does not run. Ids are
 * small numbers from one counter of the process, never reused:
 *  - a thread's own stack gets one at its first switch (ctx_cur, 0 until then);
 *  - makecontext(ucp) starts a new context: ucp gets a new id, even when ucp held another
 *    coroutine before (a coroutine pool making contexts again in the same structures), so a new
 *    coroutine never inherits a finished one's stack;
 *  - swapcontext(oucp, ucp) and getcontext(ucp) save the running context into the structure:
 *    the structure now stands for the running context's id;
 *  - a switch to a structure names its id; one never seen (a copy of a ucontext_t, the third
 *    argument of a signal handler) gets a new id.
 * The table from structure addresses to ids is open addressing over CTX_SLOTS slots, never
 * shrunk: an address keeps its slot, so its size is the number of distinct ucontext_t
 * addresses ever used (a structure malloc'd again at an old address reuses its slot). When 64
 * probes find no slot, the address itself, with STF_CTX_ADDRESS set, is the id (stable while
 * the structure is used for one coroutine; documented in stf.h).
 *
 * The end of a context. A context made by makecontext whose function returns resumes its
 * uc_link inside glibc (__start_context calls its own setcontext, which no interposition sees).
 * So makecontext gives glibc ctx_entry instead of the function, with the function and uc_link
 * as two extra leading arguments: ctx_entry calls the function, then records the switch to
 * uc_link (STF_CTX_RETURN) and returns into glibc's code, which resumes uc_link (or, when it is
 * NULL, ends the process with exit(0): its destructors complete the trace). The arguments all
 * travel in registers only up to 4 of the program's (6 in all): a makecontext with more is
 * passed on unchanged and its end is not seen (the walker then keeps the finished context's
 * empty stack and charges what uc_link runs to it until uc_link's next switch). ctx_entry adds
 * one frame, 16 bytes, to the coroutine's stack.
 *
 * getcontext and makecontext are interposed by assembly stubs that call C first and then jump to
 * glibc's function with the caller's registers and stack untouched: getcontext returns twice
 * (a later setcontext resumes it), so a C wrapper's frame would be gone by then; makecontext is
 * variadic, with no portable way to pass on any number of arguments. swapcontext and setcontext
 * are ordinary C wrappers: the wrapper's frame of a swapcontext lives on the saved context's own
 * stack, which stays as it is until that context is resumed, and the wrapper then returns into
 * it normally.
 *
 * Threads. A switch's event goes to the switching thread's stream. A context resumed on another
 * thread than the one that saved it continues there under the same id (ids are the process's),
 * but the tools walk each thread apart: they start its stack afresh on that thread (LIMIT,
 * README). swapcontext checks, when it returns (resumed, maybe on another thread), that the
 * thread's current id is its own; if it is not (the switch failed, or the context was resumed
 * through a copy of its ucontext_t), it records a correction (STF_CTX_RESUME). The thread
 * pointer is read again after the switch (cur_slot, opaque to the compiler), never kept in a
 * register across it.
 *
 * Cost. Nothing for a program that never calls these functions. A switch costs a table lookup
 * and a store (a few ns), and its event (40 bytes, what a typed-event sled costs: the hot path's
 * stp_event_typed, with its contract: no lock, no system call but the slow path's). No event is
 * recorded while tracing is not active in the process (str_tracing); the ids are kept anyway, so
 * a trace started later (a dlopen'd instrumented library) stays right.
 *
 * Limits (README). A switch made by a signal handler that interrupted the tracer is not recorded
 * (the hot path drops a nested typed event and counts it): a preemptive scheduler switching from
 * SIGALRM's handler may lose a switch then. Contexts switched by other means (a hand-written
 * assembly switch, boost.context) are not seen.
 *
 * Memory ordering: the table's keys and ids are relaxed atomics. A key is claimed with a CAS
 * (only atomicity matters: the slot carries no other data), and an id is read only by a switch
 * to a structure the program has itself handed over after it was saved: the program's own
 * synchronisation of that hand-over (needed for the ucontext_t's own bytes) orders the store of
 * the id before the load. ctx_next is a relaxed counter (it only hands out numbers). */
#include "str.h"
#include "stf.h"
#include "stp.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <ucontext.h>

#define STR_EXPORT __attribute__((visibility("default")))

enum { CTX_SLOTS = 1 << 16, CTX_PROBES = 64, CTX_WRAP_ARGS = 4 };

struct ctx_slot {
    _Atomic uintptr_t key; /* a ucontext_t's address; 0: free */
    _Atomic uint64_t id;   /* 0: not yet set */
};

static struct ctx_slot ctx_table[CTX_SLOTS]; /* 1 MiB of .bss, touched slot by slot */
static _Atomic uint64_t ctx_next = 1;

/* The running context's id on this thread, 0 until the thread's first switch. */
static __thread uint64_t ctx_cur __attribute__((tls_model("initial-exec")));

typedef int (*swap_fn)(ucontext_t *, const ucontext_t *);
typedef int (*set_fn)(const ucontext_t *);
typedef void (*make_fn)(ucontext_t *, void (*)(void), int, ...);
typedef int (*get_fn)(ucontext_t *);
static swap_fn real_swap;
static set_fn real_set;
/* Read by the assembly stubs: not static, but hidden. */
STR_HIDDEN make_fn str_ctx_real_make;
STR_HIDDEN get_fn str_ctx_real_get;

void str_context_early(void)
{
    *(void **)&real_swap = dlsym(RTLD_NEXT, "swapcontext");
    *(void **)&real_set = dlsym(RTLD_NEXT, "setcontext");
    *(void **)&str_ctx_real_make = dlsym(RTLD_NEXT, "makecontext");
    *(void **)&str_ctx_real_get = dlsym(RTLD_NEXT, "getcontext");
}

static void resolve(void)
{
    if (!real_swap || !real_set || !str_ctx_real_make || !str_ctx_real_get)
        str_context_early();
}

static uint64_t new_id(void)
{
    return atomic_fetch_add_explicit(&ctx_next, 1, memory_order_relaxed);
}

/* The slot of address key (claimed if free); NULL when CTX_PROBES slots are taken by others. */
static struct ctx_slot *slot_of(uintptr_t key)
{
    size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 48);
    for (size_t k = 0; k < CTX_PROBES; k++) {
        struct ctx_slot *s = &ctx_table[(h + k) & (CTX_SLOTS - 1)];
        uintptr_t have = atomic_load_explicit(&s->key, memory_order_relaxed);
        if (have == 0 && atomic_compare_exchange_strong_explicit(
                             &s->key, &have, key, memory_order_relaxed, memory_order_relaxed))
            return s;
        if (have == key)
            return s;
    }
    return NULL;
}

/* The id a switch to ucp names: the context saved into it, else a new one. */
static uint64_t id_of(const ucontext_t *ucp)
{
    struct ctx_slot *s = slot_of((uintptr_t)ucp);
    if (!s)
        return (uintptr_t)ucp | STF_CTX_ADDRESS;
    uint64_t id = atomic_load_explicit(&s->id, memory_order_relaxed);
    if (id != 0)
        return id;
    uint64_t fresh = new_id();
    if (atomic_compare_exchange_strong_explicit(&s->id, &id, fresh, memory_order_relaxed,
                                                memory_order_relaxed))
        return fresh;
    return id; /* set meanwhile by another thread */
}

/* ucp stands for context id from now on. */
static void set_id(const ucontext_t *ucp, uint64_t id)
{
    struct ctx_slot *s = slot_of((uintptr_t)ucp);
    if (s)
        atomic_store_explicit(&s->id, id, memory_order_relaxed);
}

/* This thread's ctx_cur, found anew at every call: a context may resume on another thread, and
 * the compiler must not keep the thread pointer of before a switch (the empty asm makes the
 * result opaque, and the function impure, so no call is merged with another). */
static __attribute__((noinline)) uint64_t *cur_slot(void)
{
    uint64_t *p = &ctx_cur;
    __asm__ volatile("" : "+r"(p));
    return p;
}

static uint64_t running(uint64_t *cur)
{
    if (*cur == 0)
        *cur = new_id();
    return *cur;
}

/* The switch's event, while the process is being traced. */
static void record(uint64_t to, uint64_t from, uint32_t how)
{
    if (!str_tracing())
        return;
    uint8_t p[STF_CONTEXT_PAYLOAD];
    stf_encode_context(p, to, from, how);
    stp_event_typed(STF_TYPED_CONTEXT, p, sizeof p);
}

STR_EXPORT int swapcontext(ucontext_t *oucp, const ucontext_t *ucp)
{
    resolve();
    uint64_t *cur = cur_slot();
    uint64_t me = running(cur);
    set_id(oucp, me); /* first: swapcontext(&x, &x) resumes the running context itself */
    uint64_t to = id_of(ucp);
    record(to, me, STF_CTX_SWAP);
    *cur = to;
    int rc = real_swap(oucp, ucp);
    /* Back in this context: resumed (perhaps on another thread), or the switch failed. */
    int e = errno;
    cur = cur_slot();
    if (*cur != me) {
        record(me, *cur, STF_CTX_RESUME);
        *cur = me;
    }
    errno = e;
    return rc;
}

STR_EXPORT int setcontext(const ucontext_t *ucp)
{
    resolve();
    uint64_t *cur = cur_slot();
    uint64_t me = running(cur);
    uint64_t to = id_of(ucp);
    record(to, me, STF_CTX_SET);
    *cur = to;
    int rc = real_set(ucp); /* returns only when it failed */
    int e = errno;
    record(me, to, STF_CTX_RESUME);
    *cur = me;
    errno = e;
    return rc;
}

/* ---- getcontext and makecontext ---------------------------------------------------------- */

STR_HIDDEN void str_ctx_get_note(const ucontext_t *ucp);
STR_HIDDEN int str_ctx_make_note(ucontext_t *ucp, void (*func)(void), int argc);
STR_HIDDEN void str_ctx_make_wrapped(ucontext_t *ucp, void (*func)(void), int argc, ...);

/* getcontext(ucp): ucp stands for the running context (called by the stub, before glibc's). */
STR_HIDDEN void str_ctx_get_note(const ucontext_t *ucp)
{
    resolve();
    set_id(ucp, running(cur_slot()));
}

/* makecontext(ucp, func, argc, ...): ucp starts a new context. Returns 1 when the stub is to
 * make it through str_ctx_make_wrapped (ctx_entry sees the function's return), 0 to jump to
 * glibc's makecontext as it was called. */
STR_HIDDEN int str_ctx_make_note(ucontext_t *ucp, void (*func)(void), int argc)
{
    (void)func;
    resolve();
    set_id(ucp, new_id());
    return argc >= 0 && argc <= CTX_WRAP_ARGS;
}

/* The switch to uc_link when a made context's function returns. */
static void ctx_returned(const ucontext_t *link)
{
    if (!link)
        return; /* glibc ends the process (exit(0)) */
    uint64_t *cur = cur_slot();
    uint64_t me = running(cur);
    uint64_t to = id_of(link);
    int e = errno;
    record(to, me, STF_CTX_RETURN);
    errno = e;
    *cur = to;
}

/* What glibc starts a made context with (through makecontext: it is called with what the program
 * gave, the function and uc_link first). */
static void ctx_entry(uintptr_t func, uintptr_t link, long a0, long a1, long a2, long a3)
{
    ((void (*)(long, long, long, long))func)(a0, a1, a2, a3);
    ctx_returned((const ucontext_t *)link);
}

/* Reached from the stub with makecontext's own registers and stack: argc <= CTX_WRAP_ARGS. The
 * arguments are passed on as glibc reads them (greg_t, 64 bits each). */
STR_HIDDEN void str_ctx_make_wrapped(ucontext_t *ucp, void (*func)(void), int argc, ...)
{
    long a[CTX_WRAP_ARGS] = {0};
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    str_ctx_real_make(ucp, (void (*)(void))ctx_entry, argc + 2, (long)(uintptr_t)func,
                      (long)(uintptr_t)ucp->uc_link, a[0], a[1], a[2], a[3]);
}

/* The stubs. Entered as the functions they stand for (rsp = 8 mod 16); each saves the argument
 * registers (and rax, the variadic call's vector count), calls its note with rsp = 0 mod 16,
 * restores everything and jumps on, so glibc's function (or str_ctx_make_wrapped) sees the
 * program's call exactly. */
__asm__(".pushsection .text\n"
        ".globl getcontext\n"
        ".type getcontext, @function\n"
        "getcontext:\n"
        "    .cfi_startproc\n"
        "    push %rdi\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    call str_ctx_get_note\n"
        "    pop %rdi\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    jmp *str_ctx_real_get(%rip)\n"
        "    .cfi_endproc\n"
        ".size getcontext, .-getcontext\n"
        "\n"
        ".globl makecontext\n"
        ".type makecontext, @function\n"
        "makecontext:\n"
        "    .cfi_startproc\n"
        "    push %rax\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    push %rdi\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    push %rsi\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    push %rdx\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    push %rcx\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    push %r8\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    push %r9\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    call str_ctx_make_note\n"
        "    mov %eax, %r11d\n"
        "    pop %r9\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    pop %r8\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    pop %rcx\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    pop %rdx\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    pop %rsi\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    pop %rdi\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    pop %rax\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    test %r11d, %r11d\n"
        "    jnz str_ctx_make_wrapped\n"
        "    jmp *str_ctx_real_make(%rip)\n"
        "    .cfi_endproc\n"
        ".size makecontext, .-makecontext\n"
        ".popsection\n");
