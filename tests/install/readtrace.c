/* Built by test_install.sh against an installed sledtrace with
 * `$(pkg-config --cflags --libs sledtrace-format)`: reads TRACE with the shared trace reading
 * library and prints "calls NAME N", the entries of function NAME in all threads (names from the
 * sidecar beside the trace), and "records N", the records the streaming reader returns.
 * Usage: readtrace TRACE NAME. Exit status 1 on any error. */
#include <stf.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: readtrace TRACE NAME\n");
        return 1;
    }
    char err[512];
    struct stf_syms *syms = NULL;
    char *syms_path = stf_syms_path_for(argv[1]);
    if (!syms_path || stf_syms_load(&syms, syms_path, err, sizeof err) != STF_OK) {
        fprintf(stderr, "readtrace: %s\n", syms_path ? err : "out of memory");
        return 1;
    }
    free(syms_path);

    struct stf_cursor *c = NULL;
    if (stf_cursor_open(&c, argv[1], STF_READ_STRICT, err, sizeof err) != STF_OK) {
        fprintf(stderr, "readtrace: %s\n", err);
        return 1;
    }
    unsigned long calls = 0;
    for (size_t t = 0; t < stf_cursor_threads(c); t++) {
        struct stf_item it;
        int rc = stf_cursor_select(c, t, NULL, NULL, NULL);
        while (rc == STF_OK && (rc = stf_cursor_next(c, &it)) == STF_OK) {
            char buf[32];
            if (it.kind == STF_K_FUNCTION &&
                (it.action == STF_ENTER || it.action == STF_ENTER_ARGS) &&
                strcmp(stf_syms_name(syms, it.func_id, buf, sizeof buf), argv[2]) == 0)
                calls++;
        }
        if (rc != STF_END) {
            fprintf(stderr, "readtrace: %s\n", stf_cursor_error(c, NULL));
            return 1;
        }
    }
    stf_cursor_close(c);
    stf_syms_free(syms);

    struct stf_reader *r = NULL;
    if (stf_reader_open(&r, argv[1], STF_READ_STRICT) != STF_OK) {
        fprintf(stderr, "readtrace: %s\n", r ? stf_reader_error(r, NULL) : "out of memory");
        return 1;
    }
    struct stf_item it;
    int rc;
    while ((rc = stf_reader_next(r, &it)) == STF_OK)
        ;
    if (rc != STF_END) {
        fprintf(stderr, "readtrace: %s: %s\n", stf_strerror(rc), stf_reader_error(r, NULL));
        return 1;
    }
    struct stf_reader_stats st;
    stf_reader_stats(r, &st);
    stf_reader_close(r);
    printf("calls %s %lu\nrecords %llu\n", argv[2], calls, (unsigned long long)st.records);
    return 0;
}
