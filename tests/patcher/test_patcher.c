/* Patcher tests: sled proofs on byte tables (stp_check_sled), function-id numbering on
 * hand-built map entries (stp_number_functions), and map reading on real clang-built binaries
 * compared with `llvm-xray extract --symbolize` (stp_object_open).
 *
 * meson passes PATCHER_SAMPLE (an instrumented binary), PATCHER_SAMPLE_YAML (its extract
 * output), PATCHER_PLAIN (the same source built without -fxray-instrument) and
 * PATCHER_NOT_ELF (a text file); clang and llvm-xray are required to configure the tests. */
#include <criterion/criterion.h>
#include <elf.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/mman.h>

#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stp.h"
#include "stp_internal.h"

enum { SLED = 11 };

static const uint8_t ENTRY_SLED[SLED] = {0xeb, 0x09, 0x66, 0x0f, 0x1f, 0x84,
                                         0x00, 0x00, 0x02, 0x00, 0x00};
static const uint8_t EXIT_SLED[SLED] = {0xc3, 0x2e, 0x66, 0x0f, 0x1f, 0x84,
                                        0x00, 0x00, 0x02, 0x00, 0x00};

#define FUNC 0x401000ull

/* Small byte-table builder. */
struct code {
    uint8_t b[256];
    size_t n;
};

static size_t put(struct code *c, const void *bytes, size_t n)
{
    size_t at = c->n;
    cr_assert_leq(c->n + n, sizeof c->b);
    memcpy(c->b + c->n, bytes, n);
    c->n += n;
    return at;
}

#define PUT(c, ...) put((c), (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__}))

/* The patched form `41 ba <id32> <op> <rel32>`. */
static size_t put_patched(struct code *c, uint32_t id, uint8_t op, int32_t rel)
{
    uint8_t p[SLED] = {0x41, 0xba};
    memcpy(p + 2, &id, 4);
    p[6] = op;
    memcpy(p + 7, &rel, 4);
    return put(c, p, SLED);
}

static enum stp_status check(const struct code *c, size_t sled_off, enum stp_kind kind,
                             unsigned version, uint32_t id)
{
    return stp_check_sled(c->b, c->n, FUNC, FUNC + sled_off, kind, version, id);
}

/* A typical clang -O2 function: entry sled, body, padding nop, exit sled. Returns offsets. */
static void typical(struct code *c, size_t *entry, size_t *exit)
{
    *entry = put(c, ENTRY_SLED, SLED);
    PUT(c, 0x8d, 0x47, 0x01); /* lea eax, [rdi+1] */
    PUT(c, 0x0f, 0xaf, 0xc7); /* imul eax, edi */
    PUT(c, 0x90);             /* alignment padding before the exit sled */
    *exit = put(c, EXIT_SLED, SLED);
    PUT(c, 0xcc, 0xcc);
}

/* ---- stp_check_sled ---------------------------------------------------------------------- */

Test(check_sled, entry_at_function_start)
{
    struct code c = {0};
    size_t entry, exit;
    typical(&c, &entry, &exit);
    cr_assert_eq(entry, 0);
    cr_assert_eq(check(&c, entry, STP_ENTRY, 2, 1), STP_OK);
    /* LOG_ARGS_ENTER uses the entry template. */
    cr_assert_eq(check(&c, entry, STP_LOG_ARGS_ENTER, 2, 1), STP_OK);
    /* Versions 0 and 1 (absolute addresses) have the same sled bytes. */
    cr_assert_eq(check(&c, entry, STP_ENTRY, 0, 1), STP_OK);
    cr_assert_eq(check(&c, entry, STP_ENTRY, 1, 1), STP_OK);
}

Test(check_sled, exit_after_real_instructions)
{
    struct code c = {0};
    size_t entry, exit;
    typical(&c, &entry, &exit);
    cr_assert_eq(exit, 18);
    cr_assert_eq(check(&c, exit, STP_EXIT, 2, 1), STP_OK);
}

Test(check_sled, tail_before_jmp)
{
    struct code c = {0};
    size_t tail;
    put(&c, ENTRY_SLED, SLED);
    PUT(&c, 0x83, 0xc7, 0x01); /* add edi, 1 */
    tail = put(&c, ENTRY_SLED, SLED);
    PUT(&c, 0xe9, 0xc2, 0xff, 0xff, 0xff); /* jmp rel32 (the tail call) */
    PUT(&c, 0x66, 0x90);
    cr_assert_eq(check(&c, tail, STP_TAIL, 2, 9), STP_OK);
    /* The tail sled is not an exit sled. */
    cr_assert_eq(check(&c, tail, STP_EXIT, 2, 9), STP_BAD_BYTES);
}

/* A branch that lands inside a sled would run half of a rewritten instruction: refused. */
Test(check_sled, rel8_branch_into_entry_sled_is_refused)
{
    struct code c = {0};
    size_t entry = put(&c, ENTRY_SLED, SLED);
    PUT(&c, 0x85, 0xff); /* test edi, edi */
    PUT(&c, 0x75, 0xf5); /* jne rel8 -11: FUNC + 4, inside the entry sled */
    PUT(&c, 0xc3);
    cr_assert_eq(check(&c, entry, STP_ENTRY, 2, 1), STP_BRANCH_INTO);
}

Test(check_sled, branches_to_sled_start_or_past_it_are_fine)
{
    struct code c = {0};
    size_t entry = put(&c, ENTRY_SLED, SLED);
    PUT(&c, 0x85, 0xff);                   /* test edi, edi */
    PUT(&c, 0x75, 0xf1);                   /* jne rel8 -15: FUNC, the sled's first byte */
    PUT(&c, 0xe9, 0xf7, 0xff, 0xff, 0xff); /* jmp rel32 -9: FUNC + 11, just past the sled */
    PUT(&c, 0xc3);
    cr_assert_eq(check(&c, entry, STP_ENTRY, 2, 1), STP_OK);
}

Test(check_sled, rel32_branch_after_an_exit_sled_back_into_it_is_refused)
{
    struct code c = {0};
    size_t entry = put(&c, ENTRY_SLED, SLED);
    PUT(&c, 0x85, 0xff); /* test edi, edi */
    size_t exit = put(&c, EXIT_SLED, SLED);
    PUT(&c, 0xe9, 0xf1, 0xff, 0xff, 0xff); /* jmp rel32 -15: FUNC + 14, inside the exit sled */
    cr_assert_eq(exit, 13);
    cr_assert_eq(check(&c, exit, STP_EXIT, 2, 1), STP_BRANCH_INTO);
    /* The entry sled is not the one the branch lands in. */
    cr_assert_eq(check(&c, entry, STP_ENTRY, 2, 1), STP_OK);
}

Test(check_sled, template_of_the_wrong_kind)
{
    struct code c = {0};
    size_t entry, exit;
    typical(&c, &entry, &exit);
    cr_assert_eq(check(&c, entry, STP_EXIT, 2, 1), STP_BAD_BYTES);
    cr_assert_eq(check(&c, exit, STP_ENTRY, 2, 1), STP_BAD_BYTES);
    cr_assert_eq(check(&c, exit, STP_TAIL, 2, 1), STP_BAD_BYTES);
}

Test(check_sled, already_patched_with_the_right_id)
{
    struct code c = {0};
    size_t entry = put_patched(&c, 0x1234, 0xe8, 0x1000);
    PUT(&c, 0x8d, 0x47, 0x01);
    PUT(&c, 0x90);
    size_t exit = put_patched(&c, 0x1234, 0xe9, -0x2000);
    size_t tail_at;
    PUT(&c, 0x83, 0xc7, 0x01);
    tail_at = put_patched(&c, 0x1234, 0xe8, 0x3000);
    PUT(&c, 0xe9, 0x00, 0x01, 0x00, 0x00);
    cr_assert_eq(check(&c, entry, STP_ENTRY, 2, 0x1234), STP_OK);
    cr_assert_eq(check(&c, exit, STP_EXIT, 2, 0x1234), STP_OK);
    cr_assert_eq(check(&c, tail_at, STP_TAIL, 2, 0x1234), STP_OK);
    cr_assert_eq(check(&c, entry, STP_LOG_ARGS_ENTER, 2, 0x1234), STP_OK);
}

Test(check_sled, already_patched_with_a_wrong_id)
{
    struct code c = {0};
    size_t entry = put_patched(&c, 7, 0xe8, 0x1000);
    PUT(&c, 0x90);
    size_t exit = put_patched(&c, 7, 0xe9, 0x1000);
    cr_assert_eq(check(&c, entry, STP_ENTRY, 2, 8), STP_BAD_BYTES);
    cr_assert_eq(check(&c, entry, STP_ENTRY, 2, 6), STP_BAD_BYTES);
    cr_assert_eq(check(&c, exit, STP_EXIT, 2, 0x10007), STP_BAD_BYTES);
    cr_assert_eq(check(&c, entry, STP_ENTRY, 2, 7), STP_OK);
}

Test(check_sled, patched_with_the_wrong_opcode_for_its_kind)
{
    struct code c = {0};
    size_t a = put_patched(&c, 3, 0xe9, 0x1000); /* jmp where an entry wants call */
    size_t b = put_patched(&c, 3, 0xe8, 0x1000); /* call where an exit wants jmp */
    cr_assert_eq(check(&c, a, STP_ENTRY, 2, 3), STP_BAD_BYTES);
    cr_assert_eq(check(&c, b, STP_EXIT, 2, 3), STP_BAD_BYTES);
}

Test(check_sled, shifted_by_one_byte)
{
    struct code c = {0};
    size_t entry, exit;
    typical(&c, &entry, &exit);
    /* One byte late: the bytes there are `09 66 0f ...` / `2e 66 0f ...`. */
    cr_assert_eq(check(&c, entry + 1, STP_ENTRY, 2, 1), STP_BAD_BYTES);
    cr_assert_eq(check(&c, exit + 1, STP_EXIT, 2, 1), STP_BAD_BYTES);
    /* One byte early: the padding nop, then `c3`... */
    cr_assert_eq(check(&c, exit - 1, STP_EXIT, 2, 1), STP_BAD_BYTES);
}

Test(check_sled, shifted_into_a_longer_instruction)
{
    /* `b0 eb` is `mov al, 0xeb`: the map entry points at its immediate byte, where the template
     * happens to start. Bytes match, boundary does not. */
    struct code c = {0};
    PUT(&c, 0xb0);
    size_t s = put(&c, ENTRY_SLED, SLED);
    PUT(&c, 0xc3);
    cr_assert_eq(check(&c, s, STP_TAIL, 2, 1), STP_NOT_ON_BOUNDARY);
    cr_assert_eq(check(&c, s, STP_ENTRY, 2, 1), STP_NOT_ON_BOUNDARY);
}

Test(check_sled, inside_a_movabs_immediate)
{
    /* movabs rax, imm64 whose last two immediate bytes are `eb 09`, followed by the 9-byte nop:
     * the 11 template bytes are all there, but the sled's first byte is inside the movabs. */
    struct code c = {0};
    put(&c, ENTRY_SLED, SLED);
    PUT(&c, 0x48, 0xb8, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66);
    size_t s = put(&c, ENTRY_SLED, SLED);
    PUT(&c, 0xc3);
    cr_assert_eq(memcmp(c.b + s, ENTRY_SLED, SLED), 0);
    cr_assert_eq(check(&c, s, STP_TAIL, 2, 1), STP_NOT_ON_BOUNDARY);
    /* Same trick with the exit template inside `mov eax, imm32` (b8 + 4 bytes). */
    struct code d = {0};
    PUT(&d, 0xb8, 0x00, 0x00, 0x00);
    size_t e = put(&d, EXIT_SLED, SLED);
    cr_assert_eq(check(&d, e, STP_EXIT, 2, 1), STP_NOT_ON_BOUNDARY);
}

Test(check_sled, undecodable_bytes_before_the_sled)
{
    /* 0x06 (push es) does not exist in 64-bit mode. */
    struct code c = {0};
    PUT(&c, 0x31, 0xc0); /* xor eax, eax */
    PUT(&c, 0x06);
    size_t s = put(&c, EXIT_SLED, SLED);
    cr_assert_eq(check(&c, s, STP_EXIT, 2, 1), STP_UNDECODABLE);
    /* A dangling `48 b8` (movabs opcode) right before the sled swallows it as the immediate:
     * decodable, but the sweep steps over the sled's first byte. */
    struct code d = {0};
    PUT(&d, 0x48, 0xb8);
    size_t t = put(&d, EXIT_SLED, SLED);
    cr_assert_eq(check(&d, t, STP_EXIT, 2, 1), STP_NOT_ON_BOUNDARY);
}

Test(check_sled, outside_the_code_range)
{
    struct code c = {0};
    size_t entry, exit;
    typical(&c, &entry, &exit);
    /* Before the function. */
    cr_assert_eq(stp_check_sled(c.b, c.n, FUNC, FUNC - 16, STP_ENTRY, 2, 1), STP_OUTSIDE_TEXT);
    /* Past the end. */
    cr_assert_eq(stp_check_sled(c.b, c.n, FUNC, FUNC + c.n + 32, STP_EXIT, 2, 1), STP_OUTSIDE_TEXT);
    /* Starting inside but not all 11 bytes inside: cut the table 1 byte into the exit sled's
     * nop. */
    cr_assert_eq(stp_check_sled(c.b, exit + SLED - 1, FUNC, FUNC + exit, STP_EXIT, 2, 1),
                 STP_OUTSIDE_TEXT);
    /* Exactly to the end is fine. */
    cr_assert_eq(stp_check_sled(c.b, exit + SLED, FUNC, FUNC + exit, STP_EXIT, 2, 1), STP_OK);
}

Test(check_sled, event_sleds_are_proven)
{
    /* Custom (17 bytes, eb 0f, call at +10) and typed (22 bytes, eb 14, call at +14). */
    struct code c = {0};
    PUT(&c, 0xeb, 0x0f, 0x57, 0x56, 0x48, 0x89, 0xc7, 0x48, 0x89, 0xd6, 0xe8, 0, 0, 0, 0, 0x5e,
        0x5f);
    PUT(&c, 0xeb, 0x14, 0x57, 0x56, 0x52, 0x48, 0x89, 0xcf, 0x48, 0x89, 0xd6, 0x4c, 0x89, 0xc2,
        0xe8, 0, 0, 0, 0, 0x5a, 0x5e, 0x5f);
    PUT(&c, 0xc3);
    cr_assert_eq(check(&c, 0, STP_CUSTOM_EVENT, 2, 1), STP_OK);
    cr_assert_eq(check(&c, 17, STP_TYPED_EVENT, 2, 1), STP_OK);
    /* The wrong kind for the shape. */
    cr_assert_eq(check(&c, 0, STP_TYPED_EVENT, 2, 1), STP_BAD_BYTES);
    /* Enabled already (66 90 over the jmp): still proven. */
    c.b[0] = 0x66;
    c.b[1] = 0x90;
    cr_assert_eq(check(&c, 0, STP_CUSTOM_EVENT, 2, 1), STP_OK);
    /* An entry sled is no event sled. */
    struct code d = {0};
    put(&d, ENTRY_SLED, SLED);
    PUT(&d, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc);
    cr_assert_eq(check(&d, 0, STP_CUSTOM_EVENT, 2, 1), STP_BAD_BYTES);
    cr_assert_eq(check(&d, 0, STP_TYPED_EVENT, 2, 1), STP_BAD_BYTES);
    /* The call one byte off its place (a 4-byte mov before it). */
    struct code e = {0};
    PUT(&e, 0xeb, 0x10, 0x57, 0x56, 0x48, 0x89, 0xc7, 0x67, 0x48, 0x89, 0xd6, 0xe8, 0, 0, 0, 0,
        0x5e, 0x5f);
    PUT(&e, 0xc3);
    cr_assert_eq(check(&e, 0, STP_CUSTOM_EVENT, 2, 1), STP_BAD_BYTES);
}

Test(check_sled, unknown_version)
{
    struct code c = {0};
    size_t entry, exit;
    typical(&c, &entry, &exit);
    cr_assert_eq(check(&c, entry, STP_ENTRY, 3, 1), STP_UNSUPPORTED_VERSION);
    cr_assert_eq(check(&c, exit, STP_EXIT, 3, 1), STP_UNSUPPORTED_VERSION);
    cr_assert_eq(check(&c, exit, STP_EXIT, 255, 1), STP_UNSUPPORTED_VERSION);
}

/* The sweep decodes with Capstone's printer turned off (verify.c): on Debian 12's Capstone 4.0.2
 * that mode must be on, and it must split real code exactly as an ordinary handle does. */
struct text {
    const char *want; /* a substring of the object's name ("" for the executable) */
    const uint8_t *code;
    size_t len;
    uint64_t addr;
};

static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct text *t = arg;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    if (t->want[0] ? !strstr(name, t->want) : name[0] != '\0')
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            t->addr = info->dlpi_addr + ph->p_vaddr;
            t->code = (const uint8_t *)(uintptr_t)t->addr;
            t->len = ph->p_filesz;
            return 1;
        }
    }
    return 0;
}

Test(quiet_sweep, is_on_with_debian_capstone)
{
    cr_assert_eq(stp_capstone_quiet(), 1);
}

Test(quiet_sweep, splits_libc_and_this_program_like_an_ordinary_handle)
{
    const char *names[] = {"libc.so.6", ""};
    for (size_t i = 0; i < 2; i++) {
        struct text t = {names[i], NULL, 0, 0};
        cr_assert(dl_iterate_phdr(find_text, &t), "no text found for '%s'", names[i]);
        long n = stp_capstone_compare(t.code, t.len, t.addr);
        cr_assert_geq(n, 0, "'%s': the handles differ at byte %ld", names[i], -1 - n);
        /* libc's text is well over 100,000 instructions; this program's over 1,000 */
        cr_assert_gt(n, i == 0 ? 100000 : 1000, "'%s': %ld instructions", names[i], n);
    }
}

/* ---- stp_number_functions ---------------------------------------------------------------- */

#define MAP 0x500000ull

struct ent {
    uint64_t sled, func;
    uint8_t kind;
    uint8_t version; /* 2 = PC-relative, 0/1 = absolute */
};

/* Encodes entries as the compiler does: version 2 PC-relative to the entry's own fields. */
static uint8_t *encode(const struct ent *e, size_t n)
{
    uint8_t *raw = calloc(n ? n : 1, 32);
    cr_assert_not_null(raw);
    for (size_t i = 0; i < n; i++) {
        uint8_t *p = raw + 32 * i;
        unsigned v = e[i].version;
        int64_t a, f;
        if (v == 2) {
            a = (int64_t)(e[i].sled - (MAP + 32 * i));
            f = (int64_t)(e[i].func - (MAP + 32 * i + 8));
        } else {
            a = (int64_t)e[i].sled;
            f = (int64_t)e[i].func;
        }
        memcpy(p, &a, 8);
        memcpy(p + 8, &f, 8);
        p[16] = e[i].kind;
        p[17] = 0;
        p[18] = (uint8_t)v;
    }
    return raw;
}

static void number(const struct ent *e, size_t n, uint32_t *ids)
{
    uint8_t *raw = encode(e, n);
    for (size_t i = 0; i < n; i++)
        ids[i] = 0xdeadbeef;
    stp_number_functions(raw, n, MAP, ids);
    free(raw);
}

static void expect_ids(const uint32_t *got, const uint32_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(got[i], want[i], "entry %zu: id %u, expected %u", i, got[i], want[i]);
}

Test(number, consecutive_entries_share_an_id_first_is_one)
{
    const struct ent e[] = {
        {0x1000, 0x1000, 0, 2}, {0x1012, 0x1000, 1, 2}, {0x1020, 0x1020, 0, 2},
        {0x1030, 0x1020, 2, 2}, {0x1040, 0x1020, 1, 2}, {0x1080, 0x1080, 0, 2},
    };
    uint32_t ids[6];
    number(e, 6, ids);
    expect_ids(ids, (const uint32_t[]){1, 1, 2, 2, 2, 3}, 6);
}

Test(number, a_function_seen_again_gets_a_new_id)
{
    const struct ent e[] = {
        {0x1000, 0x1000, 0, 2}, {0x2000, 0x2000, 0, 2}, {0x1010, 0x1000, 1, 2},
        {0x2010, 0x2000, 1, 2}, {0x2020, 0x2000, 1, 2},
    };
    uint32_t ids[5];
    number(e, 5, ids);
    expect_ids(ids, (const uint32_t[]){1, 2, 3, 4, 4}, 5);
}

Test(number, never_sorted_by_address)
{
    /* Descending function addresses keep section order. */
    const struct ent e[] = {
        {0x9000, 0x9000, 0, 2}, {0x9010, 0x9000, 1, 2}, {0x5000, 0x5000, 0, 2},
        {0x1000, 0x1000, 0, 2}, {0x1010, 0x1000, 1, 2},
    };
    uint32_t ids[5];
    number(e, 5, ids);
    expect_ids(ids, (const uint32_t[]){1, 1, 2, 3, 3}, 5);
}

Test(number, pc_relative_fields_are_resolved_before_comparing)
{
    /* Version 2: the same function has a different raw field in each entry (the entry moved
     * 32 bytes), and identical raw fields in consecutive entries mean different functions. */
    const struct ent same[] = {
        {0x1000, 0x1000, 0, 2}, {0x1010, 0x1000, 1, 2}, {0x1020, 0x1000, 1, 2}};
    uint32_t ids[3];
    number(same, 3, ids);
    expect_ids(ids, (const uint32_t[]){1, 1, 1}, 3);

    uint8_t raw[64] = {0};
    int64_t f = 0x1234;
    for (int i = 0; i < 2; i++) {
        memcpy(raw + 32 * i + 8, &f, 8);
        raw[32 * i + 18] = 2;
    }
    uint32_t two[2] = {0, 0};
    stp_number_functions(raw, 2, MAP, two);
    cr_assert_eq(two[0], 1);
    cr_assert_eq(two[1], 2);
}

Test(number, absolute_versions)
{
    /* Versions 0 and 1 hold absolute addresses: equal fields are the same function. */
    const struct ent e[] = {
        {0x1000, 0x1000, 0, 1},
        {0x1010, 0x1000, 1, 1},
        {0x2000, 0x2000, 0, 1},
        {0x1000, 0x1000, 0, 1},
    };
    uint32_t ids[4];
    number(e, 4, ids);
    expect_ids(ids, (const uint32_t[]){1, 1, 2, 3}, 4);
}

Test(number, single_entry_and_empty_map)
{
    const struct ent e[] = {{0x1000, 0x1000, 0, 2}};
    uint32_t ids[1];
    number(e, 1, ids);
    cr_assert_eq(ids[0], 1);
    uint32_t untouched = 0xdeadbeef;
    stp_number_functions(NULL, 0, MAP, &untouched);
    cr_assert_eq(untouched, 0xdeadbeef);
}

/* ---- stp_object_open on real binaries ---------------------------------------------------- */

struct yaml_sled {
    unsigned id;
    unsigned long long address, function;
    int kind;
    char name[256];
};

static int kind_of(const char *s)
{
    static const char *const names[] = {"function-enter", "function-exit", "tail-exit",
                                        "log-args-enter", "custom-event",  "typed-event"};
    for (int i = 0; i < 6; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

/* Parses `llvm-xray extract --symbolize` output: one `- { id: ..., ... }` line per sled. */
static size_t read_yaml(const char *path, struct yaml_sled *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s: %s", path, strerror(errno));
    char line[1024];
    size_t n = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "- {", 3) != 0)
            continue;
        cr_assert_lt(n, cap);
        char kind[64], always[16];
        unsigned version;
        int got = sscanf(line,
                         "- { id: %u, address: %llx, function: %llx, kind: %63[^,], "
                         "always-instrument: %15[^,], function-name: %255[^,], version: %u }",
                         &out[n].id, &out[n].address, &out[n].function, kind, always, out[n].name,
                         &version);
        cr_assert_eq(got, 7, "unparsable extract line: %s", line);
        out[n].kind = kind_of(kind);
        cr_assert_geq(out[n].kind, 0, "unknown kind %s", kind);
        n++;
    }
    fclose(f);
    return n;
}

static void compare_with_extract(uintptr_t bias)
{
    static struct yaml_sled y[4096];
    size_t ny = read_yaml(PATCHER_SAMPLE_YAML, y, 4096);
    cr_assert_gt(ny, 0);

    struct stp_object *obj = NULL;
    int rc = stp_object_open(PATCHER_SAMPLE, bias, &obj);
    cr_assert_eq(rc, STP_E_OK, "stp_object_open: %s", stp_strerror(rc));
    cr_assert_eq(stp_object_nsleds(obj), ny);
    cr_assert_eq(stp_object_bias(obj), bias);
    cr_assert_str_eq(stp_object_path(obj), PATCHER_SAMPLE);
    cr_assert_eq(stp_object_has_xray_runtime(obj), 0);

    unsigned max_id = 0;
    int seen_tail = 0;
    for (size_t i = 0; i < ny; i++) {
        uintptr_t addr;
        enum stp_kind kind;
        uint32_t fid;
        enum stp_status st;
        stp_object_sled(obj, i, &addr, &kind, &fid, &st);
        cr_expect_eq(addr, y[i].address + bias, "sled %zu: address %#lx, extract %#llx", i,
                     (unsigned long)addr, y[i].address);
        cr_expect_eq((int)kind, y[i].kind, "sled %zu: kind %d, extract %d", i, kind, y[i].kind);
        cr_expect_eq(fid, y[i].id, "sled %zu: id %u, extract %u", i, fid, y[i].id);
        cr_expect_eq(st, STP_OK, "sled %zu: status %d before verification", i, st);
        if (y[i].id > max_id)
            max_id = y[i].id;
        seen_tail |= y[i].kind == STP_TAIL;
    }
    cr_assert(seen_tail, "the sample has no tail sled: the test lost its tail-call case");
    cr_assert_eq(stp_object_nfuncs(obj), max_id);
    for (size_t i = 0; i < ny; i++) {
        uint32_t id;
        uintptr_t addr;
        const char *name;
        cr_assert_leq(y[i].id, max_id);
        stp_object_func(obj, y[i].id - 1, &id, &addr, &name);
        cr_expect_eq(id, y[i].id);
        cr_expect_eq(addr, y[i].function + bias, "function %u: %#lx, extract %#llx", id,
                     (unsigned long)addr, y[i].function);
        cr_expect_str_eq(name, y[i].name, "function %u: name '%s', extract '%s'", id, name,
                         y[i].name);
    }
    /* The sample's functions, in section order. */
    static const char *const want[] = {"leaf", "tailer", "twoexits", "main"};
    cr_assert_eq(max_id, 4);
    for (uint32_t i = 0; i < 4; i++) {
        uint32_t id;
        uintptr_t addr;
        const char *name;
        stp_object_func(obj, i, &id, &addr, &name);
        cr_expect_str_eq(name, want[i]);
    }
    stp_object_close(obj);
}

Test(object, ids_and_names_match_llvm_xray_extract)
{
    compare_with_extract(0);
}

Test(object, a_load_bias_shifts_addresses_not_ids)
{
    compare_with_extract(0x7f0000000000ull);
}

Test(object, a_binary_without_a_map)
{
    struct stp_object *obj = (struct stp_object *)1;
    cr_assert_eq(stp_object_open(PATCHER_PLAIN, 0, &obj), STP_E_NO_MAP);
    cr_assert_null(obj);
}

Test(object, a_missing_file)
{
    struct stp_object *obj = (struct stp_object *)1;
    cr_assert_eq(stp_object_open("/nonexistent/sledtrace/no-such-binary", 0, &obj), STP_E_OPEN);
    cr_assert_null(obj);
}

Test(object, not_an_elf_file)
{
    struct stp_object *obj = (struct stp_object *)1;
    cr_assert_eq(stp_object_open(PATCHER_NOT_ELF, 0, &obj), STP_E_ELF);
    cr_assert_null(obj);
}

/* ---- build ids -------------------------------------------------------------------------- */

/* Linked with --build-id=0x0123456789abcdeffedcba9876543210: those 16 bytes, in order. */
Test(object, build_id_of_known_bytes)
{
    static const uint8_t want[] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                   0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10};
    struct stp_object *obj = NULL;
    cr_assert_eq(stp_object_open(PATCHER_KNOWN_ID, 0, &obj), STP_E_OK);
    const uint8_t *id = NULL;
    cr_assert_eq(stp_object_build_id(obj, &id), sizeof want);
    cr_assert_not_null(id);
    cr_assert_arr_eq(id, want, sizeof want);
    stp_object_close(obj);
}

/* The default (clang and ld on Debian): a 20-byte SHA-1 note. */
Test(object, default_build_id_is_twenty_bytes)
{
    struct stp_object *obj = NULL;
    cr_assert_eq(stp_object_open(PATCHER_SAMPLE, 0, &obj), STP_E_OK);
    const uint8_t *id = NULL;
    cr_assert_eq(stp_object_build_id(obj, &id), 20);
    cr_assert_not_null(id);
    stp_object_close(obj);
}

Test(object, no_build_id)
{
    struct stp_object *obj = NULL;
    cr_assert_eq(stp_object_open(PATCHER_NO_ID, 0, &obj), STP_E_OK);
    const uint8_t *id = (const uint8_t *)1;
    cr_assert_eq(stp_object_build_id(obj, &id), 0);
    cr_assert_null(id);
    cr_assert_eq(stp_object_nfuncs(obj), 4); /* the map is read all the same */
    stp_object_close(obj);
}

/* ---- stp_file_has_map ----------------------------------------------------------------------- */

/* Writes the first n bytes of from (all of it: n = SIZE_MAX) to a temporary file; returns its
 * path (static). */
static const char *copy_prefix(const char *from, size_t n)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/stp-hasmap-XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *in = fopen(from, "rb");
    cr_assert_not_null(in);
    char buf[4096];
    size_t got, total = 0;
    while (total < n && (got = fread(buf, 1, sizeof buf, in)) > 0) {
        size_t w = got < n - total ? got : n - total;
        cr_assert_eq(write(fd, buf, w), (ssize_t)w);
        total += w;
    }
    fclose(in);
    close(fd);
    return path;
}

Test(has_map, instrumented_plain_and_broken_files)
{
    cr_assert_eq(stp_file_has_map(PATCHER_SAMPLE), 1);
    cr_assert_eq(stp_file_has_map("/bin/true"), 0); /* an ELF file without the section */
    cr_assert_eq(stp_file_has_map("/nonexistent/file"), -1);
    char text[] = "/tmp/stp-text-XXXXXX";
    int fd = mkstemp(text);
    cr_assert_geq(fd, 0);
    static const char words[] = "not an ELF file, but long enough to hold an ELF header's 64 bytes";
    cr_assert_eq(write(fd, words, sizeof words), (ssize_t)sizeof words);
    close(fd);
    cr_assert_eq(stp_file_has_map(text), -1);
    unlink(text);
    const char *p = copy_prefix(PATCHER_SAMPLE, SIZE_MAX);
    cr_assert_eq(stp_file_has_map(p), 1, "a whole copy");
    unlink(p);
    p = copy_prefix(PATCHER_SAMPLE, 100); /* the section headers are cut off */
    cr_assert_eq(stp_file_has_map(p), -1);
    unlink(p);
    p = copy_prefix(PATCHER_SAMPLE, 32); /* not even a whole ELF header */
    cr_assert_eq(stp_file_has_map(p), -1);
    unlink(p);
}

/* ---- stp_object_open on damaged files (map.c reads ELF itself) -------------------------- */

/* A whole copy of the sample with `len` bytes at `off` replaced by `bytes`; its path (static). */
static const char *copy_patched(size_t off, const void *bytes, size_t len)
{
    const char *p = copy_prefix(PATCHER_SAMPLE, SIZE_MAX);
    int fd = open(p, O_WRONLY);
    cr_assert_geq(fd, 0);
    cr_assert_eq(pwrite(fd, bytes, len, (off_t)off), (ssize_t)len);
    close(fd);
    return p;
}

/* The sample's ELF header and the offset of the header of its section named `name` (0: none). */
static size_t section_header_of(const char *name, Elf64_Ehdr *eh, Elf64_Shdr *out)
{
    FILE *f = fopen(PATCHER_SAMPLE, "rb");
    cr_assert_not_null(f);
    cr_assert_eq(fread(eh, sizeof *eh, 1, f), 1);
    Elf64_Shdr str;
    cr_assert_eq(fseek(f, (long)(eh->e_shoff + eh->e_shstrndx * sizeof str), SEEK_SET), 0);
    cr_assert_eq(fread(&str, sizeof str, 1, f), 1);
    size_t found = 0;
    for (unsigned i = 1; i < eh->e_shnum && !found; i++) {
        Elf64_Shdr sh;
        char got[64] = "";
        cr_assert_eq(fseek(f, (long)(eh->e_shoff + i * sizeof sh), SEEK_SET), 0);
        cr_assert_eq(fread(&sh, sizeof sh, 1, f), 1);
        cr_assert_eq(fseek(f, (long)(str.sh_offset + sh.sh_name), SEEK_SET), 0);
        cr_assert_not_null(fgets(got, sizeof got, f) ? got : NULL);
        if (strcmp(got, name) == 0) {
            *out = sh;
            found = eh->e_shoff + i * sizeof sh;
        }
    }
    fclose(f);
    return found;
}

static int open_rc(const char *path)
{
    struct stp_object *obj = (struct stp_object *)1;
    int rc = stp_object_open(path, 0, &obj);
    cr_assert_eq(rc == STP_E_OK, obj != NULL && obj != (struct stp_object *)1);
    stp_object_close(rc == STP_E_OK ? obj : NULL);
    return rc;
}

Test(object, a_cut_file_or_another_class_is_not_read)
{
    const char *p = copy_prefix(PATCHER_SAMPLE, 40); /* not a whole ELF header */
    cr_assert_eq(open_rc(p), STP_E_ELF);
    unlink(p);
    p = copy_prefix(PATCHER_SAMPLE, 2000); /* the section headers are cut off */
    cr_assert_eq(open_rc(p), STP_E_ELF);
    unlink(p);
    static const uint8_t class32 = ELFCLASS32, msb = ELFDATA2MSB;
    p = copy_patched(EI_CLASS, &class32, 1);
    cr_assert_eq(open_rc(p), STP_E_ELF);
    unlink(p);
    p = copy_patched(EI_DATA, &msb, 1);
    cr_assert_eq(open_rc(p), STP_E_ELF);
    unlink(p);
    p = copy_prefix(PATCHER_SAMPLE, SIZE_MAX); /* and the copy itself reads */
    cr_assert_eq(open_rc(p), STP_E_OK);
    unlink(p);
}

/* A section header pointing outside the file: the map's is refused, the symbol table's costs
 * the names only. */
Test(object, sections_outside_the_file)
{
    Elf64_Ehdr eh;
    Elf64_Shdr sh;
    size_t at = section_header_of("xray_instr_map", &eh, &sh);
    cr_assert_neq(at, 0);
    uint64_t far = 1ull << 40;
    const char *p = copy_patched(at + offsetof(Elf64_Shdr, sh_offset), &far, sizeof far);
    cr_assert_eq(open_rc(p), STP_E_BAD_MAP);
    unlink(p);
    uint64_t odd = sh.sh_size + 8; /* not a whole number of entries */
    p = copy_patched(at + offsetof(Elf64_Shdr, sh_size), &odd, sizeof odd);
    cr_assert_eq(open_rc(p), STP_E_BAD_MAP);
    unlink(p);

    at = section_header_of(".symtab", &eh, &sh);
    cr_assert_neq(at, 0);
    p = copy_patched(at + offsetof(Elf64_Shdr, sh_offset), &far, sizeof far);
    struct stp_object *obj = NULL;
    cr_assert_eq(stp_object_open(p, 0, &obj), STP_E_OK);
    cr_assert_eq(stp_object_nfuncs(obj), 4);
    uint32_t id;
    uintptr_t addr;
    const char *name;
    stp_object_func(obj, 0, &id, &addr, &name);
    cr_assert_str_eq(name, "", "a symbol table outside the file names nothing");
    stp_object_close(obj);
    unlink(p);
    uint32_t bad_link = 0xffff; /* its string table: no such section */
    p = copy_patched(at + offsetof(Elf64_Shdr, sh_link), &bad_link, sizeof bad_link);
    obj = NULL;
    cr_assert_eq(stp_object_open(p, 0, &obj), STP_E_OK);
    stp_object_func(obj, 3, &id, &addr, &name);
    cr_assert_str_eq(name, "");
    stp_object_close(obj);
    unlink(p);
}

/* ---- page protections before a rewrite (patch.c) ----------------------------------------- */

static const int read_only_datum = 7;

/* /proc/self/maps's PROCMAP_QUERY ioctl (where the kernel has it) and its text agree with what
 * this process mapped, mapping by mapping. */
Test(protections, query_and_text_agree)
{
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *m =
        mmap(NULL, 3 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(m, MAP_FAILED);
    cr_assert_eq(mprotect(m + page, (size_t)page, PROT_NONE), 0);
    cr_assert_eq(munmap(m + 2 * page, (size_t)page), 0);
    int local = 0;
    struct {
        uint64_t addr;
        int prot;
    } want[] = {
        {(uint64_t)(uintptr_t)&stp_page_prot, PROT_READ | PROT_EXEC},
        {(uint64_t)(uintptr_t)&read_only_datum, PROT_READ},
        {(uint64_t)(uintptr_t)&local, PROT_READ | PROT_WRITE},
        {(uint64_t)(uintptr_t)m + 8, PROT_READ | PROT_WRITE},
        {(uint64_t)(uintptr_t)m + page + 8, PROT_NONE},
        {(uint64_t)(uintptr_t)m + 2 * page + 8, -1},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cr_expect_eq(stp_page_prot(want[i].addr, 0), want[i].prot, "%zu: query %d, want %d", i,
                     stp_page_prot(want[i].addr, 0), want[i].prot);
        cr_expect_eq(stp_page_prot(want[i].addr, 1), want[i].prot, "%zu: text %d, want %d", i,
                     stp_page_prot(want[i].addr, 1), want[i].prot);
    }
    munmap(m, 2 * (size_t)page);
}
