/* Libraries opened with RTLD_DEEPBIND (issue 23.9).
 *
 * The runtime interposes functions of libc's (_exit, _Exit, quick_exit, the exec family,
 * sigaction, dlopen, pthread_create...: the functions it exports) by coming before libc in the
 * global scope. An object loaded by dlopen(..., RTLD_DEEPBIND) (the library and every dependency
 * that dlopen loads with it) looks its symbols up in the library's own dependency list first and
 * in the global scope only after it: it binds those functions to libc's, past the runtime. Its
 * `_exit(3)` then ends the process without completing the trace (the last flush period lost), its
 * exec loses it all, its sigaction replaces the runtime's fatal-signal handler, its dlopen brings
 * libraries that are never patched.
 *
 * After such a dlopen, the runtime rewrites the GOT slots of the objects it loaded (the
 * R_X86_64_JUMP_SLOT and R_X86_64_GLOB_DAT relocations: calls through the PLT, and taken
 * addresses) whose symbol is one the runtime defines and which resolve, in the library's deep
 * scope, to the very definition the runtime wraps (dlsym(RTLD_NEXT): libc's): they get the
 * runtime's function, as without RTLD_DEEPBIND. A slot whose symbol the library or one of its own
 * dependencies defines differently is left alone (that is what it asked RTLD_DEEPBIND for). Lazy
 * slots (not yet bound) are bound now. Slots in the RELRO region (read-only once relocated) are
 * made writable for the write, page by page, and read-only again (mprotect as a system call:
 * the program's mprotect is the runtime's own, which waits for patching).
 *
 * Which objects: those the dlopen added. The loader counts every object it loads (dlpi_adds):
 * the count before the call, taken by dlopen's wrapper, and after it say how many are new; they
 * are the last ones in the loader's list, starting with the library itself. A library loaded
 * before without RTLD_DEEPBIND keeps its ordinary scope: nothing is new, nothing is done.
 *
 * Not covered: dlmopen namespaces; a GOT slot read into a register before the rewrite (a
 * constructor of the library that runs inside dlopen has already run, with libc's functions).
 * The symbols the runtime defines are read once from its own dynamic symbol table (no list to
 * keep in step with the exports).
 *
 * Called with runtime.c's objs_lock held (one rewrite at a time: two threads toggling the same
 * page's protection would fault); never from inside dl_iterate_phdr (dlsym takes the loader's
 * other lock).
 */
#include "str.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { MAX_NEW = 64, MAX_OWN = 128 };

/* ---- the runtime's own exported functions ---- */

struct own {
    const char *name;
    void *addr;
};
static struct own own[MAX_OWN];
static size_t nown;
static int own_read; /* 0: not yet, 1: done (under objs_lock) */

static uintptr_t dyn_ptr(uintptr_t base, uintptr_t v)
{
    /* glibc relocates the d_ptr entries of a loaded object's dynamic section in place; the
     * vDSO's (and some other loaders') stay file offsets. */
    return v < base ? v + base : v;
}

/* Number of symbols in a dynamic symbol table, from its DT_GNU_HASH or DT_HASH table. */
static size_t count_syms(const uint32_t *gnu, const uint32_t *sysv)
{
    if (sysv)
        return sysv[1]; /* nchain */
    if (!gnu)
        return 0;
    uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
    const uint32_t *buckets = gnu + 4 + 2 * (size_t)bloom_size; /* 64-bit bloom words */
    const uint32_t *chain = buckets + nbuckets;
    uint32_t last = 0;
    for (uint32_t b = 0; b < nbuckets; b++)
        if (buckets[b] > last)
            last = buckets[b];
    if (last < symoffset)
        return symoffset;
    while (!(chain[last - symoffset] & 1))
        last++;
    return (size_t)last + 1;
}

struct dyn {
    const ElfW(Sym) * symtab;
    const char *strtab;
    const ElfW(Rela) * jmprel, *rela;
    size_t jmprel_n, rela_n;
    const uint32_t *gnu_hash, *hash;
};

static void read_dyn(uintptr_t base, const ElfW(Dyn) * d, struct dyn *o)
{
    memset(o, 0, sizeof *o);
    size_t pltsz = 0, relasz = 0, relaent = sizeof(ElfW(Rela));
    int pltrel_rela = 1;
    for (; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB:
            o->symtab = (const ElfW(Sym) *)dyn_ptr(base, d->d_un.d_ptr);
            break;
        case DT_STRTAB:
            o->strtab = (const char *)dyn_ptr(base, d->d_un.d_ptr);
            break;
        case DT_JMPREL:
            o->jmprel = (const ElfW(Rela) *)dyn_ptr(base, d->d_un.d_ptr);
            break;
        case DT_PLTRELSZ:
            pltsz = d->d_un.d_val;
            break;
        case DT_PLTREL:
            pltrel_rela = d->d_un.d_val == DT_RELA;
            break;
        case DT_RELA:
            o->rela = (const ElfW(Rela) *)dyn_ptr(base, d->d_un.d_ptr);
            break;
        case DT_RELASZ:
            relasz = d->d_un.d_val;
            break;
        case DT_RELAENT:
            relaent = d->d_un.d_val;
            break;
        case DT_GNU_HASH:
            o->gnu_hash = (const uint32_t *)dyn_ptr(base, d->d_un.d_ptr);
            break;
        case DT_HASH:
            o->hash = (const uint32_t *)dyn_ptr(base, d->d_un.d_ptr);
            break;
        }
    }
    if (relaent != sizeof(ElfW(Rela)) || !pltrel_rela) {
        o->jmprel = o->rela = NULL; /* not x86-64's RELA: leave the object alone */
        return;
    }
    o->jmprel_n = o->jmprel ? pltsz / sizeof(ElfW(Rela)) : 0;
    o->rela_n = o->rela ? relasz / sizeof(ElfW(Rela)) : 0;
}

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct dl_phdr_info *out = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + p->p_vaddr;
        if ((uintptr_t)&find_self >= lo && (uintptr_t)&find_self < lo + p->p_memsz) {
            *out = *info;
            return 1;
        }
    }
    return 0;
}

/* The functions the runtime exports: global or weak, defined, default visibility. */
static void read_own(void)
{
    own_read = 1;
    struct dl_phdr_info self;
    memset(&self, 0, sizeof self);
    if (!dl_iterate_phdr(find_self, &self))
        return;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < self.dlpi_phnum; i++)
        if (self.dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(self.dlpi_addr + self.dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return;
    struct dyn d;
    read_dyn(self.dlpi_addr, dyn, &d);
    size_t n = count_syms(d.gnu_hash, d.hash);
    for (size_t i = 1; i < n && d.symtab && d.strtab && nown < MAX_OWN; i++) {
        const ElfW(Sym) *s = &d.symtab[i];
        int bind = ELF64_ST_BIND(s->st_info);
        if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) != STT_FUNC ||
            (bind != STB_GLOBAL && bind != STB_WEAK) ||
            ELF64_ST_VISIBILITY(s->st_other) != STV_DEFAULT)
            continue;
        own[nown++] = (struct own){d.strtab + s->st_name, (void *)(self.dlpi_addr + s->st_value)};
    }
}

static void *own_lookup(const char *name)
{
    for (size_t i = 0; i < nown; i++)
        if (strcmp(own[i].name, name) == 0)
            return own[i].addr;
    return NULL;
}

/* ---- the objects a dlopen added ---- */

static int count_loads(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)info;
    if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
        *(unsigned long long *)data = info->dlpi_adds;
    return 1; /* the count is the same in every entry */
}

unsigned long long str_deepbind_loads(void)
{
    unsigned long long n = 0;
    dl_iterate_phdr(count_loads, &n);
    return n;
}

struct added {
    uintptr_t base;
    const ElfW(Dyn) * dyn;
    uintptr_t relro_lo, relro_hi; /* page-aligned: what the loader made read-only */
};

struct collect {
    uintptr_t root;   /* the library's load address */
    const char *name; /* and its name */
    size_t want;      /* objects the dlopen added */
    size_t n;
    int started;
    struct added a[MAX_NEW];
};

static int collect_one(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct collect *c = data;
    if (!c->started) {
        if (info->dlpi_addr != c->root || !info->dlpi_name || strcmp(info->dlpi_name, c->name))
            return 0;
        c->started = 1;
    }
    if (c->n == c->want || c->n == MAX_NEW)
        return 1;
    struct added *a = &c->a[c->n];
    memset(a, 0, sizeof *a);
    a->base = info->dlpi_addr;
    long page = sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_DYNAMIC)
            a->dyn = (const ElfW(Dyn) *)(info->dlpi_addr + p->p_vaddr);
        if (p->p_type == PT_GNU_RELRO) {
            /* as the loader does (_dl_protect_relro): both ends rounded down */
            a->relro_lo = (info->dlpi_addr + p->p_vaddr) & ~(uintptr_t)(page - 1);
            a->relro_hi = (info->dlpi_addr + p->p_vaddr + p->p_memsz) & ~(uintptr_t)(page - 1);
        }
    }
    if (a->dyn)
        c->n++;
    return 0;
}

/* Writes `value` into the GOT slot at `slot`. Returns 0, or -1 (its page could not be made
 * writable). */
static int write_slot(const struct added *a, uintptr_t slot, void *value)
{
    int ro = slot >= a->relro_lo && slot < a->relro_hi;
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t pg = slot & ~(uintptr_t)(page - 1);
    if (ro && syscall(SYS_mprotect, pg, (size_t)page, PROT_READ | PROT_WRITE) != 0)
        return -1;
    /* One aligned 8-byte store: a thread calling through this slot meanwhile reaches either
     * function. Relaxed: the target's code was there before. */
    atomic_store_explicit((_Atomic(uintptr_t) *)slot, (uintptr_t)value, memory_order_relaxed);
    if (ro)
        syscall(SYS_mprotect, pg, (size_t)page, PROT_READ);
    return 0;
}

/* The object's relocations of one table: every slot to point back at the runtime. */
static size_t fix_table(const struct added *a, const struct dyn *d, const ElfW(Rela) * r, size_t n,
                        void *handle, int *failed)
{
    size_t fixed = 0;
    for (size_t i = 0; i < n; i++, r++) {
        unsigned type = (unsigned)ELF64_R_TYPE(r->r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        size_t si = ELF64_R_SYM(r->r_info);
        if (!si)
            continue;
        const ElfW(Sym) *s = &d->symtab[si];
        if (s->st_shndx != SHN_UNDEF)
            continue; /* the object's own definition */
        const char *name = d->strtab + s->st_name;
        void *mine = own_lookup(name);
        if (!mine)
            continue;
        void *bound = dlsym(handle, name); /* the deep scope's definition */
        void *next = dlsym(RTLD_NEXT, name);
        if (!bound || !next)
            (void)dlerror(); /* no error of ours left for the program's dlerror() */
        if (!bound || bound == mine || bound != next)
            continue; /* reaches the runtime anyway, or a definition of the library's own */
        if (write_slot(a, a->base + r->r_offset, mine) != 0)
            *failed = 1;
        else
            fixed++;
    }
    return fixed;
}

void str_deepbind_fix(void *handle, unsigned long long loads_before)
{
    if (!own_read)
        read_own();
    unsigned long long loads = str_deepbind_loads();
    struct link_map *root = NULL;
    /* Nothing new loaded: the library was there before, with the scope it had then. */
    if (!nown || loads <= loads_before || dlinfo(handle, RTLD_DI_LINKMAP, &root) != 0 || !root ||
        !root->l_name)
        return;
    static struct collect c; /* under objs_lock; 2.5 KiB kept off the program's stack */
    memset(&c, 0, sizeof c);
    c.root = root->l_addr;
    c.name = root->l_name;
    c.want = (size_t)(loads - loads_before);
    dl_iterate_phdr(collect_one, &c);
    size_t fixed = 0;
    int failed = 0;
    for (size_t k = 0; k < c.n; k++) {
        struct dyn d;
        read_dyn(c.a[k].base, c.a[k].dyn, &d);
        if (!d.symtab || !d.strtab)
            continue;
        fixed += fix_table(&c.a[k], &d, d.jmprel, d.jmprel_n, handle, &failed);
        fixed += fix_table(&c.a[k], &d, d.rela, d.rela_n, handle, &failed);
    }
    if (failed)
        str_log(STR_WARN,
                "%s (RTLD_DEEPBIND): some of its calls of functions the tracer interposes "
                "(_exit, exec, sigaction...) could not be pointed back at the tracer; if it "
                "ends the process with them, the trace may lack the last flush period",
                root->l_name);
    if (c.want > MAX_NEW)
        str_log(STR_WARN,
                "%s (RTLD_DEEPBIND) loaded %llu objects; the calls of functions the tracer "
                "interposes made by all but the first %d go past it",
                root->l_name, (unsigned long long)c.want, MAX_NEW);
    str_log(STR_DEBUG, "%s (RTLD_DEEPBIND): %zu GOT slots of %zu objects pointed at the tracer",
            root->l_name, fixed, c.n);
}
