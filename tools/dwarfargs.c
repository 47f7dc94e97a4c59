/* Parameters and return values from DWARF (dwarfargs.h), and where the System V AMD64 ABI puts them.
 *
 * Reading. libdwfl opens the object offline and finds its DWARF: the object's own sections, else
 * a separate debug file by build id (/usr/lib/debug/.build-id/xx/yyyy.debug) or by
 * .gnu_debuglink (beside the object, in its .debug/ directory, under /usr/lib/debug), the CRC
 * checked. Every unit is walked once at open (the compile unit's children, and namespaces and
 * classes inside it, where C++ member definitions may sit; not the inside of functions, so a
 * GNU C nested function is not found): each DW_TAG_subprogram with code becomes an entry at its
 * entry address (DW_AT_low_pc, else DW_AT_entry_pc, else its lowest range start), in the link
 * time addresses DWARF uses (the XRay map's). DW_TAG_inlined_subroutine is never an entry: a
 * function inlined everywhere has no entry of its own. A function is built on its first lookup
 * and kept: parameters from the abstract origin when the entry is an out-of-line copy of an
 * inline function (the origin lists them all), else from the entry itself, else from its
 * declaration (DW_AT_specification) when that lists more.
 *
 * Classification (System V AMD64 psABI 3.2.3, as clang and gcc apply it):
 * - INTEGER: integers up to 8 bytes, enums, bool, char, pointers, references, data member
 *   pointers, nullptr_t: the next of rdi rsi rdx rcx r8 r9. __int128 is two INTEGER eightbytes
 *   (two registers, or memory when only one is left). A member function pointer is two INTEGER
 *   eightbytes (kind OTHER).
 * - SSE: float, double, _Complex float (one eightbyte), _Complex double (two): the next xmm.
 * - MEMORY: long double and _Complex long double (x87 classes), anything over 16 bytes, a struct
 *   with a field not aligned to its size (packed).
 * - A struct, class or union of at most 16 bytes: each eightbyte takes the merge of the classes
 *   of the fields it holds (bit-fields, arrays, nested structs and C++ base classes flattened):
 *   any INTEGER field makes it INTEGER, only float/double makes it SSE, an x87 or MEMORY field
 *   makes the whole value MEMORY. It goes to memory as a whole when its registers of either
 *   kind run out; the registers it did not take stay free for the arguments after it. An empty
 *   struct takes no register (loc NONE).
 * - A C++ class that is not trivially copyable for calls (DWARF 5's DW_AT_calling_convention
 *   DW_CC_pass_by_reference; without it, a class with a user destructor, a user copy
 *   constructor or virtual functions) is passed by invisible reference: a pointer, INTEGER
 *   (byref), and returned through sret.
 * - `this` (DW_AT_artificial, first) is an ordinary pointer argument.
 * - Return values: INTEGER eightbytes in rax then rdx, SSE ones in xmm0 then xmm1 (a struct
 *   {double, long} is xmm0 and rax), long double in st0 (X87), MEMORY through sret: the caller's
 *   buffer in rdi, so every integer argument moves one register on (`this` into rsi).
 * - Variadic functions: the named parameters only, variadic set.
 * Limits: __m128/__m256 vector types and _Float16/__bf16 are TOOL_DW_OTHER in memory (not
 * classified as SSEUP); an unprototyped (K&R) C definition's float parameters are really passed
 * as doubles; a struct with an x87 field in a return value is called MEMORY (the ABI returns a
 * lone long double member in st0).
 *
 * Names. C types as a declaration writes them (`const char *`, `struct pt`, `int (*)(int)`);
 * C++ ones without the struct/enum keyword and with their namespaces and classes, which the
 * walk at open records as DIE offset ranges per unit (type units included): `geo::Point`,
 * `geo::(anonymous namespace)::Side`, `std::string` (a typedef keeps its name). Types local to
 * a function are not qualified.
 *
 * The optimiser may change how a static function is called. clang 14 removes its unused
 * arguments (dead argument elimination) and says so nowhere (no DW_CC_nocall), so the
 * arguments after them arrive a register early. A function is taken as changed (abi_changed,
 * every loc NONE, shown as "?", rather than a wrong value) when it says DW_CC_nocall, or when a
 * parameter's DWARF location on arrival (its first location in the function's first 16 bytes,
 * past an XRay sled) is an argument register other than the one the ABI gives it.
 * What that cannot see: removed arguments after which no parameter has such a location (at
 * -O0 every location is on the stack, but -O0 removes nothing), a return value made void (rax
 * then holds garbage). (gcc has no XRay; its .isra/.constprop clones of the tools themselves are
 * found the same way.)
 *
 * Formatting (tool_dw_format) is described in dwarfargs.h. Strings: valid UTF-8 passes through,
 * except C1 controls and bidi controls (as names, tools/DESIGN.md "Names"); everything else
 * outside printable ASCII is \xNN. */
#include "dwarfargs.h"

#include "common.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__extension__ typedef unsigned __int128 dw_u128;
__extension__ typedef __int128 dw_s128;

/* ---- arena: everything a function's description holds, freed at close ---- */

struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char mem[];
};

struct tool_dw_type {
    enum tool_dw_kind kind;
    unsigned size;
    bool is_signed; /* INT, CHAR, ENUM */
    bool x87;       /* long double, _Complex long double: MEMORY */
    bool sse;       /* float, double, _Complex float/double: SSE */
    bool is_union;
    bool byref;    /* a C++ class passed by invisible reference */
    bool ptrmemfn; /* member function pointer: two INTEGER eightbytes */
    size_t nenum;
    const char **enames;
    uint64_t *evals;
    size_t nmem; /* struct / union members (and base classes, nameless) */
    struct dw_member *mem;
    const struct tool_dw_type *elem; /* array element */
    unsigned count;                  /* array elements */
};

struct dw_member {
    const char *name;      /* "" for a base class or anonymous member */
    uint64_t off;          /* bytes */
    unsigned bitoff, bits; /* a bit-field: bit offset from the struct's start, width */
    const struct tool_dw_type *t;
};

/* A namespace, class, struct or union that C++ names inside it are qualified with: the DIE
 * offsets [start, end) it spans in its unit, and the scope around it. */
struct dw_scope {
    Dwarf_Off start, end;
    const char *name; /* NULL: anonymous struct (left out of names) */
    size_t parent;    /* SIZE_MAX: none */
};

struct dw_unit {
    const void *cu; /* its Dwarf_CU, as Dwarf_Die.cu */
    size_t first, n;
};

struct dw_ent {
    uint64_t addr;
    Dwarf_Die die;
    bool cxx;
    size_t order;
    struct tool_dw_func *f;
    bool built;
};

struct tool_dw {
    Dwfl *dwfl;
    Dwarf *dw;
    const char *why;
    char whybuf[256];
    struct dw_ent *ent;
    size_t nent, capent;
    struct dw_scope *scope; /* namespaces and classes, in each unit's order */
    size_t nscope, capscope;
    struct dw_unit *unit; /* each unit's scopes, sorted by cu */
    size_t nunit, capunit;
    struct chunk *arena;
};

static void *alloc(struct tool_dw *d, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    struct chunk *c = d->arena;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 16384 ? n : 16384;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->next = d->arena;
        c->used = 0;
        c->cap = cap;
        d->arena = c;
    }
    void *p = c->mem + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

static const char *sdup(struct tool_dw *d, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = alloc(d, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* ---- a growing string ---- */

struct sb {
    char *p;
    size_t n, cap;
    bool oom;
};

static void sb_put(struct sb *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_s(struct sb *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void sb_f(struct sb *b, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        sb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* ---- DWARF attributes ---- */

static bool attr_u(Dwarf_Die *die, unsigned name, Dwarf_Word *v)
{
    Dwarf_Attribute a;
    return dwarf_attr_integrate(die, name, &a) && dwarf_formudata(&a, v) == 0;
}

static bool attr_flag(Dwarf_Die *die, unsigned name)
{
    Dwarf_Attribute a;
    bool f = false;
    return dwarf_attr_integrate(die, name, &a) && dwarf_formflag(&a, &f) == 0 && f;
}

static const char *attr_name(Dwarf_Die *die)
{
    Dwarf_Attribute a;
    const char *s = NULL;
    if (dwarf_attr_integrate(die, DW_AT_name, &a))
        s = dwarf_formstring(&a);
    return s;
}

/* The DIE's DW_AT_type; false for none (void). A declaration that names its type unit
 * (DW_AT_signature: -fdebug-types-section) is that unit's definition. */
static bool type_of(Dwarf_Die *die, Dwarf_Die *out)
{
    Dwarf_Attribute a;
    if (!dwarf_attr_integrate(die, DW_AT_type, &a) || dwarf_formref_die(&a, out) == NULL)
        return false;
    Dwarf_Die def;
    if (dwarf_attr(out, DW_AT_signature, &a) && dwarf_formref_die(&a, &def) != NULL)
        *out = def;
    return true;
}

/* Through typedefs and qualifiers; false for void. */
static bool strip(Dwarf_Die *t, Dwarf_Die *out)
{
    Dwarf_Die cur = *t;
    for (int i = 0; i < 64; i++) {
        int tag = dwarf_tag(&cur);
        if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type &&
            tag != DW_TAG_restrict_type && tag != DW_TAG_atomic_type) {
            *out = cur;
            return true;
        }
        Dwarf_Die next;
        if (!type_of(&cur, &next))
            return false;
        cur = next;
    }
    return false;
}

/* ---- type names, as a C declaration writes them ---- */

struct nctx {
    const struct tool_dw *d;
    bool cxx; /* C++: no struct/enum keyword, names qualified by their namespaces and classes */
};

static void decl(Dwarf_Die *t, bool have, const char *inner, const struct nctx *x, struct sb *out,
                 int depth);

static void params_list(Dwarf_Die *fn, const struct nctx *x, struct sb *out, int depth)
{
    Dwarf_Die c;
    int n = 0;
    sb_s(out, "(");
    if (dwarf_child(fn, &c) == 0) {
        do {
            int tag = dwarf_tag(&c);
            if (tag == DW_TAG_formal_parameter) {
                Dwarf_Die pt;
                bool have = type_of(&c, &pt);
                if (n++)
                    sb_s(out, ", ");
                decl(&pt, have, "", x, out, depth + 1);
            } else if (tag == DW_TAG_unspecified_parameters) {
                sb_s(out, n++ ? ", ..." : "...");
            }
        } while (dwarf_siblingof(&c, &c) == 0);
    }
    if (n == 0 && !x->cxx && attr_flag(fn, DW_AT_prototyped))
        sb_s(out, "void");
    sb_s(out, ")");
}

/* A pointer-like type: `*` (or & &&) with qualifiers q, around inner. */
static void ptr_decl(Dwarf_Die *p, const char *q, const char *inner, const struct nctx *x,
                     struct sb *out, int depth)
{
    struct sb s = {0};
    int tag = dwarf_tag(p);
    Dwarf_Die to;
    bool have = type_of(p, &to);
    if (tag == DW_TAG_reference_type)
        sb_s(&s, "&");
    else if (tag == DW_TAG_rvalue_reference_type)
        sb_s(&s, "&&");
    else if (tag == DW_TAG_ptr_to_member_type) {
        Dwarf_Attribute a;
        Dwarf_Die cls;
        const char *cn = NULL;
        if (dwarf_attr_integrate(p, DW_AT_containing_type, &a) && dwarf_formref_die(&a, &cls))
            cn = attr_name(&cls);
        sb_f(&s, "%s::*", cn ? cn : "?");
    } else
        sb_s(&s, "*");
    if (q[0]) {
        sb_s(&s, q);
        if (inner[0])
            sb_s(&s, " ");
    }
    sb_s(&s, inner);
    const char *mid = s.p ? s.p : "";
    int ttag = have ? dwarf_tag(&to) : 0;
    if (ttag == DW_TAG_subroutine_type || ttag == DW_TAG_array_type) {
        struct sb w = {0};
        sb_s(&w, "(");
        sb_s(&w, mid);
        sb_s(&w, ")");
        decl(&to, have, w.p ? w.p : "", x, out, depth + 1);
        free(w.p);
    } else {
        decl(&to, have, mid, x, out, depth + 1);
    }
    free(s.p);
}

static void qualify(const struct tool_dw *d, Dwarf_Die *die, struct sb *out);

/* A named type: `struct point` in C, `ns::Point` in C++ (kw only for an anonymous one). */
static void named(const char *kw, Dwarf_Die *t, const char *name, const char *inner,
                  const struct nctx *x, struct sb *out)
{
    if (kw && (!x->cxx || !name)) {
        sb_s(out, kw);
        sb_s(out, " ");
    }
    if (x->cxx && t && name)
        qualify(x->d, t, out);
    sb_s(out, name ? name : "{...}");
    if (inner[0]) {
        sb_s(out, " ");
        sb_s(out, inner);
    }
}

static void decl(Dwarf_Die *t, bool have, const char *inner, const struct nctx *x, struct sb *out,
                 int depth)
{
    if (depth > 24) {
        sb_s(out, "...");
        return;
    }
    if (!have) {
        named(NULL, NULL, "void", inner, x, out);
        return;
    }
    int tag = dwarf_tag(t);
    switch (tag) {
    case DW_TAG_const_type:
    case DW_TAG_volatile_type:
    case DW_TAG_restrict_type:
    case DW_TAG_atomic_type: {
        /* Collect the qualifiers, then see what they qualify. */
        char q[64] = "";
        Dwarf_Die cur = *t;
        bool h = true;
        for (int i = 0; i < 8 && h; i++) {
            int tg = dwarf_tag(&cur);
            const char *w = tg == DW_TAG_const_type      ? "const"
                            : tg == DW_TAG_volatile_type ? "volatile"
                            : tg == DW_TAG_restrict_type ? "restrict"
                            : tg == DW_TAG_atomic_type   ? "_Atomic"
                                                         : NULL;
            if (!w)
                break;
            if (q[0])
                strcat(q, " ");
            strcat(q, w);
            Dwarf_Die next;
            h = type_of(&cur, &next);
            if (h)
                cur = next;
        }
        int ut = h ? dwarf_tag(&cur) : 0;
        if (ut == DW_TAG_pointer_type || ut == DW_TAG_reference_type ||
            ut == DW_TAG_rvalue_reference_type || ut == DW_TAG_ptr_to_member_type) {
            ptr_decl(&cur, q, inner, x, out, depth);
        } else {
            sb_s(out, q);
            sb_s(out, " ");
            decl(&cur, h, inner, x, out, depth + 1);
        }
        return;
    }
    case DW_TAG_pointer_type:
    case DW_TAG_reference_type:
    case DW_TAG_rvalue_reference_type:
    case DW_TAG_ptr_to_member_type:
        ptr_decl(t, "", inner, x, out, depth);
        return;
    case DW_TAG_subroutine_type: {
        struct sb s = {0};
        sb_s(&s, inner);
        params_list(t, x, &s, depth);
        Dwarf_Die r;
        bool hr = type_of(t, &r);
        decl(&r, hr, s.p ? s.p : "", x, out, depth + 1);
        free(s.p);
        return;
    }
    case DW_TAG_array_type: {
        struct sb s = {0};
        sb_s(&s, inner);
        Dwarf_Die c;
        bool any = false;
        if (dwarf_child(t, &c) == 0) {
            do {
                if (dwarf_tag(&c) != DW_TAG_subrange_type)
                    continue;
                Dwarf_Word n;
                any = true;
                if (attr_u(&c, DW_AT_count, &n))
                    sb_f(&s, "[%" PRIu64 "]", (uint64_t)n);
                else if (attr_u(&c, DW_AT_upper_bound, &n))
                    sb_f(&s, "[%" PRIu64 "]", (uint64_t)n + 1);
                else
                    sb_s(&s, "[]");
            } while (dwarf_siblingof(&c, &c) == 0);
        }
        if (!any)
            sb_s(&s, "[]");
        Dwarf_Die e;
        bool he = type_of(t, &e);
        decl(&e, he, s.p ? s.p : "", x, out, depth + 1);
        free(s.p);
        return;
    }
    case DW_TAG_structure_type:
        named("struct", t, attr_name(t), inner, x, out);
        return;
    case DW_TAG_class_type:
        named("class", t, attr_name(t), inner, x, out);
        return;
    case DW_TAG_union_type:
        named("union", t, attr_name(t), inner, x, out);
        return;
    case DW_TAG_enumeration_type:
        named("enum", t, attr_name(t), inner, x, out);
        return;
    default: {
        const char *n = attr_name(t);
        named(NULL, tag == DW_TAG_typedef ? t : NULL,
              n ? n : (tag == DW_TAG_unspecified_type ? "decltype(nullptr)" : "?"), inner, x, out);
        return;
    }
    }
}

static const char *type_name(struct tool_dw *d, Dwarf_Die *t, bool have, bool cxx)
{
    struct sb s = {0};
    struct nctx x = {d, cxx};
    decl(t, have, "", &x, &s, 0);
    const char *r = s.oom || !s.p ? NULL : sdup(d, s.p);
    free(s.p);
    return r;
}

/* ---- types as the classifier and the formatter need them ---- */

/* Whether a C++ class is passed by invisible reference. */
static bool class_byref(Dwarf_Die *t)
{
    Dwarf_Word cc;
    if (attr_u(t, DW_AT_calling_convention, &cc)) {
        if (cc == DW_CC_pass_by_reference)
            return true;
        if (cc == DW_CC_pass_by_value)
            return false;
    }
    const char *cn = attr_name(t);
    Dwarf_Die c;
    if (dwarf_child(t, &c) != 0)
        return false;
    do {
        int tag = dwarf_tag(&c);
        if (tag == DW_TAG_inheritance) {
            Dwarf_Die b;
            Dwarf_Word v;
            if (attr_u(&c, DW_AT_virtuality, &v) && v != DW_VIRTUALITY_none)
                return true;
            if (type_of(&c, &b) && strip(&b, &b) && class_byref(&b))
                return true;
        }
        if (tag != DW_TAG_subprogram || attr_flag(&c, DW_AT_artificial))
            continue;
        Dwarf_Word v;
        if (attr_u(&c, DW_AT_virtuality, &v) && v != DW_VIRTUALITY_none)
            return true;
        const char *n = attr_name(&c);
        if (!n)
            continue;
        if (n[0] == '~')
            return true;
        if (cn && strcmp(n, cn) == 0) {
            /* a copy or move constructor: this, then one reference to the class */
            Dwarf_Die p;
            int np = 0;
            bool refself = false;
            if (dwarf_child(&c, &p) == 0) {
                do {
                    if (dwarf_tag(&p) != DW_TAG_formal_parameter)
                        continue;
                    np++;
                    Dwarf_Die pt, to;
                    if (np == 2 && type_of(&p, &pt) &&
                        (dwarf_tag(&pt) == DW_TAG_reference_type ||
                         dwarf_tag(&pt) == DW_TAG_rvalue_reference_type) &&
                        type_of(&pt, &to) && strip(&to, &to) &&
                        dwarf_dieoffset(&to) == dwarf_dieoffset(t))
                        refself = true;
                } while (dwarf_siblingof(&p, &p) == 0);
            }
            if (np == 2 && refself)
                return true;
        }
    } while (dwarf_siblingof(&c, &c) == 0);
    return false;
}

static bool is_charlike(Dwarf_Die *t)
{
    Dwarf_Die s;
    Dwarf_Word enc, size;
    return strip(t, &s) && dwarf_tag(&s) == DW_TAG_base_type && attr_u(&s, DW_AT_encoding, &enc) &&
           attr_u(&s, DW_AT_byte_size, &size) && size == 1 &&
           (enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char);
}

static const struct tool_dw_type *mk_type(struct tool_dw *d, Dwarf_Die *t0, bool have, bool cxx,
                                          int depth);

static bool mk_members(struct tool_dw *d, struct tool_dw_type *ty, Dwarf_Die *t, bool cxx,
                       int depth)
{
    Dwarf_Die c;
    size_t n = 0;
    if (dwarf_child(t, &c) == 0) {
        do {
            int tag = dwarf_tag(&c);
            if ((tag == DW_TAG_member && !attr_flag(&c, DW_AT_external) &&
                 !attr_flag(&c, DW_AT_declaration)) ||
                tag == DW_TAG_inheritance)
                n++;
        } while (dwarf_siblingof(&c, &c) == 0);
    }
    if (n == 0)
        return true;
    ty->mem = alloc(d, n * sizeof *ty->mem);
    if (!ty->mem)
        return false;
    if (dwarf_child(t, &c) != 0)
        return true;
    do {
        int tag = dwarf_tag(&c);
        if (!((tag == DW_TAG_member && !attr_flag(&c, DW_AT_external) &&
               !attr_flag(&c, DW_AT_declaration)) ||
              tag == DW_TAG_inheritance))
            continue;
        struct dw_member *m = &ty->mem[ty->nmem];
        const char *nm = tag == DW_TAG_member ? attr_name(&c) : NULL;
        m->name = nm ? nm : "";
        Dwarf_Word off = 0, bs = 0, bo, bsz;
        attr_u(&c, DW_AT_data_member_location, &off);
        m->off = off;
        if (attr_u(&c, DW_AT_bit_size, &bs) && bs > 0) {
            m->bits = (unsigned)bs;
            if (attr_u(&c, DW_AT_data_bit_offset, &bo))
                m->bitoff = (unsigned)bo;
            else if (attr_u(&c, DW_AT_bit_offset, &bo) && attr_u(&c, DW_AT_byte_size, &bsz))
                m->bitoff = (unsigned)(off * 8 + bsz * 8 - bo - bs); /* DWARF 2-4, big end */
            else
                m->bitoff = (unsigned)(off * 8);
            m->off = m->bitoff / 8;
        }
        Dwarf_Die mt;
        bool h = type_of(&c, &mt);
        m->t = mk_type(d, &mt, h, cxx, depth + 1);
        if (!m->t)
            return false;
        ty->nmem++;
    } while (dwarf_siblingof(&c, &c) == 0);
    return true;
}

static const struct tool_dw_type *mk_type(struct tool_dw *d, Dwarf_Die *t0, bool have, bool cxx,
                                          int depth)
{
    struct tool_dw_type *ty = alloc(d, sizeof *ty);
    if (!ty)
        return NULL;
    ty->kind = TOOL_DW_OTHER;
    Dwarf_Die t;
    if (!have || depth > 12 || !strip(t0, &t))
        return ty; /* void, or too deep: size 0, OTHER */
    Dwarf_Word size = 0, enc = 0;
    attr_u(&t, DW_AT_byte_size, &size);
    ty->size = (unsigned)size;
    switch (dwarf_tag(&t)) {
    case DW_TAG_base_type:
        attr_u(&t, DW_AT_encoding, &enc);
        switch (enc) {
        case DW_ATE_signed:
            ty->kind = TOOL_DW_INT;
            ty->is_signed = true;
            break;
        case DW_ATE_unsigned:
            ty->kind = TOOL_DW_UINT;
            break;
        case DW_ATE_boolean:
            ty->kind = TOOL_DW_BOOL;
            break;
        case DW_ATE_signed_char:
        case DW_ATE_unsigned_char:
        case DW_ATE_UTF:
            ty->kind = size == 1 ? TOOL_DW_CHAR : TOOL_DW_UINT;
            ty->is_signed = enc == DW_ATE_signed_char;
            break;
        case DW_ATE_float:
            if (size == 4 || size == 8) {
                ty->kind = size == 4 ? TOOL_DW_FLOAT : TOOL_DW_DOUBLE;
                ty->sse = true;
            } else if (size > 8) {
                ty->x87 = true; /* long double (10 bytes in 16), __float128 too */
            }
            break;
        case DW_ATE_complex_float:
            if (size == 8 || size == 16)
                ty->sse = true;
            else
                ty->x87 = true;
            break;
        default:
            break;
        }
        if ((ty->kind == TOOL_DW_INT || ty->kind == TOOL_DW_UINT) && size != 1 && size != 2 &&
            size != 4 && size != 8 && size != 16)
            ty->kind = TOOL_DW_OTHER;
        break;
    case DW_TAG_enumeration_type: {
        ty->kind = TOOL_DW_ENUM;
        Dwarf_Die ut, c;
        Dwarf_Word uenc;
        if (type_of(&t, &ut) && strip(&ut, &ut) && attr_u(&ut, DW_AT_encoding, &uenc))
            ty->is_signed = uenc == DW_ATE_signed || uenc == DW_ATE_signed_char;
        size_t n = 0;
        if (dwarf_child(&t, &c) == 0) {
            do
                n += dwarf_tag(&c) == DW_TAG_enumerator;
            while (dwarf_siblingof(&c, &c) == 0);
        }
        ty->enames = alloc(d, (n ? n : 1) * sizeof *ty->enames);
        ty->evals = alloc(d, (n ? n : 1) * sizeof *ty->evals);
        if (!ty->enames || !ty->evals)
            return NULL;
        if (n && dwarf_child(&t, &c) == 0) {
            do {
                Dwarf_Attribute a;
                if (dwarf_tag(&c) != DW_TAG_enumerator || !dwarf_attr(&c, DW_AT_const_value, &a))
                    continue;
                uint64_t v;
                if (dwarf_whatform(&a) == DW_FORM_sdata) {
                    Dwarf_Sword s;
                    if (dwarf_formsdata(&a, &s) != 0)
                        continue;
                    v = (uint64_t)s;
                    if (s < 0 && !ty->is_signed && !dwarf_hasattr(&t, DW_AT_type))
                        ty->is_signed = true;
                } else {
                    Dwarf_Word u;
                    if (dwarf_formudata(&a, &u) != 0)
                        continue;
                    v = u;
                }
                const char *nm = attr_name(&c);
                ty->enames[ty->nenum] = nm ? nm : "?";
                ty->evals[ty->nenum++] = v;
            } while (dwarf_siblingof(&c, &c) == 0);
        }
        break;
    }
    case DW_TAG_pointer_type: {
        Dwarf_Die to;
        ty->kind = type_of(&t, &to) && is_charlike(&to) ? TOOL_DW_STR : TOOL_DW_PTR;
        ty->size = 8;
        break;
    }
    case DW_TAG_reference_type:
    case DW_TAG_rvalue_reference_type:
    case DW_TAG_unspecified_type: /* nullptr_t */
        ty->kind = TOOL_DW_PTR;
        ty->size = 8;
        break;
    case DW_TAG_ptr_to_member_type: {
        Dwarf_Die to;
        bool fn = type_of(&t, &to) && dwarf_tag(&to) == DW_TAG_subroutine_type;
        ty->kind = fn ? TOOL_DW_OTHER : TOOL_DW_INT;
        ty->is_signed = true;
        ty->ptrmemfn = fn;
        ty->size = fn ? 16 : 8;
        break;
    }
    case DW_TAG_structure_type:
    case DW_TAG_class_type:
    case DW_TAG_union_type:
        ty->kind = TOOL_DW_STRUCT;
        ty->is_union = dwarf_tag(&t) == DW_TAG_union_type;
        if (cxx && class_byref(&t)) {
            ty->byref = true;
            break;
        }
        if (size <= 16 && !mk_members(d, ty, &t, cxx, depth))
            return NULL;
        break;
    case DW_TAG_array_type: {
        Dwarf_Die e, c;
        if (!type_of(&t, &e))
            break;
        ty->elem = mk_type(d, &e, true, cxx, depth + 1);
        if (!ty->elem)
            return NULL;
        if (ty->size == 0 && ty->elem->size && dwarf_child(&t, &c) == 0 &&
            dwarf_tag(&c) == DW_TAG_subrange_type) {
            Dwarf_Word n;
            if (attr_u(&c, DW_AT_count, &n) || (attr_u(&c, DW_AT_upper_bound, &n) && ++n))
                ty->size = (unsigned)(n * ty->elem->size);
        }
        ty->count = ty->elem->size ? ty->size / ty->elem->size : 0;
        break;
    }
    default:
        break;
    }
    return ty;
}

/* ---- the System V AMD64 classification ---- */

enum cls { C_NONE, C_INT, C_SSE, C_MEM };

static enum cls merge(enum cls a, enum cls b)
{
    if (a == b || b == C_NONE)
        return a;
    if (a == C_NONE)
        return b;
    if (a == C_MEM || b == C_MEM)
        return C_MEM;
    if (a == C_INT || b == C_INT)
        return C_INT;
    return C_SSE;
}

/* Merges the classes of t's fields at byte offset off into c[0..1]. */
static void classify_at(const struct tool_dw_type *t, uint64_t off, enum cls c[2], int depth)
{
    if (depth > 16) {
        c[0] = c[1] = C_MEM;
        return;
    }
    if (t->kind == TOOL_DW_STRUCT) {
        if (t->byref || t->size > 16) {
            c[0] = c[1] = C_MEM;
            return;
        }
        for (size_t i = 0; i < t->nmem; i++) {
            const struct dw_member *m = &t->mem[i];
            if (m->bits) {
                unsigned e = (m->bitoff + (unsigned)off * 8) / 64;
                if (m->bits)
                    c[e > 1 ? 1 : e] = merge(c[e > 1 ? 1 : e], C_INT);
                continue;
            }
            classify_at(m->t, off + m->off, c, depth + 1);
        }
        return;
    }
    if (t->elem) {
        for (unsigned i = 0; i < t->count && i < 16; i++)
            classify_at(t->elem, off + (uint64_t)i * t->elem->size, c, depth + 1);
        return;
    }
    if (t->size == 0 && t->kind == TOOL_DW_OTHER && !t->x87 && !t->sse)
        return; /* void, or unknown: adds nothing */
    unsigned align = t->size >= 8 ? 8 : t->size;
    if (t->x87 || (align && off % align) || off + t->size > 16 ||
        (t->kind == TOOL_DW_OTHER && !t->sse && !t->ptrmemfn)) {
        c[0] = c[1] = C_MEM;
        return;
    }
    enum cls k = t->sse ? C_SSE : C_INT;
    for (uint64_t e = off / 8; e <= (off + t->size - 1) / 8 && e < 2; e++)
        c[e] = merge(c[e], k);
}

/* The value's eightbytes' classes; their number (0, 1 or 2), or -1 for MEMORY. */
static int classify(const struct tool_dw_type *t, enum cls c[2])
{
    c[0] = c[1] = C_NONE;
    if (t->kind == TOOL_DW_STRUCT && t->byref) {
        c[0] = C_INT;
        return 1; /* its address */
    }
    if (t->size > 16)
        return -1;
    classify_at(t, 0, c, 0);
    if (c[0] == C_MEM || c[1] == C_MEM)
        return -1;
    int n = t->size > 8 ? 2 : t->size > 0 ? 1 : 0;
    if (n == 2 && c[1] == C_NONE)
        c[1] = c[0] == C_NONE ? C_INT : c[0]; /* padding only: never seen in practice */
    if (n >= 1 && c[0] == C_NONE)
        c[0] = C_INT;
    return n;
}

static void set_loc(struct tool_dw_loc *l, int e, enum tool_dw_where w, int reg)
{
    if (e == 0) {
        l->where = w;
        l->reg = reg;
    } else {
        l->where2 = w;
        l->reg2 = reg;
    }
}

static void none_loc(struct tool_dw_loc *l)
{
    l->where = l->where2 = TOOL_DW_NONE;
    l->reg = l->reg2 = 0;
}

/* Assigns an argument's registers from *ni integer and *ns SSE registers used. */
static void arg_loc(struct tool_dw_param *p, int *ni, int *ns)
{
    enum cls c[2];
    none_loc(&p->loc);
    int n = classify(p->t, c);
    if (n == 0)
        return;
    int wi = 0, ws = 0;
    for (int e = 0; e < n; e++)
        c[e] == C_INT ? wi++ : ws++;
    if (n < 0 || *ni + wi > 6 || *ns + ws > 8) {
        p->loc.where = TOOL_DW_MEM;
        return;
    }
    for (int e = 0; e < n; e++) {
        if (c[e] == C_INT)
            set_loc(&p->loc, e, TOOL_DW_IREG, ++*ni);
        else
            set_loc(&p->loc, e, TOOL_DW_SSE, (*ns)++);
    }
}

/* The return value's registers; true when it is returned through sret. */
static bool ret_loc(struct tool_dw_param *p)
{
    enum cls c[2];
    none_loc(&p->loc);
    if (p->t->x87 && p->t->kind != TOOL_DW_STRUCT) {
        p->loc.where = p->t->size > 16 ? TOOL_DW_MEM : TOOL_DW_X87;
        return p->t->size > 16; /* _Complex long double: st0, st1; not shown */
    }
    int n = classify(p->t, c);
    if (p->t->byref || n < 0) {
        p->loc.where = TOOL_DW_MEM;
        return true;
    }
    int ni = 0, ns = 0;
    for (int e = 0; e < n; e++) {
        if (c[e] == C_INT)
            set_loc(&p->loc, e, TOOL_DW_IREG, ni++ ? -1 : 0);
        else
            set_loc(&p->loc, e, TOOL_DW_SSE, ns++);
    }
    return false;
}

/* ---- functions ---- */

static bool is_cxx(Dwarf_Die *cu)
{
    int l = dwarf_srclang(cu);
    return l == DW_LANG_C_plus_plus || l == DW_LANG_C_plus_plus_03 || l == DW_LANG_C_plus_plus_11 ||
           l == DW_LANG_C_plus_plus_14 || l == 0x2a /* C++17 */ || l == 0x2b /* C++20 */;
}

static size_t count_params(Dwarf_Die *fn)
{
    Dwarf_Die c;
    size_t n = 0;
    if (dwarf_child(fn, &c) == 0) {
        do
            n += dwarf_tag(&c) == DW_TAG_formal_parameter;
        while (dwarf_siblingof(&c, &c) == 0);
    }
    return n;
}

static bool ref_die(Dwarf_Die *die, unsigned name, Dwarf_Die *out)
{
    Dwarf_Attribute a;
    return dwarf_attr(die, name, &a) && dwarf_formref_die(&a, out) != NULL;
}

static bool fill_param(struct tool_dw *d, struct tool_dw_param *p, Dwarf_Die *type, bool have,
                       bool cxx)
{
    p->t = mk_type(d, type, have, cxx, 0);
    p->type = type_name(d, type, have, cxx);
    if (!p->t || !p->type)
        return false;
    p->kind = p->t->kind;
    p->size = p->t->size;
    p->byref = p->t->kind == TOOL_DW_STRUCT && p->t->byref;
    return true;
}

/* Where DWARF says a parameter is on arrival, as a loc's (where, reg): true when its first
 * location in the function's first 16 bytes is an argument register. (An XRay sled, 11 bytes,
 * comes before the first instruction that DWARF describes.) */
static bool entry_reg(Dwarf_Die *par, uint64_t entry, enum tool_dw_where *w, int *reg)
{
    Dwarf_Attribute a;
    if (!dwarf_attr(par, DW_AT_location, &a))
        return false;
    Dwarf_Addr base, start, end, best = (Dwarf_Addr)-1;
    Dwarf_Op *ops, *bops = NULL;
    size_t nops, bn = 0;
    ptrdiff_t off = 0;
    while ((off = dwarf_getlocations(&a, off, &base, &start, &end, &ops, &nops)) > 0) {
        if (start == 0 && end == (Dwarf_Addr)-1)
            start = entry; /* a single expression: valid everywhere */
        if (start >= entry && start < best) {
            best = start;
            bops = ops;
            bn = nops;
        }
    }
    if (!bops || bn == 0 || best >= entry + 16)
        return false;
    unsigned r;
    if (bops[0].atom >= DW_OP_reg0 && bops[0].atom <= DW_OP_reg31)
        r = bops[0].atom - DW_OP_reg0;
    else if (bops[0].atom == DW_OP_regx)
        r = (unsigned)bops[0].number;
    else
        return false;
    /* DWARF's x86-64 numbering: rdi 5, rsi 4, rdx 1, rcx 2, r8 8, r9 9, xmm0..7 17..24 */
    static const int iarg[10] = {0, 3, 4, 0, 2, 1, 0, 0, 5, 6};
    if (r < 10 && iarg[r]) {
        *w = TOOL_DW_IREG;
        *reg = iarg[r];
        return true;
    }
    if (r >= 17 && r <= 24) {
        *w = TOOL_DW_SSE;
        *reg = (int)r - 17;
        return true;
    }
    return false; /* already moved to a register of its own: says nothing */
}

/* Whether the optimiser moved the parameters: clang removes unused arguments of a static
 * function (dead argument elimination) without saying so (no DW_CC_nocall), and the
 * parameters after them then arrive one register early. Each parameter whose location on
 * arrival is an argument register must be in the one the ABI gives it. The concrete DIE's parameters
 * name their abstract origins, which are src's. */
static bool moved(Dwarf_Die *fn, Dwarf_Die *src, const Dwarf_Off *offs,
                  const struct tool_dw_param *ps, size_t n, uint64_t entry)
{
    Dwarf_Die c;
    size_t k = 0;
    bool same = dwarf_dieoffset(fn) == dwarf_dieoffset(src);
    if (dwarf_child(fn, &c) != 0)
        return false;
    do {
        if (dwarf_tag(&c) != DW_TAG_formal_parameter)
            continue;
        size_t i = k++;
        Dwarf_Die o;
        if (!same) {
            if (!ref_die(&c, DW_AT_abstract_origin, &o))
                continue;
            for (i = 0; i < n && offs[i] != dwarf_dieoffset(&o); i++)
                ;
        }
        if (i >= n)
            continue;
        enum tool_dw_where w;
        int reg;
        if (entry_reg(&c, entry, &w, &reg) && (w != ps[i].loc.where || reg != ps[i].loc.reg))
            return true;
    } while (dwarf_siblingof(&c, &c) == 0);
    return false;
}

static struct tool_dw_func *build(struct tool_dw *d, struct dw_ent *e)
{
    struct tool_dw_func *f = alloc(d, sizeof *f);
    if (!f)
        return NULL;
    Dwarf_Die fn = e->die, src = e->die, o;
    /* An out-of-line copy of an inline function: its origin lists every parameter. */
    for (int i = 0; i < 8 && ref_die(&src, DW_AT_abstract_origin, &o); i++)
        src = o;
    if (ref_die(&src, DW_AT_specification, &o) && count_params(&o) > count_params(&src))
        src = o;
    /* The name with its namespaces and classes, from the declaration inside them. */
    Dwarf_Die decl_die = src;
    if (ref_die(&src, DW_AT_specification, &o))
        decl_die = o;
    const char *nm = attr_name(&fn);
    struct sb qn = {0};
    if (e->cxx && nm)
        qualify(d, &decl_die, &qn);
    sb_s(&qn, nm ? nm : "");
    f->name = qn.oom ? NULL : sdup(d, qn.p);
    free(qn.p);
    if (!f->name)
        return NULL;
    size_t n = count_params(&src);
    struct tool_dw_param *ps = alloc(d, (n ? n : 1) * sizeof *ps);
    Dwarf_Off *offs = alloc(d, (n ? n : 1) * sizeof *offs);
    if (!ps || !offs)
        return NULL;
    Dwarf_Die c;
    if (dwarf_child(&src, &c) == 0) {
        do {
            int tag = dwarf_tag(&c);
            if (tag == DW_TAG_unspecified_parameters)
                f->variadic = true;
            if (tag != DW_TAG_formal_parameter || f->nparams >= n)
                continue;
            offs[f->nparams] = dwarf_dieoffset(&c);
            struct tool_dw_param *p = &ps[f->nparams++];
            const char *pn = attr_name(&c);
            p->name = pn ? pn : (attr_flag(&c, DW_AT_artificial) ? "this" : "");
            Dwarf_Die pt;
            bool h = type_of(&c, &pt);
            if (!fill_param(d, p, &pt, h, e->cxx))
                return NULL;
        } while (dwarf_siblingof(&c, &c) == 0);
    }
    f->params = ps;
    Dwarf_Die rt;
    bool hr = type_of(&fn, &rt);
    if (!fill_param(d, &f->ret, &rt, hr, e->cxx))
        return NULL;
    f->ret.name = "";
    f->ret.ret = true;
    f->sret = ret_loc(&f->ret);
    int ni = f->sret ? 1 : 0, ns = 0;
    for (size_t i = 0; i < f->nparams; i++)
        arg_loc(&ps[i], &ni, &ns);
    Dwarf_Word cc;
    if ((attr_u(&fn, DW_AT_calling_convention, &cc) && cc == DW_CC_nocall) ||
        moved(&fn, &src, offs, ps, f->nparams, e->addr)) {
        f->abi_changed = true;
        f->sret = false;
        none_loc(&f->ret.loc);
        for (size_t i = 0; i < f->nparams; i++)
            none_loc(&ps[i].loc);
    }
    return f;
}

const struct tool_dw_func *tool_dw_func_at(struct tool_dw *d, uint64_t addr)
{
    size_t lo = 0, hi = d->nent;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->ent[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == d->nent || d->ent[lo].addr != addr)
        return NULL;
    struct dw_ent *e = &d->ent[lo];
    if (!e->built) {
        e->f = build(d, e);
        e->built = e->f != NULL; /* out of memory: NULL now, tried again next time */
    }
    return e->f;
}

/* ---- opening ---- */

static int add_ent(struct tool_dw *d, Dwarf_Die *die, bool cxx)
{
    Dwarf_Addr a;
    if (dwarf_lowpc(die, &a) != 0 && dwarf_entrypc(die, &a) != 0) {
        Dwarf_Addr base, s, en, best = (Dwarf_Addr)-1;
        ptrdiff_t off = 0;
        while ((off = dwarf_ranges(die, off, &base, &s, &en)) > 0)
            if (s < best)
                best = s;
        if (best == (Dwarf_Addr)-1)
            return 0; /* a declaration, or an abstract instance: no code */
        a = best;
    }
    if (d->nent == d->capent) {
        struct dw_ent *p = tool_grow(d->ent, &d->capent, sizeof *p, 256);
        if (!p)
            return -1;
        d->ent = p;
    }
    d->ent[d->nent] = (struct dw_ent){.addr = a, .die = *die, .cxx = cxx, .order = d->nent};
    d->nent++;
    return 0;
}

/* Records a scope; its index, or SIZE_MAX when out of memory. */
static size_t add_scope(struct tool_dw *d, Dwarf_Die *die, Dwarf_Off end, size_t parent)
{
    if (d->nscope == d->capscope) {
        struct dw_scope *p = tool_grow(d->scope, &d->capscope, sizeof *p, 256);
        if (!p)
            return SIZE_MAX;
        d->scope = p;
    }
    const char *n = attr_name(die);
    Dwarf_Attribute a;
    Dwarf_Die def;
    if (!n && dwarf_attr(die, DW_AT_signature, &a) && dwarf_formref_die(&a, &def))
        n = attr_name(&def); /* a class declared here, defined in its type unit */
    if (!n && dwarf_tag(die) == DW_TAG_namespace)
        n = "(anonymous namespace)";
    d->scope[d->nscope] =
        (struct dw_scope){.start = dwarf_dieoffset(die), .end = end, .name = n, .parent = parent};
    return d->nscope++;
}

/* Walks parent's children, which span DIE offsets up to pend: functions (when funcs) into the
 * index, and (in C++) namespaces and classes into the scopes. -1: out of memory. */
static int walk(struct tool_dw *d, Dwarf_Die *parent, bool cxx, bool funcs, size_t pscope,
                Dwarf_Off pend, int depth)
{
    Dwarf_Die c, nx;
    if (depth > 32 || dwarf_child(parent, &c) != 0)
        return 0;
    for (;;) {
        bool more = dwarf_siblingof(&c, &nx) == 0;
        Dwarf_Off end = more ? dwarf_dieoffset(&nx) : pend;
        switch (dwarf_tag(&c)) {
        case DW_TAG_subprogram:
            if (funcs && add_ent(d, &c, cxx) < 0)
                return -1;
            break;
        case DW_TAG_namespace:
        case DW_TAG_structure_type:
        case DW_TAG_class_type:
        case DW_TAG_union_type: {
            size_t sc = pscope;
            if (cxx && (sc = add_scope(d, &c, end, pscope)) == SIZE_MAX)
                return -1;
            if (walk(d, &c, cxx, funcs, sc, end, depth + 1) < 0)
                return -1;
            break;
        }
        default:
            break;
        }
        if (!more)
            return 0;
        c = nx;
    }
}

static int unit_cmp(const void *a, const void *b)
{
    const struct dw_unit *x = a, *y = b;
    return (uintptr_t)x->cu < (uintptr_t)y->cu ? -1 : (uintptr_t)x->cu > (uintptr_t)y->cu;
}

/* Writes the namespaces and classes around die (`ns::Outer::`), from the scopes recorded. */
static void qualify(const struct tool_dw *d, Dwarf_Die *die, struct sb *out)
{
    struct dw_unit key = {.cu = die->cu};
    const struct dw_unit *u =
        d->nunit ? bsearch(&key, d->unit, d->nunit, sizeof *d->unit, unit_cmp) : NULL;
    if (!u || u->n == 0)
        return;
    Dwarf_Off off = dwarf_dieoffset(die);
    const struct dw_scope *sc = d->scope + u->first;
    /* the last scope starting before die (not die itself), then out to one that holds it */
    size_t lo = 0, hi = u->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sc[mid].start < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return;
    size_t i = u->first + lo - 1;
    while (i != SIZE_MAX && !(d->scope[i].start < off && off < d->scope[i].end))
        i = d->scope[i].parent;
    const char *chain[32];
    int n = 0;
    for (; i != SIZE_MAX && n < 32; i = d->scope[i].parent)
        if (d->scope[i].name)
            chain[n++] = d->scope[i].name;
    while (n-- > 0) {
        sb_s(out, chain[n]);
        sb_s(out, "::");
    }
}

static int ent_cmp(const void *a, const void *b)
{
    const struct dw_ent *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static const Dwfl_Callbacks dw_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

int tool_dw_open(struct tool_dw **out, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    unsigned char magic[4];
    ssize_t got = pread(fd, magic, 4, 0);
    int e = errno;
    close(fd);
    if (got < 0) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(e));
        return -1;
    }
    if (got != 4 || memcmp(magic, "\177ELF", 4) != 0) {
        snprintf(err, errlen, "%s: not an ELF file", path);
        return -1;
    }
    struct tool_dw *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    d->dwfl = dwfl_begin(&dw_callbacks);
    if (!d->dwfl) {
        snprintf(err, errlen, "%s: %s", path, dwfl_errmsg(-1));
        free(d);
        return -1;
    }
    dwfl_report_begin(d->dwfl);
    Dwfl_Module *m = dwfl_report_offline(d->dwfl, path, path, -1);
    dwfl_report_end(d->dwfl, NULL, NULL);
    if (!m) {
        snprintf(err, errlen, "%s: cannot read as ELF: %s", path, dwfl_errmsg(-1));
        tool_dw_close(d);
        return -1;
    }
    Dwarf_Addr bias;
    d->dw = dwfl_module_getdwarf(m, &bias);
    if (!d->dw) {
        snprintf(d->whybuf, sizeof d->whybuf,
                 "no DWARF (built without -g, and no separate debug file found): %s",
                 dwfl_errmsg(-1));
        d->why = d->whybuf;
        *out = d;
        return 0;
    }
    Dwarf_CU *cu = NULL, *next;
    Dwarf_Half ver;
    uint8_t utype;
    Dwarf_Die cudie, subdie;
    while (dwarf_get_units(d->dw, cu, &next, &ver, &utype, &cudie, &subdie) == 0) {
        cu = next;
        Dwarf_Die *u = utype == DW_UT_skeleton ? &subdie : &cudie;
        int tag = dwarf_tag(u);
        bool funcs = tag == DW_TAG_compile_unit || tag == DW_TAG_partial_unit;
        /* type units too, for the namespaces around their types */
        if (!funcs && tag != DW_TAG_type_unit)
            continue;
        if (d->nunit == d->capunit) {
            struct dw_unit *p = tool_grow(d->unit, &d->capunit, sizeof *p, 64);
            if (!p)
                goto oom;
            d->unit = p;
        }
        size_t first = d->nscope;
        if (walk(d, u, is_cxx(u), funcs, SIZE_MAX, (Dwarf_Off)-1, 0) < 0)
            goto oom;
        if (d->nscope > first)
            d->unit[d->nunit++] = (struct dw_unit){u->cu, first, d->nscope - first};
    }
    if (d->nunit)
        qsort(d->unit, d->nunit, sizeof *d->unit, unit_cmp);
    if (d->nent)
        qsort(d->ent, d->nent, sizeof *d->ent, ent_cmp);
    else {
        snprintf(d->whybuf, sizeof d->whybuf, "its DWARF describes no function");
        d->why = d->whybuf;
    }
    /* Keep the first of each address (identical code folded, or COMDAT copies). */
    size_t w = 0;
    for (size_t i = 0; i < d->nent; i++)
        if (w == 0 || d->ent[w - 1].addr != d->ent[i].addr)
            d->ent[w++] = d->ent[i];
    d->nent = w;
    *out = d;
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
    tool_dw_close(d);
    return -1;
}

void tool_dw_close(struct tool_dw *d)
{
    if (!d)
        return;
    if (d->dwfl)
        dwfl_end(d->dwfl);
    free(d->ent);
    free(d->scope);
    free(d->unit);
    while (d->arena) {
        struct chunk *c = d->arena;
        d->arena = c->next;
        free(c);
    }
    free(d);
}

const char *tool_dw_why(const struct tool_dw *d)
{
    return d->why;
}

/* ---- formatting ---- */

static void put_u128(struct sb *b, dw_u128 v)
{
    char tmp[48];
    size_t i = sizeof tmp;
    tmp[--i] = 0;
    do {
        tmp[--i] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v);
    sb_s(b, tmp + i);
}

/* The low size bytes of raw as a signed or unsigned number. */
static void put_int(struct sb *b, dw_u128 raw, unsigned size, bool sgn)
{
    unsigned bits = size * 8;
    if (bits && bits < 128)
        raw &= ((dw_u128)1 << bits) - 1;
    if (sgn && bits && bits < 128 && (raw >> (bits - 1)) & 1)
        raw |= ~(((dw_u128)1 << bits) - 1);
    if (sgn && (dw_s128)raw < 0) {
        sb_s(b, "-");
        raw = -raw;
    }
    put_u128(b, raw);
}

static void put_char(struct sb *b, unsigned ch, char quote)
{
    switch (ch) {
    case '\n':
        sb_s(b, "\\n");
        return;
    case '\t':
        sb_s(b, "\\t");
        return;
    case '\\':
        sb_s(b, "\\\\");
        return;
    default:
        break;
    }
    if (ch == (unsigned char)quote) {
        char e[3] = {'\\', quote, 0};
        sb_s(b, e);
    } else if (ch >= 0x20 && ch < 0x7f) {
        char e[2] = {(char)ch, 0};
        sb_s(b, e);
    } else {
        sb_f(b, "\\x%02x", ch);
    }
}

/* The length of a valid, printable UTF-8 sequence at s, or 0: not a C1 control (below U+00A0)
 * nor a bidi embedding, override or isolate (U+202A-U+202E, U+2066-U+2069), which reorder the
 * rest of a line; the same characters tool_printable (common.c) escapes in names. */
static size_t utf8_len(const uint8_t *s, size_t n)
{
    uint32_t cp;
    size_t len;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        len = 2, cp = s[0] & 0x1f;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        len = 3, cp = s[0] & 0x0f;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        len = 4, cp = s[0] & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    static const uint32_t minv[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < minv[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp < 0xa0 ||
        (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
        return 0;
    return len;
}

static void put_str(struct sb *b, const uint8_t *s, size_t n, bool truncated)
{
    sb_s(b, "\"");
    for (size_t i = 0; i < n;) {
        size_t u = s[i] >= 0x80 ? utf8_len(s + i, n - i) : 0;
        if (u) {
            sb_put(b, (const char *)s + i, u);
            i += u;
        } else {
            put_char(b, s[i], '"');
            i++;
        }
    }
    sb_s(b, "\"");
    if (truncated)
        sb_s(b, "...");
}

static void put_float(struct sb *b, double v, bool single)
{
    if (isnan(v)) {
        sb_s(b, signbit(v) ? "-nan" : "nan");
        return;
    }
    if (isinf(v)) {
        sb_s(b, v < 0 ? "-inf" : "inf");
        return;
    }
    /* The fewest significant digits that read back the same value; then in %g's fixed form
     * whenever its exponent is from -4 to 15, as Python's repr does (100, not 1e+02; 1e+16). */
    char tmp[40];
    int p = 1, full = single ? 9 : 17;
    for (; p <= full; p++) {
        snprintf(tmp, sizeof tmp, "%.*g", p, v);
        if (single ? strtof(tmp, NULL) == (float)v : strtod(tmp, NULL) == v)
            break;
    }
    char e[40];
    snprintf(e, sizeof e, "%.*e", p - 1, v);
    const char *x = strchr(e, 'e');
    int exp = x ? atoi(x + 1) : 0;
    if (exp >= p && exp < 16)
        snprintf(tmp, sizeof tmp, "%.*g", exp + 1, v);
    sb_s(b, tmp);
}

static void put_hex(struct sb *b, uint64_t v)
{
    sb_f(b, "0x%" PRIx64, v);
}

/* A scalar of type t held in raw (little-endian, t->size bytes). */
static void put_scalar(struct sb *b, const struct tool_dw_type *t, dw_u128 raw)
{
    switch (t->kind) {
    case TOOL_DW_INT:
    case TOOL_DW_UINT:
        put_int(b, raw, t->size, t->kind == TOOL_DW_INT);
        return;
    case TOOL_DW_BOOL: {
        dw_u128 v = raw & 0xff;
        if (v <= 1)
            sb_s(b, v ? "true" : "false");
        else
            put_int(b, raw, 1, false);
        return;
    }
    case TOOL_DW_CHAR:
        sb_s(b, "'");
        put_char(b, (unsigned)(raw & 0xff), '\'');
        sb_s(b, "'");
        return;
    case TOOL_DW_ENUM: {
        uint64_t mask = t->size >= 8 ? ~(uint64_t)0 : ((uint64_t)1 << (t->size * 8)) - 1;
        for (size_t i = 0; i < t->nenum; i++)
            if ((t->evals[i] & mask) == ((uint64_t)raw & mask)) {
                sb_s(b, t->enames[i]);
                return;
            }
        put_int(b, raw, t->size ? t->size : 4, t->is_signed);
        return;
    }
    case TOOL_DW_PTR:
    case TOOL_DW_STR:
        put_hex(b, (uint64_t)raw);
        return;
    case TOOL_DW_FLOAT: {
        uint32_t u = (uint32_t)raw;
        float f;
        memcpy(&f, &u, 4);
        put_float(b, f, true);
        return;
    }
    case TOOL_DW_DOUBLE: {
        uint64_t u = (uint64_t)raw;
        double v;
        memcpy(&v, &u, 8);
        put_float(b, v, false);
        return;
    }
    default:
        if (t->size <= 8)
            put_hex(b, (uint64_t)raw);
        else
            sb_s(b, "?");
        return;
    }
}

static dw_u128 load(const uint8_t *bytes, uint64_t off, unsigned size)
{
    dw_u128 v = 0;
    for (unsigned i = 0; i < size && off + i < 16; i++)
        v |= (dw_u128)bytes[off + i] << (8 * i);
    return v;
}

static bool known_range(const bool known[2], uint64_t off, unsigned size)
{
    if (size == 0)
        return true;
    for (uint64_t e = off / 8; e <= (off + size - 1) / 8; e++)
        if (e > 1 || !known[e])
            return false;
    return true;
}

/* A struct's (or array's) value from the 16 bytes of its eightbytes. */
static void put_agg(struct sb *b, const struct tool_dw_type *t, const uint8_t *bytes, uint64_t off,
                    const bool known[2], int depth)
{
    if (depth > 8 || t->is_union) {
        sb_s(b, "{...}");
        return;
    }
    sb_s(b, "{");
    if (t->elem) {
        for (unsigned i = 0; i < t->count; i++) {
            if (i)
                sb_s(b, ", ");
            uint64_t o = off + (uint64_t)i * t->elem->size;
            if (t->elem->kind == TOOL_DW_STRUCT || t->elem->elem)
                put_agg(b, t->elem, bytes, o, known, depth + 1);
            else if (!known_range(known, o, t->elem->size))
                sb_s(b, "?");
            else
                put_scalar(b, t->elem, load(bytes, o, t->elem->size));
        }
        sb_s(b, "}");
        return;
    }
    for (size_t i = 0; i < t->nmem; i++) {
        const struct dw_member *m = &t->mem[i];
        if (i)
            sb_s(b, ", ");
        if (m->name[0]) {
            sb_s(b, m->name);
            sb_s(b, "=");
        }
        uint64_t o = off + m->off;
        if (m->t->kind == TOOL_DW_STRUCT || m->t->elem) {
            put_agg(b, m->t, bytes, o, known, depth + 1);
        } else if (m->bits) {
            uint64_t bit = off * 8 + m->bitoff;
            bool k = bit / 64 < 2 && known[bit / 64] && (bit + m->bits - 1) / 64 < 2 &&
                     known[(bit + m->bits - 1) / 64];
            if (!k) {
                sb_s(b, "?");
                continue;
            }
            dw_u128 all = load(bytes, 0, 16);
            dw_u128 v = (all >> bit) & (((dw_u128)1 << m->bits) - 1);
            bool sgn = m->t->is_signed;
            if (sgn && (v >> (m->bits - 1)) & 1)
                v |= ~(((dw_u128)1 << m->bits) - 1);
            if (m->t->kind == TOOL_DW_INT || m->t->kind == TOOL_DW_UINT ||
                m->t->kind == TOOL_DW_ENUM || m->t->kind == TOOL_DW_BOOL ||
                m->t->kind == TOOL_DW_CHAR)
                put_scalar(b, m->t, v);
            else
                sb_s(b, "?");
        } else if (!known_range(known, o, m->t->size)) {
            sb_s(b, "?");
        } else {
            put_scalar(b, m->t, load(bytes, o, m->t->size));
        }
    }
    sb_s(b, "}");
}

static bool recorded(const struct tool_dw_param *p, int e)
{
    enum tool_dw_where w = e == 0 ? p->loc.where : p->loc.where2;
    return w == TOOL_DW_IREG || (w == TOOL_DW_SSE && p->ret);
}

static void format(struct sb *b, const struct tool_dw_param *p, const uint64_t *vals, size_t nvals,
                   const uint8_t *str, size_t slen, bool truncated, bool fault)
{
    const struct tool_dw_type *t = p->t;
    if (p->ret && p->loc.where == TOOL_DW_NONE && p->size == 0 && t->kind == TOOL_DW_OTHER)
        return; /* void */
    int n = p->loc.where == TOOL_DW_NONE ? 0 : p->loc.where2 != TOOL_DW_NONE ? 2 : 1;
    if (t->kind == TOOL_DW_STRUCT && !p->byref && p->loc.where == TOOL_DW_NONE && p->size == 0 &&
        !p->ret) {
        sb_s(b, "{}");
        return;
    }
    if (n == 0 || p->loc.where == TOOL_DW_MEM || p->loc.where == TOOL_DW_X87) {
        sb_s(b, "?");
        return;
    }
    if (p->byref) {
        if (nvals < 1 || !recorded(p, 0))
            sb_s(b, "?");
        else
            put_hex(b, vals[0]);
        return;
    }
    if (t->kind == TOOL_DW_STRUCT) {
        bool known[2] = {false, false};
        for (int e = 0; e < n; e++)
            known[e] = recorded(p, e);
        if ((size_t)n > nvals) {
            sb_s(b, "{...}");
            return;
        }
        if (!known[0] && (n < 2 || !known[1])) {
            sb_s(b, "?");
            return;
        }
        uint8_t bytes[16] = {0};
        for (int e = 0; e < n; e++)
            if (known[e])
                memcpy(bytes + 8 * e, &vals[e], 8);
        put_agg(b, t, bytes, 0, known, 0);
        return;
    }
    for (int e = 0; e < n; e++)
        if (!recorded(p, e) || (size_t)e >= nvals) {
            sb_s(b, "?");
            return;
        }
    dw_u128 raw = vals[0];
    if (n == 2)
        raw |= (dw_u128)vals[1] << 64;
    if (t->kind == TOOL_DW_STR && str && !fault && vals[0] != 0) {
        put_str(b, str, slen, truncated);
        return;
    }
    put_scalar(b, t, raw);
}

int tool_dw_format(const struct tool_dw_param *p, const uint64_t *vals, size_t nvals,
                   const uint8_t *str, size_t slen, bool truncated, bool fault, char *buf,
                   size_t len)
{
    struct sb b = {0};
    sb_s(&b, "");
    format(&b, p, vals, nvals, str, slen, truncated, fault);
    if (b.oom) {
        free(b.p);
        if (len)
            buf[0] = 0;
        return -1;
    }
    size_t n = b.n;
    if (len) {
        size_t c = n < len ? n : len - 1;
        memcpy(buf, b.p, c);
        buf[c] = 0;
    }
    free(b.p);
    return (int)n;
}
