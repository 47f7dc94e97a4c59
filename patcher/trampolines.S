/* x86_64 trampolines for patched XRay sleds.
 *
 * A patched entry-type sled is `mov $id, %r10d; call stub` and the stub (a page mapped near the
 * object's text) does `jmp *target(%rip)` to one of the trampolines below. A patched exit sled is
 * `mov $id, %r10d; jmp stub` in place of the `ret`: the exit trampoline returns to the caller.
 *
 * What survives (xray-facts section 4):
 *  - entry, tail and log-args trampolines: every argument register (rdi rsi rdx rcx r8 r9, rax
 *    for varargs), r10, r11 and RFLAGS. RFLAGS is kept with lahf/seto + add/sahf rather than
 *    pushf/popf, which is far slower; DF is clear by the ABI and never set by the handler.
 *  - exit trampoline: rax and rdx (the integer return registers).
 *  - SSE/AVX/x87 state (xmm0-7 arguments, xmm0/xmm1/st0 return values): not saved here, because
 *    the handler (compiled with -mgeneral-regs-only) never touches it; its rare slow path
 *    reaches ordinary C only through stp_call_preserving_fpu, which XSAVEs everything.
 * An assembly fast path that recorded the common event here, saving only the registers it used
 * (commit 2949c71), was about 3% faster on scripts/bench.sh (23.99 vs 24.77 ns per call, medians
 * of 15 interleaved runs; rdtsc dominates both). Not worth a second copy of the signal-nesting
 * protocol: it lives in one place, the C handler (preload/hot.c).
 * Stack: entry-type trampolines are entered with rsp = 0 mod 16 (call from a function entry);
 * the exit trampoline with rsp = 8 mod 16. Every `call` below is made with rsp = 0 mod 16.
 * Unwinding: every instruction here has exact CFI (tested by single-stepping each one and
 * unwinding, tests/e2e/unwind.c). The stubs (one `jmp *` per kind, in a page near the patched
 * object) have none: a backtrace taken on that one instruction stops there.
 */
    .text

/* Every push and pop moves the CFA rule with it, one instruction at a time: a signal handler
 * that unwinds (a sampling profiler's backtrace(), asynchronous cancellation) can land on any
 * instruction here. tests/e2e/unwind.c single-steps every trampoline and unwinds at each. */
    .macro PUSHC reg
    push \reg
    .cfi_adjust_cfa_offset 8
    .endm

    .macro POPC reg
    pop \reg
    .cfi_adjust_cfa_offset -8
    .endm

    .macro PUSH_REST
    PUSHC %rdi
    PUSHC %rsi
    PUSHC %r8
    PUSHC %r9
    PUSHC %r10
    .endm

    .macro POP_REST
    POPC %r10
    POPC %r9
    POPC %r8
    POPC %rsi
    POPC %rdi
    .endm

/* Entry-type trampoline: 10 pushes (rsp = 0 mod 16 at the call). RFLAGS travels in ax
 * (lahf + seto) and comes back with add + sahf. */
    .macro ENTRY_TRAMPOLINE name, action, handler
    .globl \name
    .hidden \name
    .type \name, @function
    .p2align 4
\name:
    .cfi_startproc
    push %rax
    .cfi_adjust_cfa_offset 8
    lahf
    seto %al
    push %rax
    .cfi_adjust_cfa_offset 8
    push %rdx
    .cfi_adjust_cfa_offset 8
    push %rcx
    .cfi_adjust_cfa_offset 8
    push %r11
    .cfi_adjust_cfa_offset 8
    PUSH_REST
    .ifc \handler, stp_event_arg
    mov %rdi, %rsi                      /* the first argument is the one XRay logs */
    .else
    .ifc \handler, stp_event_args
    mov %rsp, %rsi                      /* the saved registers: stp_event_args reads them */
    .else
    mov $\action, %esi
    .endif
    .endif
    mov %r10d, %edi
    call \handler
    POP_REST
    pop %r11
    .cfi_adjust_cfa_offset -8
    pop %rcx
    .cfi_adjust_cfa_offset -8
    pop %rdx
    .cfi_adjust_cfa_offset -8
    pop %rax
    .cfi_adjust_cfa_offset -8
    add $0x7f, %al                      /* OF := (al == 1) */
    sahf                                /* SF ZF AF PF CF := ah */
    pop %rax
    .cfi_adjust_cfa_offset -8
    ret
    .cfi_endproc
    .size \name, . - \name
    .endm

    ENTRY_TRAMPOLINE stp_tramp_entry, 0, stp_event
    ENTRY_TRAMPOLINE stp_tramp_tail, 2, stp_event
    ENTRY_TRAMPOLINE stp_tramp_log_args, 3, stp_event_arg
    /* with a minimum duration (the runtime patches exits to these then): stp_event_min */
    ENTRY_TRAMPOLINE stp_tramp_tail_min, 2, stp_event_min
    /* functions that record their arguments (SLEDTRACE_ARGS): stp_event_args(id, saved), saved
     * pointing at r10 r9 r8 rsi rdi r11 rcx rdx (flags) rax, the pushes above from the last */
    ENTRY_TRAMPOLINE stp_tramp_entry_args, 0, stp_event_args

/* Exit trampoline: entered by jmp in place of ret (rsp = 8 mod 16). Keeps rax and rdx (the
 * integer return registers); 2 pushes and 8 bytes make the call aligned. */
    .macro EXIT_TRAMPOLINE name, target
    .globl \name
    .hidden \name
    .type \name, @function
    .p2align 4
\name:
    .cfi_startproc
    push %rax
    .cfi_adjust_cfa_offset 8
    push %rdx
    .cfi_adjust_cfa_offset 8
    sub $8, %rsp
    .cfi_adjust_cfa_offset 8
    mov %r10d, %edi
    mov $1, %esi
    call \target
    add $8, %rsp
    .cfi_adjust_cfa_offset -8
    pop %rdx
    .cfi_adjust_cfa_offset -8
    pop %rax
    .cfi_adjust_cfa_offset -8
    ret
    .cfi_endproc
    .size \name, . - \name
    .endm

    EXIT_TRAMPOLINE stp_tramp_exit, stp_event
    EXIT_TRAMPOLINE stp_tramp_exit_min, stp_event_min

/* Exit trampoline of the functions that record their return value (SLEDTRACE_ARGS):
 * stp_event_ret(id, saved), saved pointing at xmm0 xmm1 (their low 8 bytes: a double, or two
 * floats), a pad, rdx, rax. Keeps rax, rdx, xmm0 and xmm1 (the handler, built with
 * -mgeneral-regs-only, touches no SSE register; movq only reads them). Entered by jmp in place
 * of ret (rsp = 8 mod 16): 2 pushes and 24 bytes make the call aligned. */
    .globl stp_tramp_exit_args
    .hidden stp_tramp_exit_args
    .type stp_tramp_exit_args, @function
    .p2align 4
stp_tramp_exit_args:
    .cfi_startproc
    push %rax
    .cfi_adjust_cfa_offset 8
    push %rdx
    .cfi_adjust_cfa_offset 8
    sub $24, %rsp
    .cfi_adjust_cfa_offset 24
    movq %xmm0, 0(%rsp)
    movq %xmm1, 8(%rsp)
    mov %r10d, %edi
    mov %rsp, %rsi
    call stp_event_ret
    add $24, %rsp
    .cfi_adjust_cfa_offset -24
    pop %rdx
    .cfi_adjust_cfa_offset -8
    pop %rax
    .cfi_adjust_cfa_offset -8
    ret
    .cfi_endproc
    .size stp_tramp_exit_args, . - stp_tramp_exit_args

/* Event trampolines, reached by the call inside an enabled custom/typed event sled, whose own
 * pushes leave the stack at any alignment. They keep every caller-saved general register and
 * RFLAGS (the sled saved only its argument registers), align the stack through rbp, and call
 * stp_event_custom(ptr, len) or stp_event_typed(type, ptr, len) with the sled's arguments.
 * Unwinding: clang emits no CFI for the registers an event sled pushes (2 for a custom event,
 * 3 for a typed one: the shape verify.c proves), so the instrumented function's own CFI at the
 * sled is `pushed` bytes off. These trampolines describe their caller's frame as that CFI
 * expects it: the CFA is `pushed` bytes above the true one, and the return address and rbp are
 * found `pushed` bytes further down. */
    .macro EVENT_TRAMPOLINE name, handler, pushed
    .globl \name
    .hidden \name
    .type \name, @function
    .p2align 4
\name:
    .cfi_startproc
    .cfi_def_cfa_offset 8 + \pushed
    .cfi_offset %rip, -8 - \pushed
    push %rbp
    .cfi_adjust_cfa_offset 8
    .cfi_offset %rbp, -16 - \pushed
    mov %rsp, %rbp
    .cfi_def_cfa_register %rbp
    push %rax
    lahf
    seto %al
    push %rax
    push %rdi
    push %rsi
    push %rdx
    push %rcx
    push %r8
    push %r9
    push %r10
    push %r11
    and $-16, %rsp
    call \handler
    lea -80(%rbp), %rsp
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rcx
    pop %rdx
    pop %rsi
    pop %rdi
    pop %rax
    add $0x7f, %al
    sahf
    pop %rax
    pop %rbp
    .cfi_def_cfa %rsp, 8 + \pushed
    .cfi_restore %rbp
    ret
    .cfi_endproc
    .size \name, . - \name
    .endm

    EVENT_TRAMPOLINE stp_tramp_custom, stp_event_custom, 16
    EVENT_TRAMPOLINE stp_tramp_typed, stp_event_typed, 24

/* void stp_call_preserving_fpu(void (*fn)(void *), void *arg, void *stack)
 * Switches to `stack` (its top, 16-byte aligned; NULL: stays on the current one), saves the
 * whole extended state there (XSAVE with every XCR0 component, into a 64-byte aligned area of
 * stp_xsave_size bytes whose header is zeroed first, up to 11 KiB with AMX), or FXSAVE when
 * stp_xsave_size is 0, calls fn(arg), restores, and comes back. The CFA stays rbp-based
 * throughout, so unwinding from fn reaches the caller across the switch. */
    .globl stp_call_preserving_fpu
    .hidden stp_call_preserving_fpu
    .type stp_call_preserving_fpu, @function
    .p2align 4
stp_call_preserving_fpu:
    .cfi_startproc
    push %rbp
    .cfi_adjust_cfa_offset 8
    .cfi_offset %rbp, -16
    mov %rsp, %rbp
    .cfi_def_cfa_register %rbp
    push %rbx
    push %r12
    .cfi_offset %rbx, -24
    .cfi_offset %r12, -32
    mov %rdi, %rbx
    mov %rsi, %r12
    test %rdx, %rdx
    jz 3f
    mov %rdx, %rsp
3:
    mov stp_xsave_size(%rip), %eax
    test %eax, %eax
    jz 1f
    sub %rax, %rsp
    and $-64, %rsp
    xor %eax, %eax
    mov %rax, 512(%rsp)
    mov %rax, 520(%rsp)
    mov %rax, 528(%rsp)
    mov %rax, 536(%rsp)
    mov %rax, 544(%rsp)
    mov %rax, 552(%rsp)
    mov %rax, 560(%rsp)
    mov %rax, 568(%rsp)
    mov $-1, %eax
    mov $-1, %edx
    xsave64 (%rsp)
    mov %r12, %rdi
    call *%rbx
    mov $-1, %eax
    mov $-1, %edx
    xrstor64 (%rsp)
    jmp 2f
1:
    sub $512, %rsp
    and $-64, %rsp
    fxsave64 (%rsp)
    mov %r12, %rdi
    call *%rbx
    fxrstor64 (%rsp)
2:
    lea -16(%rbp), %rsp
    pop %r12
    .cfi_restore %r12
    pop %rbx
    .cfi_restore %rbx
    pop %rbp
    .cfi_def_cfa %rsp, 8
    .cfi_restore %rbp
    ret
    .cfi_endproc
    .size stp_call_preserving_fpu, . - stp_call_preserving_fpu

    .section .note.GNU-stack, "", @progbits
