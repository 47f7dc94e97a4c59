/* The functions calib.c times: instrumented code as it looks once the runtime has patched it,
 * byte for byte, and the same code unpatched.
 *
 * Patched (the _on functions): every sled is the runtime's own encoding (patcher/patch.c,
 * encode): `41 ba <id32>` (mov $id, %r10d), then `e8 <rel32>` (call) for an entry or tail sled
 * or `e9 <rel32>` (jmp, in place of the ret) for an exit sled, to a stub `jmp *slot(%rip)`
 * whose slot holds the plain trampoline's address (stp_tramp_entry, stp_tramp_exit,
 * stp_tramp_tail: never the _min ones). The runtime's stub page keeps the slot right after the
 * jmp; here the slots live in .data.rel.ro (text is never written), one indirect jmp through
 * memory either way. Sleds are written with .byte/.long so that the assembler cannot pick a
 * shorter encoding.
 * Unpatched (the _off functions): the bytes clang emits, `eb 09` + a 9-byte nop for an entry
 * or tail sled, `c3` + a 10-byte nop for an exit sled (xray-facts section 3).
 *
 * Shapes (the ids are object 0's, calib.c's CALIB_ID_*, at the top of the range no object
 * reaches: they never get into a trace):
 *   leaf:   entry sled, no body, exit sled.                      records: E X
 *   parent: entry sled, calls leaf twice, exit sled.             records: E E X E X X
 *   tail:   entry sled, tail sled, then jmp leaf (a tail call).  records: E T E X
 * Stack: every function is entered with rsp = 8 mod 16, as the ABI has it and the trampolines
 * expect (parent's push keeps its calls aligned).
 *
 * void str_calib_loop(void (*fn)(void), unsigned n): calls fn n times (n >= 1), nothing else.
 */
#define CALIB_ID_PARENT 0xfffff0
#define CALIB_ID_LEAF 0xfffff1
#define CALIB_ID_TAIL 0xfffff2

    .macro SLED_CALL id, stub           /* patched entry or tail sled */
    .byte 0x41, 0xba
    .long \id
    .byte 0xe8
    .long \stub - . - 4
    .endm

    .macro SLED_JMP id, stub            /* patched exit sled */
    .byte 0x41, 0xba
    .long \id
    .byte 0xe9
    .long \stub - . - 4
    .endm

    .macro SLED_OFF                     /* unpatched entry or tail sled */
    .byte 0xeb, 0x09, 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x02, 0x00, 0x00
    .endm

    .macro SLED_RET                     /* unpatched exit sled */
    .byte 0xc3, 0x2e, 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x02, 0x00, 0x00
    .endm

    .macro FUNC name
    .globl \name
    .hidden \name
    .type \name, @function
    .p2align 4
\name:
    .cfi_startproc
    .endm

    .macro ENDF name
    .cfi_endproc
    .size \name, . - \name
    .endm

    .section .data.rel.ro, "aw"
    .p2align 3
slot_entry:
    .quad stp_tramp_entry
slot_exit:
    .quad stp_tramp_exit
slot_tail:
    .quad stp_tramp_tail

    .text
/* The stubs: no CFI, like the runtime's stub pages. */
    .p2align 4
stub_entry:
    jmp *slot_entry(%rip)
    .p2align 4
stub_exit:
    jmp *slot_exit(%rip)
    .p2align 4
stub_tail:
    jmp *slot_tail(%rip)

    FUNC str_calib_leaf_on
    SLED_CALL CALIB_ID_LEAF, stub_entry
    SLED_JMP CALIB_ID_LEAF, stub_exit
    ENDF str_calib_leaf_on

    FUNC str_calib_parent_on
    SLED_CALL CALIB_ID_PARENT, stub_entry
    push %rax
    .cfi_adjust_cfa_offset 8
    call str_calib_leaf_on
    call str_calib_leaf_on
    pop %rcx
    .cfi_adjust_cfa_offset -8
    SLED_JMP CALIB_ID_PARENT, stub_exit
    ENDF str_calib_parent_on

    FUNC str_calib_tail_on
    SLED_CALL CALIB_ID_TAIL, stub_entry
    SLED_CALL CALIB_ID_TAIL, stub_tail
    jmp str_calib_leaf_on
    ENDF str_calib_tail_on

    FUNC str_calib_leaf_off
    SLED_OFF
    SLED_RET
    ENDF str_calib_leaf_off

    FUNC str_calib_parent_off
    SLED_OFF
    push %rax
    .cfi_adjust_cfa_offset 8
    call str_calib_leaf_off
    call str_calib_leaf_off
    pop %rcx
    .cfi_adjust_cfa_offset -8
    SLED_RET
    ENDF str_calib_parent_off

    FUNC str_calib_tail_off
    SLED_OFF
    SLED_OFF
    jmp str_calib_leaf_off
    ENDF str_calib_tail_off

    FUNC str_calib_loop
    push %rbx
    .cfi_adjust_cfa_offset 8
    .cfi_offset %rbx, -16
    push %rbp
    .cfi_adjust_cfa_offset 8
    .cfi_offset %rbp, -24
    push %rax                           /* rsp = 0 mod 16 at each call */
    .cfi_adjust_cfa_offset 8
    mov %rdi, %rbx
    mov %esi, %ebp
1:
    call *%rbx
    dec %ebp
    jnz 1b
    pop %rax
    .cfi_adjust_cfa_offset -8
    pop %rbp
    .cfi_adjust_cfa_offset -8
    .cfi_restore %rbp
    pop %rbx
    .cfi_adjust_cfa_offset -8
    .cfi_restore %rbx
    ret
    ENDF str_calib_loop

    .section .note.GNU-stack, "", @progbits
