/* Reading an object's XRay instrumentation map and symbol names from its ELF file.
 *
 * The map (`xray_instr_map`, 32-byte unaligned entries) is read from the on-disk file;
 * version-2 entries are PC-relative to the entry's own run-time address, so each is resolved as
 * bias + sh_addr + 32*i (+8 for the function field) + value. Function ids follow compiler-rt
 * exactly: entries in section order, the first gets 1, and the id grows whenever the resolved
 * function address differs from the previous entry's. Nothing is ever sorted before numbering.
 *
 * Names: STT_FUNC symbols of .symtab (else .dynsym), matched on the function's link-time address.
 * The build id: the first NT_GNU_BUILD_ID note (owner "GNU") of the SHT_NOTE sections, where
 * ld and lld put it (.note.gnu.build-id); `readelf -n` shows the same bytes.
 * Executable PT_LOAD segments are kept (with their flags) for verification and for restoring page
 * protections after patching.
 *
 * The file is read here, without libelf: every object a process can load is a 64-bit
 * little-endian ELF file, and what is read of it is the header, the program and section headers,
 * the map, one symbol table with its strings and the notes. The file is mapped read-only whole
 * (as libelf's ELF_C_READ_MMAP did) and every offset and size is checked against its size before
 * it is read; the headers and each symbol are copied out (memcpy), so no alignment is assumed. A
 * compressed section (SHF_COMPRESSED) is taken as absent. Loading libelf (and its libz) with
 * dlopen was half of the start-up of a small traced program (about 105 us of 200 for reading
 * its map, on the development VM), and the code needed here is small.
 */
#include "stp_internal.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* An ELF file being read: its bytes (mapped), its header, and a copy of its section headers. */
struct elf_in {
    const uint8_t *p;
    uint64_t size;
    Elf64_Ehdr eh;
    Elf64_Shdr *sh; /* nsec headers (NULL when there are none) */
    uint64_t nsec;
    uint64_t shstrndx; /* 0: no section names */
};

/* Whether [off, off + len) lies inside the file. */
static int in_file(const struct elf_in *f, uint64_t off, uint64_t len)
{
    return off <= f->size && len <= f->size - off;
}

/* The bytes of section s, or NULL (no bytes in the file: SHT_NOBITS, compressed, or out of
 * bounds). */
static const uint8_t *sec_bytes(const struct elf_in *f, const Elf64_Shdr *s)
{
    if (s->sh_type == SHT_NOBITS || (s->sh_flags & SHF_COMPRESSED) ||
        !in_file(f, s->sh_offset, s->sh_size))
        return NULL;
    return f->p + s->sh_offset;
}

/* The name of section s, or NULL. */
static const char *sec_name(const struct elf_in *f, const Elf64_Shdr *s)
{
    if (!f->shstrndx)
        return NULL;
    const Elf64_Shdr *str = &f->sh[f->shstrndx];
    const uint8_t *names = sec_bytes(f, str);
    if (!names || s->sh_name >= str->sh_size ||
        !memchr(names + s->sh_name, '\0', str->sh_size - s->sh_name))
        return NULL;
    return (const char *)names + s->sh_name;
}

/* Checks the header and copies the section headers (extended numbering understood): 0, or
 * STP_E_ELF (not a 64-bit little-endian ELF file, or headers outside it), or STP_E_NOMEM. */
static int elf_begin_read(struct elf_in *f)
{
    if (f->size < sizeof f->eh)
        return STP_E_ELF;
    memcpy(&f->eh, f->p, sizeof f->eh);
    const Elf64_Ehdr *eh = &f->eh;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != ELFDATA2LSB)
        return STP_E_ELF;
    if (eh->e_shoff == 0)
        return 0; /* no sections (so no map) */
    Elf64_Shdr sh0;
    if (eh->e_shentsize != sizeof(Elf64_Shdr) || !in_file(f, eh->e_shoff, sizeof sh0))
        return STP_E_ELF;
    memcpy(&sh0, f->p + eh->e_shoff, sizeof sh0);
    f->nsec = eh->e_shnum ? eh->e_shnum : sh0.sh_size;
    f->shstrndx = eh->e_shstrndx == SHN_XINDEX ? sh0.sh_link : eh->e_shstrndx;
    if (f->nsec > (f->size - eh->e_shoff) / sizeof(Elf64_Shdr) || f->nsec > (1u << 24) ||
        (f->shstrndx && f->shstrndx >= f->nsec))
        return STP_E_ELF;
    f->sh = malloc(f->nsec * sizeof *f->sh);
    if (!f->sh)
        return STP_E_NOMEM;
    memcpy(f->sh, f->p + eh->e_shoff, f->nsec * sizeof *f->sh);
    return 0;
}

/* Program header i into *ph: 0, or -1 (outside the file). */
static int elf_phdr(const struct elf_in *f, uint64_t i, Elf64_Phdr *ph)
{
    uint64_t off = f->eh.e_phoff + i * sizeof *ph;
    if (f->eh.e_phentsize != sizeof *ph || off < f->eh.e_phoff || !in_file(f, off, sizeof *ph))
        return -1;
    memcpy(ph, f->p + off, sizeof *ph);
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

/* Symbol i of a table, copied (the table need not be aligned). */
static const Elf64_Sym *sym_at(const uint8_t *table, size_t i, Elf64_Sym *g)
{
    memcpy(g, table + i * sizeof *g, sizeof *g);
    return g;
}

/* Whether symbol s names a function (a named STT_FUNC or IFUNC with an address). */
static int is_named_func(const Elf64_Sym *s, const char *strtab, size_t strsz)
{
    int type = ELF64_ST_TYPE(s->st_info);
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

static int name_functions(const struct elf_in *f, const Elf64_Shdr *sh, struct stp_object *obj)
{
    const uint8_t *table = sec_bytes(f, sh);
    const Elf64_Shdr *strsh = sh->sh_link < f->nsec ? &f->sh[sh->sh_link] : NULL;
    const uint8_t *strbytes = strsh && sh->sh_link ? sec_bytes(f, strsh) : NULL;
    if (!table || sh->sh_entsize != sizeof(Elf64_Sym) || !strbytes || obj->nfuncs == 0)
        return 0;
    const char *strtab = (const char *)strbytes;
    size_t strsz = strsh->sh_size, nsyms = sh->sh_size / sizeof(Elf64_Sym);
    if (nsyms >= UINT32_MAX / 2)
        nsyms = UINT32_MAX / 2 - 1;
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
        Elf64_Sym g;
        const Elf64_Sym *s = sym_at(table, i, &g);
        if (!is_named_func(s, strtab, strsz))
            continue;
        const char *name = strtab + s->st_name;
        if (name[0] == '_' && strcmp(name, "__xray_init") == 0)
            obj->has_xray_runtime = 1;
        if (!usable || s->st_value < lo || s->st_value > hi)
            continue;
        uint32_t global = ELF64_ST_BIND(s->st_info) != STB_LOCAL;
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
        Elf64_Sym g;
        const Elf64_Sym *s = sym_at(table, (pick[f] >> 1) - 1, &g);
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

/* Copies the NT_GNU_BUILD_ID note of the SHT_NOTE section sh, if it has one, into the object.
 * A descriptor longer than STP_BUILD_ID_MAX is left out: no id rather than part of one. Notes
 * are a header (namesz, descsz, type) and the name and descriptor, each padded to 4 bytes, or to
 * 8 in a section aligned to 8 (as .note.gnu.property is); offsets are the section's own. */
static void read_build_id(const struct elf_in *f, const Elf64_Shdr *sh, struct stp_object *obj)
{
    const uint8_t *d = sec_bytes(f, sh);
    if (!d)
        return;
    uint64_t size = sh->sh_size, align = sh->sh_addralign == 8 ? 8 : 4;
    uint64_t off = 0;
    while (size - off >= sizeof(Elf64_Nhdr)) {
        Elf64_Nhdr nh;
        memcpy(&nh, d + off, sizeof nh);
        uint64_t name_off = off + sizeof nh;
        if (nh.n_namesz > size - name_off)
            return;
        uint64_t desc_off = (name_off + nh.n_namesz + align - 1) & ~(align - 1);
        if (desc_off > size || nh.n_descsz > size - desc_off)
            return;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == sizeof "GNU" &&
            memcmp(d + name_off, "GNU", sizeof "GNU") == 0) {
            if (nh.n_descsz > 0 && nh.n_descsz <= STP_BUILD_ID_MAX) {
                memcpy(obj->build_id, d + desc_off, nh.n_descsz);
                obj->build_id_len = nh.n_descsz;
            }
            return;
        }
        off = (desc_off + nh.n_descsz + align - 1) & ~(align - 1);
        if (off > size)
            return;
    }
}

static int load(struct stp_object *obj, struct elf_in *f)
{
    int rc = elf_begin_read(f);
    if (rc != 0)
        return rc;

    /* Executable segments. */
    uint64_t nph = f->eh.e_phnum;
    if (nph == PN_XNUM)
        nph = f->nsec ? f->sh[0].sh_info : 0;
    for (uint64_t i = 0; i < nph && obj->nsegs < STP_MAX_SEGS; i++) {
        Elf64_Phdr ph;
        if (elf_phdr(f, i, &ph) != 0)
            return STP_E_ELF;
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
            continue;
        obj->segs[obj->nsegs].start = ph.p_vaddr + obj->bias;
        obj->segs[obj->nsegs].end = ph.p_vaddr + ph.p_memsz + obj->bias;
        obj->segs[obj->nsegs].flags = ph.p_flags;
        obj->nsegs++;
    }

    const Elf64_Shdr *map = NULL, *symtab = NULL, *dynsym = NULL;
    for (uint64_t i = 1; i < f->nsec; i++) {
        const Elf64_Shdr *sh = &f->sh[i];
        const char *name = sec_name(f, sh);
        if (name && strcmp(name, "xray_instr_map") == 0)
            map = sh;
        else if (sh->sh_type == SHT_SYMTAB)
            symtab = sh;
        else if (sh->sh_type == SHT_DYNSYM)
            dynsym = sh;
        else if (sh->sh_type == SHT_NOTE && obj->build_id_len == 0)
            read_build_id(f, sh, obj);
    }
    if (!map)
        return STP_E_NO_MAP;
    if (map->sh_size % 32 != 0 || map->sh_type == SHT_NOBITS)
        return STP_E_BAD_MAP;
    const uint8_t *raw = sec_bytes(f, map);
    if (!raw)
        return STP_E_BAD_MAP;

    size_t n = map->sh_size / 32;
    uintptr_t map_addr = map->sh_addr + obj->bias;
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
        struct stp_func *fn = &obj->funcs[id - 1];
        if (id > obj->nfuncs) {
            *fn = (struct stp_func){.addr = func, .name_off = SIZE_MAX, .first_sled = (uint32_t)i};
            obj->nfuncs = id;
        }
        fn->nsleds++;
    }
    if (obj->nfuncs && obj->nfuncs < n) {
        struct stp_func *shrunk = realloc(obj->funcs, obj->nfuncs * sizeof *obj->funcs);
        if (shrunk)
            obj->funcs = shrunk;
    }

    /* Names. */
    if (symtab)
        return name_functions(f, symtab, obj);
    if (dynsym)
        return name_functions(f, dynsym, obj);
    return 0;
}

int stp_object_open(const char *path, uintptr_t bias, struct stp_object **out)
{
    *out = NULL;
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
    int rc = STP_E_ELF;
    struct elf_in f = {0};
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        obj->file_size = (uint64_t)st.st_size;
        f.size = (uint64_t)st.st_size;
        void *m = mmap(NULL, (size_t)f.size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            f.p = m;
            rc = load(obj, &f);
            munmap(m, (size_t)f.size);
        }
    }
    free(f.sh);
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

void stp_object_record_args(struct stp_object *obj, size_t i, int entry, int ret)
{
    const struct stp_func *f = &obj->funcs[i];
    for (uint32_t k = 0; k < f->nsleds; k++) {
        struct stp_sled *s = &obj->sleds[f->first_sled + k];
        s->args = (entry && (s->kind == STP_ENTRY || s->kind == STP_LOG_ARGS_ENTER)) ||
                  (ret && s->kind == STP_EXIT);
    }
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
 * read as a 64-bit ELF file. In three reads (the header, the section headers, their names; a
 * fourth for the first section header under extended numbering) and no mapping: every process
 * a traced one starts asks this of its executable and each of its libraries, most have nothing
 * to trace, and mapping each whole file, faulting in its ends and unmapping it cost several
 * times more. */
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
    Elf64_Shdr sh0 = {0}; /* only for extended numbering (no read otherwise) */
    if ((eh.e_shnum == 0 || eh.e_shstrndx == SHN_XINDEX) &&
        stp_pread_all(fd, &sh0, sizeof sh0, eh.e_shoff))
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
