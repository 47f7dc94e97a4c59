/* pfcount: reads a Perfetto protobuf trace (`sledtrace convert --format perfetto`) straight from
 * the protobuf wire format, as fast as the file can be read, for traces too large for
 * `protoc --decode` (whose text of a 1 GB trace is tens of GB). Independent of the exporter's
 * code: it knows only the wire format and the field numbers of perfetto_trace.proto.
 *
 * Checks, exiting 1 with one line naming the packet's byte offset on the first failure:
 *  - the file is a sequence of Trace.packet (field 1, length-delimited) that ends exactly at
 *    the end of the file, every field inside well formed (varints, lengths within the packet);
 *  - per sequence (trusted_packet_sequence_id): interned event names are cleared by
 *    SEQ_INCREMENTAL_STATE_CLEARED, and every TrackEvent's name_iid was interned before on its
 *    sequence; every SLICE_END closes an open SLICE_BEGIN, and at the end no slice is open.
 * Prints, sorted by name, one line per slice name: "<name>\t<slices>", then "# packets N
 * slices N instants N sequences N". Names that are inline strings (TrackEvent.name) count too.
 *
 * Field numbers (perfetto_trace.proto): Trace.packet 1; TracePacket.trusted_packet_sequence_id
 * 10, .track_event 11, .interned_data 12, .sequence_flags 13; TrackEvent.type 9 (SLICE_BEGIN
 * 1, SLICE_END 2, INSTANT 3), .name_iid 10, .name 23; InternedData.event_names 2; EventName.iid
 * 1, .name 2. Usage: pfcount FILE */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct buf {
    const uint8_t *p, *end;
};

static const uint8_t *file_base;
static uint64_t packet_at; /* the current packet's offset, for messages */

static void fail(const char *what)
{
    fprintf(stderr, "pfcount: %s (packet at byte %llu)\n", what, (unsigned long long)packet_at);
    exit(1);
}

static uint64_t varint(struct buf *b)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->p >= b->end)
            fail("varint runs past its message");
        uint8_t c = *b->p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return v;
    }
    fail("varint longer than 10 bytes");
    return 0;
}

/* Reads one field's key; the value is in *v (varint, fixed) or *sub (length-delimited). */
static int field(struct buf *b, uint32_t *num, uint64_t *v, struct buf *sub)
{
    if (b->p >= b->end)
        return 0;
    uint64_t key = varint(b);
    *num = (uint32_t)(key >> 3);
    switch (key & 7) {
    case 0:
        *v = varint(b);
        break;
    case 1:
        if (b->end - b->p < 8)
            fail("fixed64 runs past its message");
        memcpy(v, b->p, 8);
        b->p += 8;
        break;
    case 2: {
        uint64_t len = varint(b);
        if (len > (uint64_t)(b->end - b->p))
            fail("length-delimited field runs past its message");
        sub->p = b->p;
        sub->end = b->p + len;
        b->p += len;
        *v = len;
        break;
    }
    case 5:
        if (b->end - b->p < 4)
            fail("fixed32 runs past its message");
        *v = 0;
        memcpy(v, b->p, 4);
        b->p += 4;
        break;
    default:
        fail("unknown wire type");
    }
    return 1;
}

/* Interned names of one sequence: iid -> index into the global name table. */
struct seq {
    uint32_t id;
    uint32_t *iid_name; /* indexed by iid */
    size_t niid;
    long depth;
};

static struct seq *seqs;
static size_t nseqs;

static struct seq *seq_of(uint32_t id)
{
    for (size_t i = 0; i < nseqs; i++)
        if (seqs[i].id == id)
            return &seqs[i];
    seqs = realloc(seqs, (nseqs + 1) * sizeof *seqs);
    if (!seqs)
        fail("out of memory");
    seqs[nseqs] = (struct seq){.id = id};
    return &seqs[nseqs++];
}

/* Global names (hash table of distinct strings) and their slice counts. */
struct name {
    char *s;
    uint64_t slices;
};
static struct name *names;
static size_t nnames, cap_names;
static uint32_t *hash;
static size_t hash_cap;

static uint32_t fnv(const uint8_t *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 16777619u;
    return h;
}

static void rehash(void)
{
    free(hash);
    hash_cap = hash_cap ? hash_cap * 2 : 1024;
    hash = calloc(hash_cap, sizeof *hash);
    if (!hash)
        fail("out of memory");
    for (size_t i = 0; i < nnames; i++) {
        size_t h = fnv((const uint8_t *)names[i].s, strlen(names[i].s)) & (hash_cap - 1);
        while (hash[h])
            h = (h + 1) & (hash_cap - 1);
        hash[h] = (uint32_t)i + 1;
    }
}

static uint32_t name_index(const uint8_t *s, size_t n)
{
    if ((nnames + 1) * 2 > hash_cap)
        rehash();
    size_t h = fnv(s, n) & (hash_cap - 1);
    for (; hash[h]; h = (h + 1) & (hash_cap - 1)) {
        const char *t = names[hash[h] - 1].s;
        if (strlen(t) == n && memcmp(t, s, n) == 0)
            return hash[h] - 1;
    }
    if (nnames == cap_names) {
        cap_names = cap_names ? cap_names * 2 : 256;
        names = realloc(names, cap_names * sizeof *names);
        if (!names)
            fail("out of memory");
    }
    names[nnames].s = strndup((const char *)s, n);
    names[nnames].slices = 0;
    hash[h] = (uint32_t)nnames + 1;
    return (uint32_t)nnames++;
}

static void intern(struct seq *q, struct buf in)
{
    uint32_t num;
    uint64_t v;
    struct buf sub;
    while (field(&in, &num, &v, &sub)) {
        if (num != 2)
            continue;
        uint64_t iid = 0;
        struct buf nm = {NULL, NULL}, s2;
        uint32_t n2;
        uint64_t v2;
        while (field(&sub, &n2, &v2, &s2)) {
            if (n2 == 1)
                iid = v2;
            else if (n2 == 2)
                nm = s2;
        }
        if (!iid || !nm.p || iid > 100000000)
            fail("event name without an iid or a name");
        if (iid >= q->niid) {
            size_t n = iid * 2 + 16;
            q->iid_name = realloc(q->iid_name, n * sizeof *q->iid_name);
            if (!q->iid_name)
                fail("out of memory");
            memset(q->iid_name + q->niid, 0xff, (n - q->niid) * sizeof *q->iid_name);
            q->niid = n;
        }
        q->iid_name[iid] = name_index(nm.p, (size_t)(nm.end - nm.p));
    }
}

static uint64_t npackets, nslices, ninstants;

static void packet(struct buf b)
{
    uint32_t num;
    uint64_t v, seq_id = 0, flags = 0;
    struct buf sub, te = {NULL, NULL}, in = {NULL, NULL};
    while (field(&b, &num, &v, &sub)) {
        if (num == 10)
            seq_id = v;
        else if (num == 13)
            flags = v;
        else if (num == 11)
            te = sub;
        else if (num == 12)
            in = sub;
    }
    struct seq *q = seq_of((uint32_t)seq_id);
    if (flags & 1) { /* SEQ_INCREMENTAL_STATE_CLEARED */
        free(q->iid_name);
        q->iid_name = NULL;
        q->niid = 0;
    }
    if (in.p)
        intern(q, in);
    if (!te.p)
        return;
    uint64_t type = 0, iid = 0;
    struct buf nm = {NULL, NULL};
    while (field(&te, &num, &v, &sub)) {
        if (num == 9)
            type = v;
        else if (num == 10)
            iid = v;
        else if (num == 23)
            nm = sub;
    }
    if (type == 2) {
        if (q->depth == 0)
            fail("a slice end with no slice open on its sequence");
        q->depth--;
        return;
    }
    if (type != 1 && type != 3)
        return;
    uint32_t idx;
    if (nm.p)
        idx = name_index(nm.p, (size_t)(nm.end - nm.p));
    else if (iid && iid < q->niid && q->iid_name[iid] != UINT32_MAX)
        idx = q->iid_name[iid];
    else
        fail("a name_iid not interned on its sequence");
    if (type == 1) {
        names[idx].slices++;
        nslices++;
        q->depth++;
    } else {
        ninstants++;
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct name *)a)->s, ((const struct name *)b)->s);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fputs("usage: pfcount FILE\n", stderr);
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(argv[1]);
        return 2;
    }
    const uint8_t *m =
        st.st_size ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    if (st.st_size && m == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    file_base = m;
    struct buf b = {m, m + st.st_size};
    uint32_t num;
    uint64_t v;
    struct buf sub;
    while (b.p < b.end) {
        packet_at = (uint64_t)(b.p - file_base);
        if (!field(&b, &num, &v, &sub))
            break;
        if (num != 1)
            fail("a top-level field other than Trace.packet");
        npackets++;
        packet(sub);
        /* the pages read are not needed again: keep the resident size small */
        if (npackets % 65536 == 0)
            madvise((void *)((uintptr_t)file_base & ~(uintptr_t)4095),
                    ((uintptr_t)b.p & ~(uintptr_t)4095) - ((uintptr_t)file_base & ~(uintptr_t)4095),
                    MADV_DONTNEED);
    }
    for (size_t i = 0; i < nseqs; i++)
        if (seqs[i].depth != 0) {
            packet_at = (uint64_t)st.st_size;
            fail("slices left open at the end of a sequence");
        }
    qsort(names, nnames, sizeof *names, by_name);
    for (size_t i = 0; i < nnames; i++)
        if (names[i].slices)
            printf("%s\t%llu\n", names[i].s, (unsigned long long)names[i].slices);
    printf("# packets %llu slices %llu instants %llu sequences %zu\n", (unsigned long long)npackets,
           (unsigned long long)nslices, (unsigned long long)ninstants, nseqs);
    return 0;
}
