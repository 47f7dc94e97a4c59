/* stp: XRay sled patcher for x86_64 Linux.
 *
 * Reads an object's `xray_instr_map` from its ELF file, numbers functions exactly as
 * compiler-rt and `llvm-xray -m` do, proves every sled with Capstone before touching it, and
 * rewrites the proven sleds to call sledtrace's trampolines through stubs mapped within rel32
 * reach of the object's text.
 *
 * The trampolines (trampolines.S) call `stp_event`, which the program linking this library must
 * define (the runtime does, in preload/hot.c). It runs on the instrumented thread with the
 * instrumented function's argument registers saved by the trampoline; it must not touch
 * SSE/x87 state (build it with -mgeneral-regs-only) and must reach any code that might through
 * stp_call_preserving_fpu().
 *
 * Threads: stp_object_* calls are not thread-safe with respect to each other on the same object;
 * patching is meant for start-up, before the program's own threads run.
 */
#ifndef SLEDTRACE_STP_H
#define SLEDTRACE_STP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Sled kinds as stored in the map. */
enum stp_kind {
    STP_ENTRY = 0,
    STP_EXIT = 1,
    STP_TAIL = 2,
    STP_LOG_ARGS_ENTER = 3,
    STP_CUSTOM_EVENT = 4,
    STP_TYPED_EVENT = 5,
    STP_NKINDS
};

/* Outcome of proving and patching one sled. */
enum stp_status {
    STP_OK = 0,              /* proven (and patched, after stp_object_patch) */
    STP_BAD_BYTES,           /* bytes differ from the template for its kind and version */
    STP_NOT_ON_BOUNDARY,     /* linear disassembly from the function start steps over it */
    STP_UNDECODABLE,         /* disassembly from the function start fails before the sled */
    STP_OUTSIDE_TEXT,        /* the sled is not inside an executable segment of the object */
    STP_UNSUPPORTED_KIND,    /* a kind this version does not patch (custom/typed events) */
    STP_UNSUPPORTED_VERSION, /* a map entry version we do not understand */
    STP_NO_STUB,             /* no stub page could be mapped within +-2 GiB */
    STP_PROTECT_FAILED,      /* mprotect refused (EACCES/EPERM: SELinux, PaX...) */
    STP_FILTERED,            /* left out on purpose (stp_object_leave_out) */
    STP_BRANCH_INTO,         /* a branch in the function targets the inside of the sled */
    STP_BREAKPOINT,          /* an int3 (a debugger's breakpoint) over the sled's first byte */
    STP_CHANGED,             /* its bytes were not what the patcher left (or found) when it came
                                to write them: someone else wrote there; never touched again */
    STP_NSTATUS
};

/* Error codes returned by the functions below (0 = success). */
enum stp_error {
    STP_E_OK = 0,
    STP_E_OPEN = -1,     /* cannot open the ELF file (errno is left as open set it) */
    STP_E_ELF = -2,      /* not a 64-bit little-endian ELF file, or its headers lie outside it */
    STP_E_NO_MAP = -3,   /* the object has no xray_instr_map section */
    STP_E_BAD_MAP = -4,  /* the section size is not a multiple of 32, or it has no data */
    STP_E_NOMEM = -5,    /* out of memory */
    STP_E_CAPSTONE = -6, /* Capstone could not be opened */
    STP_E_STUB = -7,     /* no stub page within reach */
    STP_E_PROTECT = -8,  /* mprotect failed */
    STP_E_UNPROVEN = -9, /* stp_object_verify_opts with cache_only: the cache lacks a proof */
};

struct stp_object;

/* Trampoline addresses, one per patchable kind (indexed by enum stp_kind; NULL = leave the kind
 * alone). */
struct stp_targets {
    void (*fn[STP_NKINDS])(void);
    /* For the functions marked by stp_object_record_args: their entry and log-args sleds go
     * to args_entry, their exits to args_exit (NULL: as the others' exits). */
    void (*args_entry)(void);
    void (*args_exit)(void);
};

const char *stp_strerror(int err);
const char *stp_status_name(enum stp_status s);
const char *stp_kind_name(enum stp_kind k);

/* Reads the map of the ELF file at `path`, loaded with load bias `bias`. Entry addresses are
 * resolved to run-time addresses (bias added). Function names come from .symtab, else .dynsym. */
int stp_object_open(const char *path, uintptr_t bias, struct stp_object **out);
/* Whether the ELF file at `path` has an xray_instr_map section: 1, 0, or -1 (unreadable, not a
 * 64-bit ELF file). Cheaper than stp_object_open (a few reads, no mapping, no names). */
int stp_file_has_map(const char *path);
void stp_object_close(struct stp_object *obj);

size_t stp_object_nsleds(const struct stp_object *obj);
size_t stp_object_nfuncs(const struct stp_object *obj);
/* Function i (0-based; ids start at 1): its id, run-time address and symbol name ("" if none). */
void stp_object_func(const struct stp_object *obj, size_t i, uint32_t *id, uintptr_t *addr,
                     const char **name);
/* Sled i: its run-time address, kind, function id and status (after verify/patch). */
void stp_object_sled(const struct stp_object *obj, size_t i, uintptr_t *addr, enum stp_kind *kind,
                     uint32_t *fid, enum stp_status *status);
/* Sleds by status: n[s] sleds have status s. */
void stp_object_counts(const struct stp_object *obj, size_t n[STP_NSTATUS]);
/* True if the object defines compiler-rt's XRay runtime (__xray_init). */
int stp_object_has_xray_runtime(const struct stp_object *obj);
uintptr_t stp_object_bias(const struct stp_object *obj);
const char *stp_object_path(const struct stp_object *obj);
/* The object's GNU build id, the bytes of its NT_GNU_BUILD_ID note (read with the map): their
 * number, *id pointing at them (valid until stp_object_close), or 0 (*id NULL) when the file has
 * none (linked with --build-id=none) or one longer than STP_BUILD_ID_MAX bytes. */
enum { STP_BUILD_ID_MAX = 64 };
size_t stp_object_build_id(const struct stp_object *obj, const uint8_t **id);

/* Ids written into this object's sleds are `base + function id` (default 0): the runtime packs
 * an object number into the high bits, as clang's -fxray-shared does, or gives the object a
 * range of its own (format/stf.h, stf_syms_split). */
void stp_object_set_id_base(struct stp_object *obj, uint32_t base);

/* Leaves function i (0-based, as stp_object_func) unpatched: its proven sleds get STP_FILTERED. */
void stp_object_leave_out(struct stp_object *obj, size_t i);
/* Function i's entry sleds (with entry) and exit sleds (with ret) go to the targets' args_entry
 * and args_exit (stp_object_patch): it records its arguments, its return value. Before
 * stp_object_patch. */
void stp_object_record_args(struct stp_object *obj, size_t i, int entry, int ret);

/* Proves every sled of the object in the live image (bytes, kind, instruction boundary) whose
 * function still has one to patch (one left out by a filter is not proven and stays left out). Sets
 * each sled's status. Returns 0 or STP_E_CAPSTONE (also when Capstone cannot be loaded: it is
 * loaded by the first proof, not linked). */
int stp_object_verify(struct stp_object *obj);
/* How many functions stp_object_verify proved (swept with Capstone, or taken from the cache), and
 * how many of those the cache gave. */
size_t stp_object_proven(const struct stp_object *obj);
size_t stp_object_cached(const struct stp_object *obj);

/* stp_object_verify with a proof cache and on several threads (cache.c, verify.c).
 * cache_dir: a directory of the calling user's (see stp_cache_prepare) where each object's
 * proofs are kept, found by its GNU build id and file size (an object without a build id is
 * proven every time); a function whose proof inputs (its bytes as mapped, its place, its sleds)
 * hash to what the file recorded takes its statuses from it, any other is proven again, and
 * the file is rewritten when anything was. NULL: no cache. See also cache_only below.
 * workers: threads to sweep on besides the caller's (at most STP_MAX_WORKERS; fewer when there
 * is little to prove), started with spawn (NULL: pthread_create; signal masks are the caller's
 * business) and joined before this returns. */
enum { STP_MAX_WORKERS = 15 };
struct stp_verify_opts {
    const char *cache_dir;
    unsigned workers;
    int (*spawn)(pthread_t *t, void *(*fn)(void *), void *arg);
    /* Prove nothing with Capstone (it is not loaded, and must not be loaded now): when the
     * cache lacks any proof, return STP_E_UNPROVEN with the object half-verified: close it. */
    int cache_only;
};
int stp_object_verify_opts(struct stp_object *obj, const struct stp_verify_opts *o);
/* Makes dir (an absolute path) ready to hold the cache: creates it 0700 (and its parent 0700
 * when that is missing), then checks that it is a directory, not a symbolic link, owned by the
 * effective user and closed to group and others. 0, or a negative errno (EPERM: someone
 * else's, or open to others). */
int stp_cache_prepare(const char *dir);
/* Whether patching and switching may ask /proc/self/maps for a page's protection with its
 * PROCMAP_QUERY ioctl (1, the default) or must read its text (0): a program's seccomp filter may
 * kill on ioctl where it allows the open and reads that reading the text makes. */
void stp_maps_query(int allowed);
/* Capstone is dlopen'd (STP_CAPSTONE_NAME), by the first proof or here: 0 or STP_E_CAPSTONE.
 * Never from inside dl_iterate_phdr (the dynamic linker's lock is held: dlopen would deadlock);
 * check stp_capstone_loaded() there. stp_capstone_release() unloads it until the next load (it
 * holds about 5 MiB). None of these while a proof runs in another thread. */
#ifndef STP_CAPSTONE_NAME
#define STP_CAPSTONE_NAME "libcapstone.so.4"
#endif
int stp_capstone_load(void);
int stp_capstone_loaded(void);
void stp_capstone_release(void);
/* 1 when sweeps run on a handle with Capstone's printer turned off (verify.c), 0 when they use
 * an ordinary handle, -1 when Capstone cannot be opened. Loads Capstone. For tests and logs. */
int stp_capstone_quiet(void);
/* Splits code[0..len) (mapped at addr) into instructions with the sweep's handle and with an
 * ordinary one side by side, stepping one byte where neither decodes: the number of
 * instructions when they agree on every length and byte, -1 - offset at the first place they
 * differ, LONG_MIN when Capstone cannot be opened. For tests. */
long stp_capstone_compare(const uint8_t *code, size_t len, uint64_t addr);

/* Patches every proven sled whose kind has a target, through stubs mapped within rel32 reach.
 * Page protections are restored to the segment's own flags afterwards; no page is ever writable
 * and executable at once. */
int stp_object_patch(struct stp_object *obj, const struct stp_targets *t);

/* Turns the patched sleds of function `func` (0-based, as stp_object_func; -1: all) on or off
 * while other threads may be executing them: each sled's first two bytes are rewritten with one
 * aligned atomic store (the rest stays patched behind the jmp or ret), the pages holding them
 * being writable, and not executable, only for the time of the toggle (a thread executing them
 * meanwhile faults: see stp_code_being_written). Only after stp_object_patch; not thread-safe
 * with itself. A head is written only over the bytes the patcher left there (patched, on or
 * off): a sled found otherwise (a debugger's int3 over it) becomes STP_CHANGED and is left
 * alone for good, with the rest of its function; *changed (if not NULL) gets how many
 * functions this call found so. The object must be
 * mapped (see stp_object_intact). Returns 0 or STP_E_PROTECT. */
int stp_object_toggle(struct stp_object *obj, long func, int on, size_t *changed);

/* Whether the code at the object's address is still the image stp_object_patch patched: 1 when
 * its first patched sled holds the bytes written there (its head on or off), 0 when it does not
 * (the object was unloaded and a fresh copy of the file mapped at the same address: it must be
 * proven and patched as a new object), 1 also when nothing was patched. Reads the object's code:
 * the caller makes sure it is mapped (e.g. inside dl_iterate_phdr, which holds off dlclose). */
int stp_object_intact(const struct stp_object *obj);

/* Code being written (patch.c, "The window"): pages are writable and not executable while
 * sleds are rewritten. stp_fault_in_rewrite(addr), for a fault at addr (SEGV_ACCERR): 1 when it
 * comes from a thread that executed such a page (after waiting for the rewrite to end, if it
 * has not): the handler returns and the instruction runs again; 0 for any other fault.
 * Async-signal-safe. A program's own mprotect calls must be bracketed by
 * stp_program_mprotect_begin/end (they wait for an open window), so that none lands between
 * the reading and the restoring of a protection. */
int stp_fault_in_rewrite(uintptr_t addr);
void stp_program_mprotect_begin(void);
void stp_program_mprotect_end(void);

/* Proves one sled in a byte table: `code` holds the function's bytes from its start, mapped at
 * `func_addr`; the sled is at `sled_addr` (func_addr <= sled_addr < func_addr + len). Every
 * relative branch in code[0..len) is checked too: one that targets the inside of the sled refuses
 * it (STP_BRANCH_INTO). For table tests and for stp_object_verify. `expect_id` is the function id a sled already patched by
 * compiler-rt or sledtrace must carry (such sleds are accepted). */
enum stp_status stp_check_sled(const uint8_t *code, size_t len, uint64_t func_addr,
                               uint64_t sled_addr, enum stp_kind kind, unsigned version,
                               uint32_t expect_id);

/* Function-id numbering over raw map entries (32 bytes each, `n` of them, mapped at run-time
 * address `map_addr`): writes each entry's id to ids[i]. Exposed for tests. */
void stp_number_functions(const uint8_t *entries, size_t n, uintptr_t map_addr, uint32_t *ids);

/* Trampolines and helpers from trampolines.S. */
void stp_tramp_entry(void);
void stp_tramp_exit(void);
void stp_tramp_tail(void);
/* The same two for SLEDTRACE_MIN_DURATION: they call stp_event_min (which the program linking
 * this library provides too), so that stp_event pays nothing for it. */
void stp_tramp_exit_min(void);
void stp_tramp_tail_min(void);
void stp_tramp_log_args(void);
void stp_tramp_entry_args(void);
void stp_tramp_exit_args(void);
void stp_tramp_custom(void);
void stp_tramp_typed(void);
/* Calls fn(arg) with the whole extended FPU/vector state saved and restored around it (XSAVE,
 * or FXSAVE without OSXSAVE), on `stack` (the top of a 16-byte aligned stack with room for the
 * save area, up to 11 KiB, and fn; NULL: the current stack). stp_fpu_init() must have run
 * once before. */
void stp_call_preserving_fpu(void (*fn)(void *), void *arg, void *stack);
void stp_fpu_init(void);

/* The asynchronous signals, as an rt_sigprocmask set (bit n - 1 is signal n): every signal but
 * the synchronous ones (SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV, SIGSYS), SIGKILL, SIGSTOP and
 * glibc's internal 32 and 33, which its own pthread_sigmask never blocks either. The patcher
 * blocks them while it rewrites code; the runtime around its slow path and its calibration. */
extern const uint64_t stp_async_signals;

/* Defined by the user of this library: the event handler the trampolines call.
 * action: 0 enter, 1 exit, 2 tail exit, 3 enter with argument `arg`. */
void stp_event(uint32_t id, uint32_t action);
/* An exit (action 1) or tail exit (2) under a minimum duration (stp_tramp_exit_min). */
void stp_event_min(uint32_t id, uint32_t action);
void stp_event_arg(uint32_t id, uint64_t arg);
/* The functions that record their arguments and return value (stp_tramp_entry_args,
 * stp_tramp_exit_args): saved points at the registers the trampoline pushed, in the order its
 * comment gives. */
void stp_event_args(uint32_t id, const uint64_t *saved);
void stp_event_ret(uint32_t id, const uint64_t *saved);
/* Custom and typed event sleds (__xray_customevent, __xray_typedevent): their payload. */
void stp_event_custom(const void *data, uint64_t len);
void stp_event_typed(uint64_t type, const void *data, uint64_t len);

#endif
