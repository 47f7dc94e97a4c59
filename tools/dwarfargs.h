/* Functions' parameters and return values from an object's DWARF (libdw): their names, their
 * types as written, and where the System V AMD64 calling convention puts each at the call, so
 * that the raw registers the runtime records at a function's entry and exit can be shown as a
 * user reads them: `fib(n=20) = 6765`, `parse(buf="GET /", len=5) = 0`.
 *
 * dwarfargs.c has the rules (which register a value takes, when it is in memory, what is not
 * covered) in its header comment; tools/DESIGN.md ("Arguments from DWARF") summarises them.
 * Everything returned lives as long as the struct tool_dw it came from. A struct tool_dw is
 * used by one thread at a time (tool_dw_func_at builds a function at its first lookup);
 * tool_dw_format touches nothing shared. (Not named dwarf.h:
 * that is elfutils' <dwarf.h>, which the tools' include path would hide.) */
#ifndef SLEDTRACE_TOOLS_DWARFARGS_H
#define SLEDTRACE_TOOLS_DWARFARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tool_dw;      /* the DWARF of one ELF object */
struct tool_dw_type; /* a parameter's type as tool_dw_format needs it (members, enumerators) */

/* Opens path's DWARF: its own .debug_info, else a separate debug file found by build id under
 * /usr/lib/debug/.build-id/xx/yyyy.debug or by .gnu_debuglink (beside the object, in its .debug/
 * directory, or under /usr/lib/debug). No DWARF: 0 and an object that knows no function
 * (tool_dw_func_at gives NULL), which says why in tool_dw_why. Errors (unreadable, not ELF, out
 * of memory): -1, *out NULL, and one line in err ("PATH: what"). */
int tool_dw_open(struct tool_dw **out, const char *path, char *err, size_t errlen);
void tool_dw_close(struct tool_dw *d);
/* NULL when the object has DWARF; else one line saying why it has none. */
const char *tool_dw_why(const struct tool_dw *d);

enum tool_dw_kind {
    TOOL_DW_INT,
    TOOL_DW_UINT,
    TOOL_DW_BOOL,
    TOOL_DW_CHAR,
    TOOL_DW_ENUM,
    TOOL_DW_PTR,
    TOOL_DW_STR, /* char * / const char * / signed or unsigned char * (typedefs seen through) */
    TOOL_DW_FLOAT,
    TOOL_DW_DOUBLE,
    TOOL_DW_STRUCT, /* struct, class or union */
    TOOL_DW_OTHER,  /* long double, _Complex, member function pointers, void (a return) */
};

/* Where a value lives at the call. `where` is its first eightbyte's place, `where2` its second
 * eightbyte's (TOOL_DW_NONE for a value of one eightbyte or none):
 *   TOOL_DW_IREG  an integer register: arguments 1..6 (rdi rsi rdx rcx r8 r9); for the return
 *                 value 0 = rax, -1 = rdx
 *   TOOL_DW_SSE   xmm0..xmm7: reg is the number (0..7)
 *   TOOL_DW_MEM   memory: the stack for an argument; for the return value, memory the caller
 *                 passed as a hidden pointer (sret, tool_dw_func.sret)
 *   TOOL_DW_X87   the x87 stack (a long double return value: st0)
 *   TOOL_DW_NONE  nowhere: a void return, an empty struct, or a function whose calling
 *                 convention the optimiser changed (tool_dw_func.abi_changed)
 * reg2 is meaningful only when where2 is not TOOL_DW_NONE. */
enum tool_dw_where { TOOL_DW_IREG, TOOL_DW_SSE, TOOL_DW_MEM, TOOL_DW_X87, TOOL_DW_NONE };
struct tool_dw_loc {
    enum tool_dw_where where, where2;
    int reg, reg2;
};

struct tool_dw_param {
    const char *name; /* "this" for a member function's object; "" when DWARF has none */
    const char *type; /* as written: "const char *", "struct point", "enum color" */
    enum tool_dw_kind kind;
    unsigned size; /* bytes */
    struct tool_dw_loc loc;
    bool ret;   /* the return value (else an argument) */
    bool byref; /* a C++ class passed by invisible reference: loc holds its address */
    const struct tool_dw_type *t; /* for tool_dw_format */
};

struct tool_dw_func {
    const char *name; /* DW_AT_name; in C++ with its namespaces and classes: "geo::Shape::area" */
    size_t nparams;   /* named parameters; `this` first for a member function */
    const struct tool_dw_param *params;
    struct tool_dw_param ret; /* kind TOOL_DW_OTHER, loc TOOL_DW_NONE, type "void" for void */
    bool variadic;            /* takes `...` after its named parameters */
    bool sret;                /* returns through a hidden pointer in rdi: arguments start at rsi */
    /* The optimiser changed how it is called (DW_CC_nocall, or a parameter's DWARF location on
     * arrival is another register than the ABI's: clang drops a static function's unused
     * arguments): every loc TOOL_DW_NONE, every value "?". */
    bool abi_changed;
};

/* The function whose entry (DW_AT_low_pc, else DW_AT_entry_pc, else its lowest range start) is
 * addr, in the object's own (link-time) addresses; NULL if none, or out of memory. Inlined-only
 * copies are not functions; an out-of-line copy of an inline function is. */
const struct tool_dw_func *tool_dw_func_at(struct tool_dw *d, uint64_t addr);

/* One value as a user reads it (uftrace's `replay -a` style), into buf (NUL-terminated when
 * len > 0; cut short when too small). Returns the length of the whole text, as snprintf does
 * (-1 when out of memory). A void return value is "".
 *
 * vals[i] is the raw 64-bit register holding the value's eightbyte i, from the register its
 * loc names (vals[1] for where2); an eightbyte the caller has no register for may hold
 * anything, and is not read when it is in an SSE register of an argument (not recorded).
 * nvals smaller than the value's eightbytes: "?" ("{...}" for a struct).
 *
 *   ints and enums' numbers take the low `size` bytes, sign-extended by the type (a 64-bit
 *   register holding a sign-extended or only a 32-bit value reads the same); unsigned in
 *   decimal; bool true/false; char as 'c' (escaped); enums by enumerator name, else the number;
 *   pointers 0x..., NULL 0x0; float and double in the shortest %g form that reads back the same
 *   value; a struct in registers as {a=1, b=2}; a class passed by invisible reference as its
 *   address. A string (TOOL_DW_STR): str holds slen bytes the runtime copied (NULL: not copied),
 *   truncated says the string went on, fault that the pointer could not be read. Shown as
 *   "..." with C escapes (\n \t \" \\, \xNN for other non-printables and invalid UTF-8), then ...
 *   when truncated; a fault, a NULL pointer or no copy shows the address.
 *   Not recorded (loc MEM, X87 or NONE, or SSE for an argument): "?" (the caller prints name=?).
 */
int tool_dw_format(const struct tool_dw_param *p, const uint64_t *vals, size_t nvals,
                   const uint8_t *str, size_t slen, bool truncated, bool fault, char *buf,
                   size_t len);

#endif
