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
 *    neither the fast path below nor the general handler (compiled with -mgeneral-regs-only)
 *    touches it; the handler's rare slow path reaches ordinary C only through
 *    stp_call_preserving_fpu, which XSAVEs everything.
 * Fast path: the common event (see struct stp_cursor in stp.h) is recorded right here, saving
 * only the four or five registers it uses; the store count, not the instruction count, is what
 * costs on these cores. Anything unusual goes to the general C handler stp_event().
 * Stack: entry-type trampolines are entered with rsp = 0 mod 16 (call from a function entry);
 * the exit trampoline with rsp = 8 mod 16. Every `call` below is made with rsp = 0 mod 16.
 * Signals: see preload/hot.c for the nesting protocol the fast path follows.
 */
#include "stp.h"

    .text

/* FAST action, slow, finish: the fast path (see struct stp_cursor in stp.h). Uses rax, rdx, rcx,
 * r11 and RFLAGS only; the id is in r10d. Jumps to `slow` (nest back to 0) when the general
 * handler must do the work, to `finish` (nest still 1) when a signal handler queued side-ring
 * events meanwhile; falls through when done. */
    .macro FAST action, slow, finish
    movq stp_cursor@GOTTPOFF(%rip), %rcx
    movl %fs:STP_CUR_SIDE_R(%rcx), %eax
    cmpl %fs:STP_CUR_SIDE_W(%rcx), %eax
    jne \slow
    cmpl $0, %fs:STP_CUR_NEST(%rcx)
    jne \slow
    movl $1, %fs:STP_CUR_NEST(%rcx)
    rdtsc
    shl $32, %rdx
    or %rdx, %rax                       /* rax = tsc */
    mov %rax, %rdx
    sub %fs:STP_CUR_LAST(%rcx), %rdx    /* rdx = delta */
    mov %rdx, %r11
    shr $32, %r11
    jnz 8f                              /* needs a TSCWrap */
    mov %fs:STP_CUR_POS(%rcx), %r11
    add $8, %r11
    cmp %fs:STP_CUR_END(%rcx), %r11
    ja 8f                               /* no room (or no chunk, or a rotation request) */
    mov %rax, %fs:STP_CUR_LAST(%rcx)
    shl $32, %rdx
    mov %r10d, %eax
    shl $4, %eax
    or $(\action << 1), %eax
    or %rax, %rdx
    mov %rdx, -8(%r11)                  /* the record */
    mov %r11, %fs:STP_CUR_POS(%rcx)     /* then publish it */
    movl %fs:STP_CUR_SIDE_R(%rcx), %eax
    cmpl %fs:STP_CUR_SIDE_W(%rcx), %eax
    jne \finish
    movl $0, %fs:STP_CUR_NEST(%rcx)
    jmp 9f
8:
    movl $0, %fs:STP_CUR_NEST(%rcx)
    jmp \slow
9:
    .endm

    .macro PUSH_REST
    push %rdi
    push %rsi
    push %r8
    push %r9
    push %r10
    .endm

    .macro POP_REST
    pop %r10
    pop %r9
    pop %r8
    pop %rsi
    pop %rdi
    .endm

/* Entry-type trampoline: 5 pushes (rsp = 8 mod 16), plus 5 more on the general path (0 mod 16
 * at its call). RFLAGS travels in ax (lahf + seto) and comes back with add + sahf. */
    .macro ENTRY_TRAMPOLINE name, action
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
    FAST \action, 1f, 2f
0:
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
    .cfi_adjust_cfa_offset 40
1:
    PUSH_REST
    .cfi_adjust_cfa_offset 40
    mov %r10d, %edi
    mov $\action, %esi
    call stp_event
    POP_REST
    .cfi_adjust_cfa_offset -40
    jmp 0b
2:
    PUSH_REST
    .cfi_adjust_cfa_offset 40
    call stp_event_finish
    POP_REST
    .cfi_adjust_cfa_offset -40
    jmp 0b
    .cfi_endproc
    .size \name, . - \name
    .endm

    ENTRY_TRAMPOLINE stp_tramp_entry, 0
    ENTRY_TRAMPOLINE stp_tramp_tail, 2

/* Exit trampoline: entered by jmp in place of ret (rsp = 8 mod 16). Keeps rax and rdx (the
 * return registers) and, so that unusual conventions survive too, rcx, r11 and on the general
 * path rdi, rsi, r8, r9, r10. 4 pushes (8 mod 16), 5 more on the general path (0 mod 16). */
    .globl stp_tramp_exit
    .hidden stp_tramp_exit
    .type stp_tramp_exit, @function
    .p2align 4
stp_tramp_exit:
    .cfi_startproc
    push %rax
    .cfi_adjust_cfa_offset 8
    push %rdx
    .cfi_adjust_cfa_offset 8
    push %rcx
    .cfi_adjust_cfa_offset 8
    push %r11
    .cfi_adjust_cfa_offset 8
    FAST 1, 1f, 2f
0:
    pop %r11
    .cfi_adjust_cfa_offset -8
    pop %rcx
    .cfi_adjust_cfa_offset -8
    pop %rdx
    .cfi_adjust_cfa_offset -8
    pop %rax
    .cfi_adjust_cfa_offset -8
    ret
    .cfi_adjust_cfa_offset 32
1:
    PUSH_REST
    .cfi_adjust_cfa_offset 40
    mov %r10d, %edi
    mov $1, %esi
    call stp_event
    POP_REST
    .cfi_adjust_cfa_offset -40
    jmp 0b
2:
    PUSH_REST
    .cfi_adjust_cfa_offset 40
    call stp_event_finish
    POP_REST
    .cfi_adjust_cfa_offset -40
    jmp 0b
    .cfi_endproc
    .size stp_tramp_exit, . - stp_tramp_exit

/* Log-args entry: always the general path (the record is followed by a CallArgument). */
    .globl stp_tramp_log_args
    .hidden stp_tramp_log_args
    .type stp_tramp_log_args, @function
    .p2align 4
stp_tramp_log_args:
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
    .cfi_adjust_cfa_offset 40
    mov %rdi, %rsi
    mov %r10d, %edi
    call stp_event_arg
    POP_REST
    .cfi_adjust_cfa_offset -40
    pop %r11
    .cfi_adjust_cfa_offset -8
    pop %rcx
    .cfi_adjust_cfa_offset -8
    pop %rdx
    .cfi_adjust_cfa_offset -8
    pop %rax
    .cfi_adjust_cfa_offset -8
    add $0x7f, %al
    sahf
    pop %rax
    .cfi_adjust_cfa_offset -8
    ret
    .cfi_endproc
    .size stp_tramp_log_args, . - stp_tramp_log_args

/* void stp_call_preserving_fpu(void (*fn)(void *), void *arg)
 * Saves the whole extended state (XSAVE with every XCR0 component, into a 64-byte aligned stack
 * area of stp_xsave_size bytes whose header is zeroed first), or FXSAVE when stp_xsave_size is
 * 0, calls fn(arg), restores. */
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
    pop %rbx
    pop %rbp
    .cfi_def_cfa %rsp, 8
    ret
    .cfi_endproc
    .size stp_call_preserving_fpu, . - stp_call_preserving_fpu

    .section .note.GNU-stack, "", @progbits
