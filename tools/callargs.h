/* A call's recorded arguments and return value as the tools show them (callargs.c): what
 * SLEDTRACE_ARGS recorded (format/stf.h, "Arguments"), gathered from the walker (cs_arg,
 * cs_strings, cs_close.ret) or from a command's own reading, then written the way uftrace's
 * `replay -a` writes them. */
#ifndef SLEDTRACE_TOOLS_CALLARGS_H
#define SLEDTRACE_TOOLS_CALLARGS_H

#include "callstack.h"
#include "dwarfargs.h"

struct tool_callargs {
    unsigned nargs; /* argument registers recorded (all of them; the first six kept in v) */
    uint64_t v[CS_MAX_ARGS];
    struct {
        bool have;      /* argument k + 1 was recorded as a string */
        unsigned flags; /* STF_ARGSTR_* */
        const uint8_t *b;
        size_t n;
    } s[CS_MAX_ARGS];
    const uint64_t *ret; /* rax rdx xmm0 xmm1, or NULL */
};

/* From the walker: frame f, at index i of t's running stack (open, or the one a close callback
 * is about: cs_close.f and .depth), its return registers ret (cs_close.ret, or NULL). The
 * strings point into t's records: valid during the callback. A frame of a parked context (f not
 * t->st + i), or of a thread that switches contexts, shows its first argument only: the walker
 * keeps the others for the running stack of a thread of one context. */
void tool_callargs_of(struct tool_callargs *a, const struct cs_thread *t, size_t i,
                      const struct cs_frame *f, const uint64_t *ret);
/* "(arg1=0x5, arg2=\"GET /\", arg3=0x7ffd5e3c)" into buf, "" when no argument was recorded:
 * each register in hex, a string quoted with C escapes and cut with "..." where the runtime cut
 * it; a NULL string pointer as NULL, one that could not be read (or was not, under a seccomp
 * filter) as its address. With the function's DWARF (dw,
 * argtypes.h; NULL: none), each parameter by name and type as dwarfargs.h's tool_dw_format
 * writes it: "(n=20)", "(buf=\"GET /\", len=5)", "?" for a value not in a recorded integer
 * register (on the stack, in an SSE register, past the registers recorded), ", ..." after a
 * variadic function's named ones. A buf too short is cut (ends with "..."). Returns buf. */
const char *tool_args_text(const struct tool_callargs *a, const struct tool_dw_func *dw, char *buf,
                           size_t len);
/* " = 0x1a6d" (rax in hex; with dw, the return type's registers: rax, rdx, xmm0, xmm1,
 * "" for void), "" without a return value. Returns buf. */
const char *tool_ret_text(const struct tool_callargs *a, const struct tool_dw_func *dw, char *buf,
                          size_t len);

#endif
