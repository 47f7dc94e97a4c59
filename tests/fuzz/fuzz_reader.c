/* libFuzzer target for the trace reader and the cursor: every input is read to its end in strict
 * mode and in lenient mode, through a memfd (the reader takes a descriptor), item by item,
 * touching every payload byte; then a lenient cursor opens it (by /proc/self/fd path) and walks
 * every thread forward, backward, and forward again from a seek (with a second cursor synced
 * to it now and then), so the block index, the live decode after stf_reader_seek and the block
 * cache meet damaged input too. Any crash, hang, out-of-bounds access or leak is a bug: bad
 * input must only ever produce an error code. Built with clang -fsanitize=fuzzer,address
 * (tests/fuzz/meson.build). */
#include "stf.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static void read_all(int fd, int flags)
{
    lseek(fd, 0, SEEK_SET);
    struct stf_reader *r = NULL;
    if (stf_reader_open_fd(&r, fd, flags) == STF_OK) {
        struct stf_item it;
        volatile unsigned sum = 0;
        int n = 0;
        while (stf_reader_next(r, &it) == STF_OK && n++ < 1000000)
            for (size_t i = 0; i < it.payload_len; i++)
                sum += it.payload[i];
        uint64_t off;
        (void)stf_reader_error(r, &off);
        struct stf_reader_stats st;
        stf_reader_stats(r, &st);
    }
    stf_reader_close(r);
}

static void walk_all(int fd)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    struct stf_cursor *c = NULL, *c2 = NULL;
    if (stf_cursor_open(&c, path, STF_READ_LENIENT, NULL, 0) != STF_OK)
        return;
    if (stf_cursor_open(&c2, path, STF_READ_LENIENT, NULL, 0) != STF_OK)
        c2 = NULL;
    volatile unsigned sum = 0;
    for (size_t t = 0; t < stf_cursor_threads(c); t++) {
        uint64_t items = 0;
        stf_cursor_select(c, t, NULL, NULL, &items);
        struct stf_item it;
        int n = 0;
        while (stf_cursor_next(c, &it) == STF_OK && n++ < 1000000)
            for (size_t i = 0; i < it.payload_len; i++)
                sum += it.payload[i];
        while (stf_cursor_prev(c, &it) == STF_OK && n++ < 2000000)
            sum += it.kind;
        stf_cursor_seek(c, items ? 1000 : 0);
        while (stf_cursor_next(c, &it) == STF_OK && n++ < 3000000) {
            sum += it.kind;
            if (c2 && (n & 63) == 0 && stf_cursor_sync(c2, c) == STF_OK &&
                stf_cursor_next(c2, &it) == STF_OK)
                sum += it.kind;
        }
    }
    struct stf_reader_stats st;
    stf_cursor_stats(c, &st);
    stf_cursor_close(c2);
    stf_cursor_close(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("trace", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) == (ssize_t)size) {
        read_all(fd, STF_READ_STRICT);
        read_all(fd, STF_READ_LENIENT);
        walk_all(fd);
    }
    close(fd);
    return 0;
}
