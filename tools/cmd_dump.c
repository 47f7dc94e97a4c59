/* sledtrace dump: one line per record, or (--verify) a strict grammar check.
 *
 * Line format (space separated, stable for scripts):
 *   OFFSET KIND tid=T pid=P cpu=C tsc=TSC [kind fields]
 * function records add "id=ID action=ACTION name=NAME" (name last: it is free text); a loss
 * marker "LOST=N", a context switch (STF_TYPED_CONTEXT) "CONTEXT to=ID from=ID how=HOW" in
 * place of the payload. */
#include "common.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void help(FILE *out)
{
    fputs("usage: sledtrace dump TRACE [--verify] [--syms FILE [--force-syms]]\n"
          "\n"
          "Print one line per record: byte offset, kind, thread, process, cpu, absolute TSC\n"
          "and the record's fields (function records: id, action, name). Damaged input is\n"
          "decoded leniently, with warnings on stderr.\n"
          "\n"
          "  --verify      check the FDR grammar strictly instead of printing records; prints\n"
          "                'OK: N records, M blocks' or the offset and rule of the first\n"
          "                violation (exit status 1). A file cut inside its last block (a\n"
          "                process killed while its trace was written) whose records are\n"
          "                valid up to the cut is OK, with '; torn at the end: ...' naming the\n"
          "                cut's offset and size (exit status 0)\n"
          "  --syms FILE   symbols file (default: the trace path with .fdr replaced by .syms),\n"
          "                or the traced binary: refused if its build id is not the one the\n"
          "                trace's symbols file records\n"
          "  --force-syms  use a --syms binary even if its build id differs\n"
          "  --names MODE  C++ names: short (default: namespaces and name), full or mangled\n",
          out);
}

/* An event's payload: data="..." with printable ASCII as is, '"' and '\\' escaped and other
 * bytes as \xHH; the first 64 bytes, then "...". */
static void print_payload(const uint8_t *p, size_t n)
{
    enum { SHOWN = 64 };
    fputs(" data=\"", stdout);
    for (size_t i = 0; i < n && i < SHOWN; i++) {
        if (p[i] == '"' || p[i] == '\\')
            printf("\\%c", p[i]);
        else if (p[i] >= 0x20 && p[i] < 0x7f)
            putchar(p[i]);
        else
            printf("\\x%02x", p[i]);
    }
    fputs(n > SHOWN ? "\"..." : "\"", stdout);
}

static void print_item(const struct stf_item *it, const struct stf_syms *syms)
{
    printf("%" PRIu64 " %s tid=%" PRId32 " pid=%" PRId32 " cpu=%u tsc=%" PRIu64, it->offset,
           stf_kind_name(it->kind), it->tid, it->pid, (unsigned)it->cpu, it->tsc);
    switch (it->kind) {
    case STF_K_FUNCTION: {
        char nb[32];
        printf(" id=%" PRIu32 " action=%s name=%s", it->func_id, stf_action_name(it->action),
               stf_syms_name(syms, it->func_id, nb, sizeof nb));
        break;
    }
    case STF_M_BUFFER_EXTENTS:
        printf(" bytes=%" PRIu64, it->value);
        break;
    case STF_M_CALL_ARG:
        printf(" arg=0x%" PRIx64, it->value);
        break;
    case STF_M_WALLTIME:
        printf(" sec=%" PRId64 " usec=%" PRIu32, it->wall_sec, it->wall_usec);
        break;
    case STF_M_CUSTOM_EVENT: {
        uint64_t lost;
        printf(" size=%" PRId32 " delta=%" PRId32, it->event_size, it->event_delta);
        if (stf_decode_loss(it->payload, it->payload_len, &lost))
            printf(" LOST=%" PRIu64, lost);
        else
            print_payload(it->payload, it->payload_len);
        break;
    }
    case STF_M_TYPED_EVENT: {
        uint64_t to, from;
        uint32_t how;
        static const char *const hows[] = {"?", "swapcontext", "setcontext", "return", "resume"};
        printf(" size=%" PRId32 " delta=%" PRId32 " type=%u", it->event_size, it->event_delta,
               (unsigned)it->event_type);
        if (stf_decode_context(it->event_type, it->payload, it->payload_len, &to, &from, &how))
            printf(" CONTEXT to=%" PRIu64 " from=%" PRIu64 " how=%s", to, from,
                   hows[how < 5 ? how : 0]);
        else
            print_payload(it->payload, it->payload_len);
        break;
    }
    default:
        break;
    }
    putchar('\n');
}

/* The end of a torn trace (stf_reader_torn), after "OK: ...": where the file was cut. */
static void print_torn(const struct stf_torn *t)
{
    fputs("; torn at the end: ", stdout);
    if (t->partial && t->offset == t->block)
        printf("the last %" PRIu64 " bytes (offset %" PRIu64 ") are an incomplete BufferExtents "
               "record",
               t->partial, t->offset);
    else if (t->partial)
        printf("the last %" PRIu64 " bytes (offset %" PRIu64 ") are an incomplete record of the "
               "block at offset %" PRIu64 ", which lacks %" PRIu64 " more bytes",
               t->partial, t->offset, t->block, t->missing);
    else
        printf("the block at offset %" PRIu64 " ends at offset %" PRIu64
               ", a record boundary, %" PRIu64 " bytes short of its extents",
               t->block, t->offset, t->missing);
    fputs(" (a process killed while its trace was written; the records before are valid)", stdout);
}

int cmd_dump(int argc, char **argv)
{
    const char *path = NULL, *syms_path = NULL;
    bool verify = false;
    if (tool_wants_help(argc, argv)) {
        help(stdout);
        return EXIT_OK;
    }
    for (int i = 1; i < argc; i++) {
        int m;
        if (strcmp(argv[i], "--verify") == 0)
            verify = true;
        else if ((m = tool_option(argc, argv, &i, "dump", "--syms", &syms_path)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            tool_err("dump: unknown option '%s'", argv[i]);
            return EXIT_USAGE;
        } else if (!path)
            path = argv[i];
        else {
            tool_err("dump: more than one trace given");
            return EXIT_USAGE;
        }
    }
    if (!tool_default_trace(&path, "dump"))
        return EXIT_USAGE;

    struct stf_reader *r =
        tool_open_trace(path, verify ? STF_READ_STRICT | STF_READ_TORN_END : STF_READ_LENIENT);
    if (!r)
        return EXIT_BAD_TRACE;
    struct stf_syms *syms = NULL;
    if (!verify) {
        bool ok;
        syms = tool_load_syms(path, syms_path, &ok);
        if (!ok) {
            stf_reader_close(r);
            return EXIT_BAD_TRACE;
        }
    }

    struct stf_item it;
    int rc;
    while ((rc = stf_reader_next(r, &it)) == STF_OK)
        if (!verify)
            print_item(&it, syms);
    int status = EXIT_OK;
    if (rc < 0) {
        fflush(stdout);
        status = tool_reader_fail(r, path, rc);
    } else if (verify) {
        struct stf_reader_stats st;
        stf_reader_stats(r, &st);
        printf("OK: %" PRIu64 " records, %" PRIu64 " blocks", st.records, st.blocks);
        if (st.blocks == 0) /* the runtime writes the header at start-up, blocks as it flushes */
            printf(" (a header alone: the process ended before its first flush, e.g. killed by "
                   "SIGKILL, or recorded nothing)");
        struct stf_torn torn;
        if (stf_reader_torn(r, &torn))
            print_torn(&torn);
        putchar('\n');
    }
    tool_warn_summary(path);
    stf_syms_free(syms);
    stf_reader_close(r);
    if (fflush(stdout) != 0)
        status = EXIT_BAD_TRACE;
    return status;
}
