/* The clock behind every timestamp: the TSC when it is invariant, else CLOCK_MONOTONIC in
 * nanoseconds (trace frequency 1e9). SLEDTRACE_CLOCK=auto|tsc|monotonic chooses; auto follows
 * CPUID leaf 0x80000007 (EDX bit 8, invariant TSC), which also sets the header's constant and
 * nonstop bits.
 *
 * The monotonic clock is read on the hot path through the vDSO's own __vdso_clock_gettime,
 * found here by walking the vDSO's ELF dynamic symbols: not libc's clock_gettime, whose C code
 * may use vector registers the trampolines do not save (the kernel builds the vDSO without
 * them), and no syscall. Without the symbol the hot path falls back to the raw syscall. The
 * choice and the lookups are made once, at start-up, before any event.
 *
 * The TSC's frequency is calibrated against CLOCK_MONOTONIC_RAW (freq.c), read through
 * str_clock_raw: the vDSO's function as well, else the raw system call, never libc's
 * clock_gettime, which a preloaded library may interpose (libfaketime scales every duration:
 * its x10 made every traced time ten times too long, issue 23.10).
 *
 * What CPUID says of the TSC's frequency (str_clock_cpuid_hz) is what a calibration is checked
 * against (freq.c): leaf 0x15 gives it exactly (the crystal's frequency times the
 * TSC/crystal ratio) when it names the crystal; leaf 0x16 gives the processor's base frequency
 * in MHz, which is the TSC's on the processors that have the leaf. Most AMD processors and many
 * hypervisors have neither (both read as 0): no reference then.
 *
 * CPUID costs. Under a hypervisor every CPUID instruction traps to it: about 7 us each on the
 * development VM (an AMD EPYC under KVM), and start-up used to run 9 of them (5 here, 4 in the
 * patcher's stp_fpu_init), 60 us of every traced process. The invariant-TSC bit comes from the
 * copy of the leaves glibc's dynamic linker made at start-up (<sys/platform/x86.h>), asked with
 * CPUID only where glibc left the extended leaves unread (vendors it does not know). Leaves 0x15
 * and 0x16 (three instructions with the highest leaf's) are read when a calibration is first
 * checked, by whichever thread that is; each computes the same answer, and the release store of
 * `cpuid_known`, made after the values, pairs with the acquire load in str_clock_cpuid_hz.
 */
#include "str.h"
#include "stf.h"

#include <cpuid.h>
#include <elf.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/platform/x86.h>
#include <sys/syscall.h>
#include <unistd.h>

int str_clock_tsc = 1;
str_vdso_gettime_fn str_vdso_gettime;
str_vdso_gettime_fn str_vdso_clock;
/* str_clock_cpuid_hz's answer (see above): 0, unknown; set once by whoever asks first. */
static _Atomic uint64_t cpuid_hz;
static _Atomic int cpuid_exact, cpuid_known;

/* The TSC's frequency as CPUID states it (see above), or 0. */
static void read_cpuid_hz(void)
{
    unsigned a, b, c, d;
    unsigned max = __get_cpuid_max(0, NULL);
    uint64_t hz = 0;
    int exact = 0;
    if (max >= 0x15u) {
        __cpuid_count(0x15u, 0, a, b, c, d);
        if (a && b && c) {
            hz = (uint64_t)c * b / a;
            exact = 1;
        }
    }
    if (!exact && max >= 0x16u) {
        __cpuid_count(0x16u, 0, a, b, c, d);
        if (a & 0xffffu)
            hz = (uint64_t)(a & 0xffffu) * 1000000u;
    }
    atomic_store_explicit(&cpuid_hz, hz, memory_order_relaxed);
    atomic_store_explicit(&cpuid_exact, exact, memory_order_relaxed);
    atomic_store_explicit(&cpuid_known, 1, memory_order_release); /* pairs: str_clock_cpuid_hz */
}

uint64_t str_clock_cpuid_hz(int *exact)
{
    if (!atomic_load_explicit(&cpuid_known, memory_order_acquire)) /* pairs: read_cpuid_hz */
        read_cpuid_hz();
    *exact = atomic_load_explicit(&cpuid_exact, memory_order_relaxed);
    return atomic_load_explicit(&cpuid_hz, memory_order_relaxed);
}

/* CPUID leaf 0x80000007, EDX bit 8. glibc reads the extended leaves 0x80000001 and 0x80000007
 * together, and 0x80000001 is never all zero on x86_64 (EDX bit 29, long mode): its long-mode
 * bit says glibc's copy is there. */
static int invariant_tsc(void)
{
    if (CPU_FEATURE_PRESENT(LM))
        return CPU_FEATURE_PRESENT(INVARIANT_TSC);
    unsigned a, b, c, d;
    if (__get_cpuid_max(0x80000000u, NULL) < 0x80000007u)
        return 0;
    __cpuid(0x80000007u, a, b, c, d);
    return (d >> 8) & 1;
}

/* Address of a dynamic symbol of the vDSO, or NULL. */
static void *vdso_symbol(const char *name)
{
    uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    if (!base)
        return NULL;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
    uintptr_t bias = 0;
    const Elf64_Dyn *dyn = NULL;
    int have_load = 0;
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && !have_load) {
            bias = base + ph[i].p_offset - ph[i].p_vaddr;
            have_load = 1;
        } else if (ph[i].p_type == PT_DYNAMIC) {
            dyn = (const Elf64_Dyn *)(base + ph[i].p_offset);
        }
    }
    if (!have_load || !dyn)
        return NULL;
    const Elf64_Sym *sym = NULL;
    const char *str = NULL;
    const Elf32_Word *hash = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_SYMTAB)
            sym = (const Elf64_Sym *)(bias + dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_STRTAB)
            str = (const char *)(bias + dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_HASH)
            hash = (const Elf32_Word *)(bias + dyn->d_un.d_ptr);
    }
    if (!sym || !str || !hash)
        return NULL;
    Elf32_Word nsyms = hash[1]; /* nchain: one chain entry per symbol */
    for (Elf32_Word i = 0; i < nsyms; i++)
        if (sym[i].st_shndx != SHN_UNDEF && ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC &&
            strcmp(str + sym[i].st_name, name) == 0)
            return (void *)(bias + sym[i].st_value);
    return NULL;
}

uint32_t str_clock_init(void)
{
    int inv = invariant_tsc();
    *(void **)&str_vdso_clock = vdso_symbol("__vdso_clock_gettime");
    if (str_cfg.clock == STR_CLOCK_TSC)
        str_clock_tsc = 1;
    else if (str_cfg.clock == STR_CLOCK_MONOTONIC)
        str_clock_tsc = 0;
    else
        str_clock_tsc = inv;
    if (!str_clock_tsc) {
        *(void **)&str_vdso_gettime = vdso_symbol("__vdso_clock_gettime");
        str_log(STR_INFO, "timestamps: CLOCK_MONOTONIC in ns (%s%s)",
                inv ? "SLEDTRACE_CLOCK=monotonic" : "no invariant TSC",
                str_vdso_gettime ? "" : "; no vDSO: one syscall per event");
    }
    return str_clock_tsc && inv ? (STF_BIT_CONSTANT_TSC | STF_BIT_NONSTOP_TSC) : 0;
}

void str_clock_raw(struct timespec *ts)
{
    if (!str_vdso_clock || str_vdso_clock(CLOCK_MONOTONIC_RAW, ts) != 0)
        syscall(SYS_clock_gettime, CLOCK_MONOTONIC_RAW, ts);
}
