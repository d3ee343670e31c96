/* Fuzzes the gRPC Length-Prefixed-Message reader (lib/grpc/grpc_frame).
 *
 * Input: 4 header bytes, then the byte stream.
 *   byte 0  message limit (index into a table) and, in its high bits, after
 *           how many messages the callback fails (0: never)
 *   bytes 1-3  seed of the split points
 * The stream is fed twice: whole, and cut into chunks (zero-length ones too)
 * at points derived from the seed. Both readers must report the same
 * messages, return codes and final state: DATA frames may cut a stream
 * anywhere without changing its meaning. */
#include <string.h>

#include "grpc/grpc_frame.h"
#include "fuzz_common.h"

typedef struct record {
    buf log;           /* flag, length and bytes of every message seen */
    size_t count;
    size_t fail_at;    /* callback returns non-zero on this 1-based call */
} record;

static int on_message(void *ctx, uint8_t flag, const uint8_t *msg, size_t len)
{
    record *rec = ctx;
    FUZZ_CHECK(flag <= 1);
    FUZZ_CHECK(msg != NULL || len == 0);
    uint32_t len32 = (uint32_t)len;
    FUZZ_CHECK(len32 == len);
    FUZZ_CHECK(buf_append(&rec->log, &flag, 1) == 0);
    FUZZ_CHECK(buf_append(&rec->log, &len32, sizeof len32) == 0);
    if (len)
        FUZZ_CHECK(buf_append(&rec->log, msg, len) == 0);
    rec->count++;
    return rec->count == rec->fail_at;
}

/* xorshift32: cheap, deterministic split points from the seed. */
static uint32_t next_rand(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint32_t limits[8] = {0, 1, 5, 16, 100, 4096, 65536, 6291456};
    if (size < 4)
        return 0;
    uint32_t max_len = limits[data[0] & 7];
    size_t fail_at = data[0] >> 5;  /* 0..7 */
    uint32_t seed = (uint32_t)data[1] << 16 | (uint32_t)data[2] << 8 | data[3];
    seed = seed * 2654435761u + 1;  /* never 0 */
    data += 4;
    size -= 4;

    /* Whole stream in one feed. */
    grpc_reader whole;
    record whole_rec = {.fail_at = fail_at};
    grpc_reader_init(&whole, max_len);
    int whole_rc = grpc_reader_feed(&whole, data, size, on_message, &whole_rec);

    /* The same stream in chunks; stops at the first error as callers do. */
    grpc_reader cut;
    record cut_rec = {.fail_at = fail_at};
    grpc_reader_init(&cut, max_len);
    int cut_rc = 0;
    size_t done = 0;
    /* Mostly small chunks, sometimes large ones, sometimes empty ones. */
    uint32_t mode = next_rand(&seed) % 3;
    for (;;) {
        size_t left = size - done;
        size_t n;
        uint32_t r = next_rand(&seed);
        if (mode == 0)
            n = r % 8;
        else if (mode == 1)
            n = r % 64;
        else
            n = (r & 3) == 0 ? 0 : r % (left + 1);
        if (n > left)
            n = left;
        cut_rc = grpc_reader_feed(&cut, data + done, n, on_message, &cut_rec);
        done += n;
        if (cut_rc != 0 || done == size)
            break;
    }
    if (cut_rc == 0 && done < size)
        cut_rc = grpc_reader_feed(&cut, data + done, size - done, on_message, &cut_rec);

    FUZZ_CHECK(whole_rc == cut_rc);
    FUZZ_CHECK(whole_rc == 0 || whole_rc == -1 || whole_rc == -2);
    FUZZ_CHECK(whole_rec.count == cut_rec.count);
    FUZZ_CHECK(whole_rec.log.len == cut_rec.log.len);
    FUZZ_CHECK(whole_rec.log.len == 0 ||
               memcmp(whole_rec.log.data, cut_rec.log.data, whole_rec.log.len) == 0);
    FUZZ_CHECK(whole.n_messages == whole_rec.count);
    FUZZ_CHECK(cut.n_messages == cut_rec.count);
    /* Both stop right after the same message on a callback failure, so the
     * states agree in every case. */
    FUZZ_CHECK(whole.state == cut.state);
    FUZZ_CHECK(grpc_reader_partial(&whole) == grpc_reader_partial(&cut));
    if (whole_rc == -1) {
        FUZZ_CHECK(whole.state == GRPC_READER_TOO_LARGE || whole.state == GRPC_READER_BAD_FLAG);
        /* Error states are sticky. */
        uint8_t more[GRPC_PREFIX_LEN] = {0};
        FUZZ_CHECK(grpc_reader_feed(&whole, more, sizeof more, on_message, &whole_rec) == -1);
        FUZZ_CHECK(whole_rec.count == cut_rec.count);
    }
    if (whole_rc == 0 && !grpc_reader_partial(&whole)) {
        /* A complete stream: appending a well-formed empty message yields
         * exactly one more message. */
        uint8_t empty[GRPC_PREFIX_LEN];
        grpc_frame_prefix(empty, 0);
        size_t before = whole_rec.count;
        whole_rec.fail_at = 0;
        FUZZ_CHECK(grpc_reader_feed(&whole, empty, sizeof empty, on_message, &whole_rec) == 0);
        FUZZ_CHECK(whole_rec.count == before + 1);
    }

    grpc_reader_free(&whole);
    grpc_reader_free(&cut);
    buf_free(&whole_rec.log);
    buf_free(&cut_rec.log);
    return 0;
}
