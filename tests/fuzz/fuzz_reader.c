/* libFuzzer target for the trace reader: every input is read to its end in strict mode and in
 * lenient mode, through a memfd (the reader takes a descriptor), item by item, touching every
 * payload byte. Any crash, hang, out-of-bounds access or leak is a bug: bad input must only ever
 * produce an error code. Built with clang -fsanitize=fuzzer,address (tests/fuzz/meson.build). */
#include "stf.h"

#include <stddef.h>
#include <stdint.h>
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("trace", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) == (ssize_t)size) {
        read_all(fd, STF_READ_STRICT);
        read_all(fd, STF_READ_LENIENT);
    }
    close(fd);
    return 0;
}
