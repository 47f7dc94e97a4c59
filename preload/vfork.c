/* Children that share the program's memory: vfork, and clone with CLONE_VM.
 *
 * vfork. The child runs in its parent's memory, on the vforking thread's TLS (the same fs
 * base), while that thread is suspended until the child execs or ends. Left alone, the child
 * would append its records to its parent's current chunk, as the parent's. The library
 * interposes vfork (and glibc's alias __vfork): before the system call str_vfork_begin puts
 * the thread's cursor and buffers aside (retire.c), so the child's first event finds no
 * buffer and its slow path gives the child buffers of its own, labelled with its pid and tid;
 * after the call, in the parent, str_vfork_end retires those (their records go out as a thread
 * of the parent's trace, with the child's pid) and puts the thread's own state back. The child
 * takes no lock and calls nothing that the parent must undo.
 *
 * The wrapper is assembly, as glibc's own vfork is: the child returns from it first and reuses
 * the stack below the caller's frame, so the parent may keep nothing there across the system
 * call; the return address waits in %rdi, which the kernel keeps for the parent. The wrapper
 * makes the system call itself (glibc's vfork is that one call). It preserves everything the
 * ABI asks a function to preserve, and errno (the hooks keep it; a failure sets it).
 *
 * clone. glibc's clone(fn, stack, flags, arg, ...) is interposed:
 *  - CLONE_VM | CLONE_VFORK without CLONE_SETTLS: the child runs fn on the caller's TLS while
 *    the caller waits, as with vfork; the same two hooks surround the call.
 *  - CLONE_VM without CLONE_SETTLS (and without CLONE_VFORK): the child runs on the caller's
 *    TLS at the same time as the caller. No per-event path can tell the two apart without a
 *    system call, so the caller is retired at the clone (its records so far go out) and from
 *    then on neither is traced: every event of either is counted (str_shared_dropped, hot.c)
 *    and the count is reported at exit with its cause. A failed clone undoes that.
 *  - anything else (a new thread with its own TLS, a copy of the memory) is left alone: the
 *    slow path recognises a new process by its pid (forks.c).
 * Not seen: children made by a raw system call (syscall(SYS_vfork), syscall(SYS_clone)): a
 * vfork child made so still records into its parent's chunk, as the parent.
 */
#include "str.h"

#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <sys/types.h>

#define STR_EXPORT __attribute__((visibility("default")))

/* The parent's side of vfork: rax is the system call's result. Returns what vfork returns. */
STR_HIDDEN long str_vfork_parent(long rax);
long str_vfork_parent(long rax)
{
    str_vfork_end();
    if (rax < 0 && rax > -4096) {
        errno = (int)-rax;
        return -1;
    }
    return rax;
}

/* vfork: (entry: %rsp = return address, %rsp + 8 aligned to 16)
 *   call str_vfork_begin (aligned), pop the return address into %rdi, vfork, push it back;
 *   the child (0) returns; the parent calls str_vfork_parent(result) and returns its value. */
_Static_assert(SYS_vfork == 58, "the wrapper below says 58");
__asm__(".text\n"
        ".globl vfork\n"
        ".type vfork, @function\n"
        ".globl __vfork\n"
        ".type __vfork, @function\n"
        "vfork:\n"
        "__vfork:\n"
        "    .cfi_startproc\n"
        "    subq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    call str_vfork_begin\n"
        "    addq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    popq %rdi\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    .cfi_register %rip, %rdi\n"
        "    movl $58, %eax\n"
        "    syscall\n"
        "    pushq %rdi\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    .cfi_rel_offset %rip, 0\n"
        "    testq %rax, %rax\n"
        "    jz 1f\n"
        "    subq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    movq %rax, %rdi\n"
        "    call str_vfork_parent\n"
        "    addq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "1:  ret\n"
        "    .cfi_endproc\n"
        ".size vfork, . - vfork\n"
        ".size __vfork, . - __vfork\n");

typedef int (*clone_fn)(int (*)(void *), void *, int, void *, ...);

STR_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
    static clone_fn real;
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "clone");
    /* The optional arguments are read whether given or not, as glibc's clone reads the
     * registers that carry them. */
    va_list ap;
    va_start(ap, arg);
    pid_t *ptid = va_arg(ap, pid_t *);
    void *tls = va_arg(ap, void *);
    pid_t *ctid = va_arg(ap, pid_t *);
    va_end(ap);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if (!(flags & CLONE_VM) || (flags & CLONE_SETTLS))
        return real(fn, stack, flags, arg, ptid, tls, ctid);
    if (flags & CLONE_VFORK) {
        str_vfork_begin();
        int r = real(fn, stack, flags, arg, ptid, tls, ctid);
        int e = errno;
        str_vfork_end();
        errno = e;
        return r;
    }
    int e = errno;
    str_thread_share();
    errno = e;
    int r = real(fn, stack, flags, arg, ptid, tls, ctid);
    if (r < 0) {
        e = errno;
        str_thread_unshare();
        errno = e;
    }
    return r;
}
