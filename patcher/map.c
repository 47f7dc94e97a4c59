/* Reading an object's XRay instrumentation map and symbol names from its ELF file.
 *
 * The map (`xray_instr_map`, 32-byte unaligned entries) is read from the on-disk file with
 * libelf; version-2 entries are PC-relative to the entry's own run-time address, so each is
 * resolved as bias + sh_addr + 32*i (+8 for the function field) + value. Function ids follow
 * compiler-rt exactly: entries in section order, the first gets 1, and the id grows whenever the
 * resolved function address differs from the previous entry's. Nothing is ever sorted before
 * numbering.
 *
 * Names: STT_FUNC symbols of .symtab (else .dynsym), matched on the function's link-time address.
 * The build id: the first NT_GNU_BUILD_ID note (owner "GNU") of the SHT_NOTE sections, where
 * ld and lld put it (.note.gnu.build-id); `readelf -n` shows the same bytes.
 * Executable PT_LOAD segments are kept (with their flags) for verification and for restoring page
 * protections after patching.
 *
 * libelf is loaded by the first stp_object_open (dlopen of libelf.so.1 through the dynamic
 * linker's own dlopen), not linked: LD_PRELOAD reaches every process a traced program starts,
 * and most have no map (told by stp_file_has_map with a few preads); linking libelf (and its
 * libz) cost each of them about 80 us of loading. Once loaded it stays. Not from inside
 * dl_iterate_phdr (dlopen would deadlock): callers there check stp_elf_loaded() first.
 */
#include "stp_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The libelf functions this file calls, resolved when libelf is loaded (stp_elf_load). */
static struct {
    unsigned (*version)(unsigned);
    Elf *(*begin)(int, Elf_Cmd, Elf *);
    int (*end)(Elf *);
    Elf_Kind (*kind)(Elf *);
    int (*getshdrstrndx)(Elf *, size_t *);
    int (*getphdrnum)(Elf *, size_t *);
    GElf_Phdr *(*getphdr)(Elf *, int, GElf_Phdr *);
    Elf_Scn *(*nextscn)(Elf *, Elf_Scn *);
    Elf_Scn *(*getscn)(Elf *, size_t);
    GElf_Shdr *(*getshdr)(Elf_Scn *, GElf_Shdr *);
    char *(*strptr)(Elf *, size_t, size_t);
    Elf_Data *(*getdata)(Elf_Scn *, Elf_Data *);
    Elf_Data *(*rawdata)(Elf_Scn *, Elf_Data *);
    int (*getclass)(Elf *);
    GElf_Sym *(*getsym)(Elf_Data *, int, GElf_Sym *);
    size_t (*getnote)(Elf_Data *, size_t, GElf_Nhdr *, size_t *, size_t *);
} elf_api;
/* Set (release) once every slot of elf_api is filled; stp_elf_loaded's acquire pairs with it. */
static atomic_int elf_ready;

int stp_elf_loaded(void)
{
    return atomic_load_explicit(&elf_ready, memory_order_acquire);
}

int stp_elf_load(void)
{
    if (stp_elf_loaded())
        return 0;
    /* The dynamic linker's own dlopen: a program's interposed one (the runtime's) must not see
     * libelf come. Never closed: later objects need it again, and it is small. */
    void *(*real_dlopen)(const char *, int);
    *(void **)&real_dlopen = dlsym(RTLD_NEXT, "dlopen");
    void *h = real_dlopen ? real_dlopen(STP_LIBELF_NAME, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h)
        return STP_E_LIBELF;
    static const char *const names[] = {
        "elf_version",       "elf_begin",      "elf_end",      "elf_kind",
        "elf_getshdrstrndx", "elf_getphdrnum", "gelf_getphdr", "elf_nextscn",
        "elf_getscn",        "gelf_getshdr",   "elf_strptr",   "elf_getdata",
        "elf_rawdata",       "gelf_getclass",  "gelf_getsym",  "gelf_getnote"};
    void **slots[] = {
        (void **)&elf_api.version, (void **)&elf_api.begin,         (void **)&elf_api.end,
        (void **)&elf_api.kind,    (void **)&elf_api.getshdrstrndx, (void **)&elf_api.getphdrnum,
        (void **)&elf_api.getphdr, (void **)&elf_api.nextscn,       (void **)&elf_api.getscn,
        (void **)&elf_api.getshdr, (void **)&elf_api.strptr,        (void **)&elf_api.getdata,
        (void **)&elf_api.rawdata, (void **)&elf_api.getclass,      (void **)&elf_api.getsym,
        (void **)&elf_api.getnote};
    _Static_assert(sizeof names / sizeof names[0] == sizeof slots / sizeof slots[0], "elf_api");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!(*slots[i] = dlsym(h, names[i])))
            return STP_E_LIBELF; /* a broken libelf: left loaded, never used */
    elf_api.version(EV_CURRENT);
    atomic_store_explicit(&elf_ready, 1, memory_order_release); /* pairs: stp_elf_loaded */
    return 0;
}

static int64_t get_i64(const uint8_t *p)
{
    int64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Resolves entry i's sled and function addresses. Returns 0, or -1 for an unknown version. */
static int resolve_entry(const uint8_t *e, uintptr_t entry_addr, uintptr_t bias, uint64_t *sled,
                         uint64_t *func)
{
    unsigned version = e[18];
    if (version == 2) {
        *sled = entry_addr + (uint64_t)get_i64(e);
        *func = entry_addr + 8 + (uint64_t)get_i64(e + 8);
        return 0;
    }
    if (version == 0 || version == 1) {
        *sled = (uint64_t)get_i64(e) + bias;
        *func = (uint64_t)get_i64(e + 8) + bias;
        return 0;
    }
    return -1;
}

/* What numbering compares: the function field resolved without the bias (which only matters for
 * versions 0/1, where it shifts every entry alike), or the raw field of an unknown version. */
static uint64_t number_key(const uint8_t *e, uintptr_t entry_addr)
{
    uint64_t sled = 0, func = 0;
    if (resolve_entry(e, entry_addr, 0, &sled, &func) != 0)
        func = (uint64_t)get_i64(e + 8);
    return func;
}

void stp_number_functions(const uint8_t *entries, size_t n, uintptr_t map_addr, uint32_t *ids)
{
    uint32_t id = 0;
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t func = number_key(entries + 32 * i, map_addr + 32 * i);
        if (i == 0 || func != prev)
            id++;
        prev = func;
        ids[i] = id;
    }
}

/* Names: the STT_FUNC symbols with a name whose address lies in the functions' range are
 * collected in table order with their address as an offset from the lowest function's, sorted
 * by it (a stable radix sort: equal addresses keep table order), and merged with the functions
 * in address order. Among the symbols at one address a global one wins over a local one, and
 * otherwise the first in the table; two functions at one address both get its name. Every
 * step reads and writes memory in order: a hash table looked up in symbol-table order (which
 * is in no useful order) missed the cache at every step and took most of a warm start-up's
 * map-and-names time with 100,000 functions. An object whose functions span 4 GiB or more
 * (offsets do not fit 32 bits) has its names looked up one by one. */
struct name_ent {
    uint32_t off;  /* address - lowest function address */
    uint32_t pick; /* (symbol index + 1) << 1 | global */
};

/* Sorts v[0..n) by off, stably, through tmp (the same size): three passes of 11 bits. */
static void radix_sort(struct name_ent *v, struct name_ent *tmp, size_t n)
{
    for (int shift = 0; shift < 33; shift += 11) {
        uint32_t count[2049] = {0};
        for (size_t i = 0; i < n; i++)
            count[((v[i].off >> shift) & 2047) + 1]++;
        for (size_t k = 1; k < 2049; k++)
            count[k] += count[k - 1];
        for (size_t i = 0; i < n; i++)
            tmp[count[(v[i].off >> shift) & 2047]++] = v[i];
        struct name_ent *t = v;
        v = tmp;
        tmp = t;
    }
    /* after an odd number of passes the sorted run is in the caller's tmp: copy it back */
    memcpy(tmp, v, n * sizeof *v);
}

/* Symbol i of the table (direct: the section's Elf64_Sym array, else through gelf into g). */
static const Elf64_Sym *sym_at(Elf_Data *d, const Elf64_Sym *direct, size_t i, GElf_Sym *g)
{
    if (direct)
        return &direct[i];
    return elf_api.getsym(d, (int)i, g) ? (const Elf64_Sym *)g : NULL; /* GElf_Sym is Elf64_Sym */
}

/* Whether symbol s names a function (a named STT_FUNC or IFUNC with an address). */
static int is_named_func(const Elf64_Sym *s, const char *strtab, size_t strsz)
{
    int type = GELF_ST_TYPE(s->st_info);
    return (type == STT_FUNC || type == STT_GNU_IFUNC) && s->st_value != 0 && s->st_shndx != 0 &&
           s->st_name < strsz && strtab[s->st_name] != '\0' &&
           memchr(strtab + s->st_name, '\0', strsz - s->st_name) != NULL;
}

/* The rule between two named symbols at one address: does `pick` (the choice so far, 0 for
 * none) give way to a symbol of this binding? */
static int takes_over(uint32_t pick, uint32_t global)
{
    return !pick || (global && !(pick & 1));
}

static int name_functions(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct stp_object *obj)
{
    Elf_Data *d = elf_api.getdata(scn, NULL);
    Elf_Scn *strscn = elf_api.getscn(elf, sh->sh_link);
    Elf_Data *sd = strscn ? elf_api.getdata(strscn, NULL) : NULL;
    if (!d || sh->sh_entsize == 0 || !sd || !sd->d_buf || obj->nfuncs == 0)
        return 0;
    const char *strtab = sd->d_buf;
    size_t strsz = sd->d_size, nsyms = d->d_size / sh->sh_entsize;
    if (nsyms >= UINT32_MAX / 2)
        nsyms = UINT32_MAX / 2 - 1;
    const Elf64_Sym *direct = elf_api.getclass(elf) == ELFCLASS64 && d->d_type == ELF_T_SYM &&
                                      sh->sh_entsize == sizeof(Elf64_Sym)
                                  ? d->d_buf
                                  : NULL;
    /* The range of the functions that lie in an executable segment (no symbol names another:
     * they could not be proven either). */
    uint64_t lo = UINT64_MAX, hi = 0, prev = 0;
    int sorted = 1;
    for (size_t f = 0; f < obj->nfuncs; f++) {
        if (!stp_find_seg(obj, obj->funcs[f].addr, 1))
            continue;
        uint64_t a = obj->funcs[f].addr - obj->bias;
        sorted &= a >= prev;
        prev = a;
        lo = a < lo ? a : lo;
        hi = a > hi ? a : hi;
    }
    /* Nothing to name, or text spanning 4 GiB or more: no offset fits 32 bits, and no such
     * object can be patched anyway (a sled's stub must lie within 2 GiB of it). The symbols
     * are still read for __xray_init. */
    int usable = lo <= hi && hi - lo <= UINT32_MAX;
    uint32_t *pick = calloc(obj->nfuncs, sizeof *pick); /* (symbol + 1) << 1 | global */
    struct name_ent *e = malloc(2 * (nsyms ? nsyms : 1) * sizeof *e);
    struct name_ent *fe = sorted ? NULL : malloc(2 * obj->nfuncs * sizeof *fe);
    if (!pick || !e || (!sorted && !fe)) {
        free(pick);
        free(e);
        free(fe);
        return STP_E_NOMEM;
    }
    /* The named function symbols in range, sorted by address, merged with the functions in
     * address order (the map's order nearly always, else sorted here too). */
    size_t ne = 0;
    for (size_t i = 0; i < nsyms; i++) {
        GElf_Sym g;
        const Elf64_Sym *s = sym_at(d, direct, i, &g);
        if (!s || !is_named_func(s, strtab, strsz))
            continue;
        const char *name = strtab + s->st_name;
        if (name[0] == '_' && strcmp(name, "__xray_init") == 0)
            obj->has_xray_runtime = 1;
        if (!usable || s->st_value < lo || s->st_value > hi)
            continue;
        uint32_t global = GELF_ST_BIND(s->st_info) != STB_LOCAL;
        e[ne++] = (struct name_ent){(uint32_t)(s->st_value - lo), (uint32_t)(i + 1) << 1 | global};
    }
    radix_sort(e, e + ne, ne);
    size_t nf = 0;
    if (!usable) {
        nf = 0;
    } else if (!sorted) {
        for (size_t f = 0; f < obj->nfuncs; f++)
            if (stp_find_seg(obj, obj->funcs[f].addr, 1))
                fe[nf++] =
                    (struct name_ent){(uint32_t)(obj->funcs[f].addr - obj->bias - lo), (uint32_t)f};
        radix_sort(fe, fe + nf, nf);
    } else {
        nf = obj->nfuncs;
    }
    size_t k = 0;
    for (size_t x = 0; x < nf; x++) {
        size_t f = sorted ? x : fe[x].pick;
        if (sorted && !stp_find_seg(obj, obj->funcs[f].addr, 1))
            continue;
        uint32_t off = (uint32_t)(obj->funcs[f].addr - obj->bias - lo);
        while (k < ne && e[k].off < off)
            k++;
        uint32_t p = 0;
        for (size_t m = k; m < ne && e[m].off == off; m++)
            if (takes_over(p, e[m].pick & 1))
                p = e[m].pick;
        pick[f] = p;
    }
    free(e);
    free(fe);
    /* The chosen names, into the object's pool (names are pieces of the string table: its size
     * is nearly always room enough), and the sizes. */
    size_t pool = 0;
    for (size_t f = 0; f < obj->nfuncs; f++) {
        if (!pick[f])
            continue;
        GElf_Sym g;
        const Elf64_Sym *s = sym_at(d, direct, (pick[f] >> 1) - 1, &g);
        if (!s)
            continue;
        const char *name = strtab + s->st_name;
        size_t len = strlen(name) + 1;
        if (pool + len > obj->names_cap) {
            size_t ncap = obj->names_cap ? obj->names_cap * 2 : strsz + 4096;
            while (ncap < pool + len)
                ncap *= 2;
            char *np = realloc(obj->names, ncap);
            if (!np) {
                free(pick);
                return STP_E_NOMEM;
            }
            obj->names = np;
            obj->names_cap = ncap;
        }
        memcpy(obj->names + pool, name, len);
        obj->funcs[f].name_off = pool;
        obj->funcs[f].size = s->st_size;
        pool += len;
    }
    free(pick);
    return 0;
}

/* Copies the NT_GNU_BUILD_ID note of the SHT_NOTE section scn, if it has one, into the object.
 * A descriptor longer than STP_BUILD_ID_MAX is left out: no id rather than part of one. */
static void read_build_id(Elf_Scn *scn, struct stp_object *obj)
{
    Elf_Data *d = elf_api.getdata(scn, NULL);
    if (!d)
        return;
    GElf_Nhdr nh;
    size_t off = 0, name_off, desc_off, next;
    while (off < d->d_size && (next = elf_api.getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
        const char *name = (const char *)d->d_buf + name_off;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == sizeof "GNU" &&
            memcmp(name, "GNU", sizeof "GNU") == 0) {
            if (nh.n_descsz > 0 && nh.n_descsz <= STP_BUILD_ID_MAX) {
                memcpy(obj->build_id, (const uint8_t *)d->d_buf + desc_off, nh.n_descsz);
                obj->build_id_len = nh.n_descsz;
            }
            return;
        }
        off = next;
    }
}

static int load(struct stp_object *obj, Elf *elf)
{
    size_t shstrndx;
    if (elf_api.kind(elf) != ELF_K_ELF || elf_api.getshdrstrndx(elf, &shstrndx) != 0)
        return STP_E_ELF;

    /* Executable segments. */
    size_t nph;
    if (elf_api.getphdrnum(elf, &nph) != 0)
        return STP_E_ELF;
    for (size_t i = 0; i < nph && obj->nsegs < STP_MAX_SEGS; i++) {
        GElf_Phdr ph;
        if (!elf_api.getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
            continue;
        obj->segs[obj->nsegs].start = ph.p_vaddr + obj->bias;
        obj->segs[obj->nsegs].end = ph.p_vaddr + ph.p_memsz + obj->bias;
        obj->segs[obj->nsegs].flags = ph.p_flags;
        obj->nsegs++;
    }

    Elf_Scn *scn = NULL, *map = NULL, *symtab = NULL, *dynsym = NULL;
    GElf_Shdr map_sh = {0}, symtab_sh = {0}, dynsym_sh = {0}, sh;
    while ((scn = elf_api.nextscn(elf, scn)) != NULL) {
        if (!elf_api.getshdr(scn, &sh))
            continue;
        const char *name = elf_api.strptr(elf, shstrndx, sh.sh_name);
        if (name && strcmp(name, "xray_instr_map") == 0) {
            map = scn;
            map_sh = sh;
        } else if (sh.sh_type == SHT_SYMTAB) {
            symtab = scn;
            symtab_sh = sh;
        } else if (sh.sh_type == SHT_DYNSYM) {
            dynsym = scn;
            dynsym_sh = sh;
        } else if (sh.sh_type == SHT_NOTE && obj->build_id_len == 0) {
            read_build_id(scn, obj);
        }
    }
    if (!map)
        return STP_E_NO_MAP;
    if (map_sh.sh_size % 32 != 0 || map_sh.sh_type == SHT_NOBITS)
        return STP_E_BAD_MAP;
    Elf_Data *d = elf_api.rawdata(map, NULL);
    if (!d || d->d_size != map_sh.sh_size)
        return STP_E_BAD_MAP;

    size_t n = map_sh.sh_size / 32;
    const uint8_t *raw = d->d_buf;
    uintptr_t map_addr = map_sh.sh_addr + obj->bias;
    /* Sleds and functions in one pass, numbered as stp_number_functions numbers them. The
     * function array is sized for the worst case (a function per entry) but only the part used
     * is ever touched, then given back. */
    obj->sleds = malloc((n ? n : 1) * sizeof *obj->sleds);
    obj->funcs = malloc((n ? n : 1) * sizeof *obj->funcs);
    if (!obj->sleds || !obj->funcs)
        return STP_E_NOMEM;
    obj->nsleds = n;
    uint32_t id = 0;
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *e = raw + 32 * i;
        uint64_t key = number_key(e, map_addr + 32 * i);
        if (i == 0 || key != prev)
            id++;
        prev = key;
        struct stp_sled *s = &obj->sleds[i];
        uint64_t sled = 0, func = 0;
        *s = (struct stp_sled){.fid = id, .kind = e[16], .version = e[18]};
        if (resolve_entry(e, map_addr + 32 * i, obj->bias, &sled, &func) != 0)
            s->status = STP_UNSUPPORTED_VERSION;
        s->addr = sled;
        struct stp_func *f = &obj->funcs[id - 1];
        if (id > obj->nfuncs) {
            *f = (struct stp_func){.addr = func, .name_off = SIZE_MAX, .first_sled = (uint32_t)i};
            obj->nfuncs = id;
        }
        f->nsleds++;
    }
    if (obj->nfuncs && obj->nfuncs < n) {
        struct stp_func *shrunk = realloc(obj->funcs, obj->nfuncs * sizeof *obj->funcs);
        if (shrunk)
            obj->funcs = shrunk;
    }

    /* Names. */
    if (symtab)
        return name_functions(elf, symtab, &symtab_sh, obj);
    if (dynsym)
        return name_functions(elf, dynsym, &dynsym_sh, obj);
    return 0;
}

int stp_object_open(const char *path, uintptr_t bias, struct stp_object **out)
{
    *out = NULL;
    int loaded = stp_elf_load();
    if (loaded != 0)
        return loaded;
    struct stp_object *obj = calloc(1, sizeof *obj);
    if (!obj)
        return STP_E_NOMEM;
    obj->bias = bias;
    obj->path = strdup(path);
    if (!obj->path) {
        free(obj);
        return STP_E_NOMEM;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int saved = errno;
        stp_object_close(obj);
        errno = saved;
        return STP_E_OPEN;
    }
    struct stat st;
    if (fstat(fd, &st) == 0)
        obj->file_size = (uint64_t)st.st_size;
    Elf *elf = elf_api.begin(fd, ELF_C_READ_MMAP, NULL);
    int rc = elf ? load(obj, elf) : STP_E_ELF;
    if (elf)
        elf_api.end(elf);
    close(fd);
    if (rc != 0) {
        stp_object_close(obj);
        return rc;
    }
    *out = obj;
    return 0;
}

const struct stp_seg *stp_find_seg(const struct stp_object *obj, uint64_t addr, size_t len)
{
    for (size_t i = 0; i < obj->nsegs; i++)
        if (addr >= obj->segs[i].start && addr + len <= obj->segs[i].end)
            return &obj->segs[i];
    return NULL;
}

void stp_object_close(struct stp_object *obj)
{
    if (!obj)
        return;
    free(obj->path);
    free(obj->sleds);
    free(obj->funcs);
    free(obj->names);
    free(obj);
}

size_t stp_object_nsleds(const struct stp_object *obj)
{
    return obj->nsleds;
}
size_t stp_object_nfuncs(const struct stp_object *obj)
{
    return obj->nfuncs;
}
uintptr_t stp_object_bias(const struct stp_object *obj)
{
    return obj->bias;
}
const char *stp_object_path(const struct stp_object *obj)
{
    return obj->path;
}
size_t stp_object_build_id(const struct stp_object *obj, const uint8_t **id)
{
    *id = obj->build_id_len ? obj->build_id : NULL;
    return obj->build_id_len;
}
int stp_object_has_xray_runtime(const struct stp_object *obj)
{
    return obj->has_xray_runtime;
}

void stp_object_func(const struct stp_object *obj, size_t i, uint32_t *id, uintptr_t *addr,
                     const char **name)
{
    const struct stp_func *f = &obj->funcs[i];
    *id = (uint32_t)i + 1;
    *addr = f->addr;
    *name = f->name_off == SIZE_MAX ? "" : obj->names + f->name_off;
}

static int call_kind(unsigned kind)
{
    return kind != STP_CUSTOM_EVENT && kind != STP_TYPED_EVENT;
}

size_t stp_func_whole(struct stp_object *obj, const struct stp_func *fn)
{
    struct stp_sled *v = obj->sleds + fn->first_sled;
    uint8_t bad = STP_OK;
    for (uint32_t k = 0; k < fn->nsleds && bad == STP_OK; k++)
        if (call_kind(v[k].kind) && v[k].status != STP_OK && v[k].status != STP_FILTERED)
            bad = v[k].status;
    size_t n = 0;
    for (uint32_t k = 0; k < fn->nsleds && bad != STP_OK; k++)
        if (call_kind(v[k].kind) && v[k].status == STP_OK) {
            v[k].status = bad;
            n++;
        }
    return n;
}

void stp_object_sled(const struct stp_object *obj, size_t i, uintptr_t *addr, enum stp_kind *kind,
                     uint32_t *fid, enum stp_status *status)
{
    const struct stp_sled *s = &obj->sleds[i];
    *addr = s->addr;
    *kind = (enum stp_kind)s->kind;
    *fid = s->fid;
    *status = (enum stp_status)s->status;
}

size_t stp_object_proven(const struct stp_object *obj)
{
    return obj->nproven;
}

void stp_object_set_id_base(struct stp_object *obj, uint32_t base)
{
    obj->id_base = base;
}

void stp_object_leave_out(struct stp_object *obj, size_t i)
{
    const struct stp_func *f = &obj->funcs[i];
    for (uint32_t k = 0; k < f->nsleds; k++)
        if (obj->sleds[f->first_sled + k].status == STP_OK)
            obj->sleds[f->first_sled + k].status = STP_FILTERED;
}

void stp_object_counts(const struct stp_object *obj, size_t n[STP_NSTATUS])
{
    memset(n, 0, STP_NSTATUS * sizeof *n);
    for (size_t i = 0; i < obj->nsleds; i++)
        if (obj->sleds[i].status < STP_NSTATUS)
            n[obj->sleds[i].status]++;
}

const char *stp_strerror(int err)
{
    switch (err) {
    case STP_E_OK:
        return "success";
    case STP_E_OPEN:
        return "cannot open the ELF file";
    case STP_E_ELF:
        return "not a readable ELF file";
    case STP_E_NO_MAP:
        return "no xray_instr_map section (not built with -fxray-instrument?)";
    case STP_E_BAD_MAP:
        return "malformed xray_instr_map section";
    case STP_E_NOMEM:
        return "out of memory";
    case STP_E_CAPSTONE:
        return "Capstone could not be initialised";
    case STP_E_STUB:
        return "no stub page could be mapped within +-2 GiB of the text";
    case STP_E_UNPROVEN:
        return "the proof cache lacks some of the object's proofs";
    case STP_E_LIBELF:
        return "libelf could not be loaded (" STP_LIBELF_NAME ")";
    case STP_E_PROTECT:
        return "mprotect refused to make the text writable";
    default:
        return "unknown error";
    }
}

const char *stp_status_name(enum stp_status s)
{
    static const char *const names[STP_NSTATUS] = {
        [STP_OK] = "ok",
        [STP_BAD_BYTES] = "bytes differ from the sled template",
        [STP_NOT_ON_BOUNDARY] = "not on an instruction boundary",
        [STP_UNDECODABLE] = "undecodable code before the sled",
        [STP_OUTSIDE_TEXT] = "outside the executable segments",
        [STP_UNSUPPORTED_KIND] = "kind not supported yet",
        [STP_UNSUPPORTED_VERSION] = "unknown map entry version",
        [STP_NO_STUB] = "no stub within rel32 reach",
        [STP_PROTECT_FAILED] = "mprotect refused",
        [STP_FILTERED] = "left out by SLEDTRACE_FILTER/SLEDTRACE_EXCLUDE",
        [STP_BRANCH_INTO] = "a branch in its function lands inside it",
        [STP_BREAKPOINT] = "a debugger's breakpoint (int3) on its sled",
        [STP_CHANGED] = "its sled changed by someone else (a debugger?) since its proof",
    };
    return (unsigned)s < STP_NSTATUS ? names[s] : "unknown";
}

const char *stp_kind_name(enum stp_kind k)
{
    static const char *const names[STP_NKINDS] = {"entry",    "exit",         "tail",
                                                  "log-args", "custom-event", "typed-event"};
    return (unsigned)k < STP_NKINDS ? names[k] : "unknown";
}

/* Reads exactly n bytes at off (retrying short reads and EINTR): 0, or -1 (error or end of
 * file). */
int stp_pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    uint8_t *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

/* Whether the ELF file at `path` has a section named xray_instr_map: 1, 0, or -1 if it cannot be
 * read as a 64-bit ELF file. Without libelf, in three reads (the header, the section headers,
 * their names) and no mapping: every process a traced one starts asks this of its executable
 * and each of its libraries, most have nothing to trace, and mapping each whole file, faulting
 * in its ends and unmapping it cost several times more. */
int stp_file_has_map(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int found = -1;
    struct stat st;
    Elf64_Ehdr eh;
    Elf64_Shdr *sh = NULL;
    char *names = NULL;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof eh ||
        stp_pread_all(fd, &eh, sizeof eh, 0))
        goto out;
    uint64_t size = (uint64_t)st.st_size;
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff == 0 || eh.e_shoff > size ||
        size - eh.e_shoff < sizeof(Elf64_Shdr))
        goto out;
    Elf64_Shdr sh0;
    if (stp_pread_all(fd, &sh0, sizeof sh0, eh.e_shoff))
        goto out;
    uint64_t nsec = eh.e_shnum ? eh.e_shnum : sh0.sh_size;
    uint64_t strndx = eh.e_shstrndx == SHN_XINDEX ? sh0.sh_link : eh.e_shstrndx;
    if (nsec > (size - eh.e_shoff) / sizeof(Elf64_Shdr) || strndx >= nsec || nsec > (1u << 20))
        goto out;
    sh = malloc(nsec * sizeof *sh);
    if (!sh || stp_pread_all(fd, sh, nsec * sizeof *sh, eh.e_shoff))
        goto out;
    const Elf64_Shdr *strsec = &sh[strndx];
    if (strsec->sh_offset > size || strsec->sh_size > size - strsec->sh_offset ||
        strsec->sh_size > (64u << 20))
        goto out;
    names = malloc(strsec->sh_size ? strsec->sh_size : 1);
    if (!names || stp_pread_all(fd, names, strsec->sh_size, strsec->sh_offset))
        goto out;
    static const char want[] = "xray_instr_map";
    found = 0;
    for (uint64_t i = 0; i < nsec && !found; i++)
        if (sh[i].sh_name < strsec->sh_size && strsec->sh_size - sh[i].sh_name >= sizeof want &&
            memcmp(names + sh[i].sh_name, want, sizeof want) == 0)
            found = 1;
out:
    free(sh);
    free(names);
    close(fd);
    return found;
}
