/* h2_seen: client streams seen on a connection; see h2_seen.h. */
#include "grpc/h2_seen.h"

#include <string.h>

#include <nghttp2/nghttp2.h>

#define SLOT(id) (((uint32_t)(id) >> 1) & (H2_SEEN_IDS - 1))   /* client ids are odd */

static int bit_get(const uint64_t *set, int32_t id)
{
    return (int)(set[SLOT(id) >> 6] >> (SLOT(id) & 63) & 1);
}

static void bit_set(uint64_t *set, int32_t id, int on)
{
    uint64_t mask = UINT64_C(1) << (SLOT(id) & 63);
    if (on)
        set[SLOT(id) >> 6] |= mask;
    else
        set[SLOT(id) >> 6] &= ~mask;
}

/* Within the ids remembered: the last H2_SEEN_IDS odd ids up to top_id. */
static int remembered(const h2_seen *s, int32_t id)
{
    return id <= s->top_id && s->top_id - id < 2 * H2_SEEN_IDS;
}

void h2_seen_init(h2_seen *s, size_t preface_len)
{
    memset(s, 0, sizeof *s);
    s->skip = (uint32_t)preface_len;
}

/* Notes what a frame says about its stream. */
static void record(h2_seen *s, const h2_seen_frame *f)
{
    if (!(f->id & 1))
        return;
    if (f->type == NGHTTP2_HEADERS && f->id > s->top_id) {
        /* the slots of the ids skipped over (and of the new one) are reused */
        int64_t from = s->top_id ? (int64_t)s->top_id + 2 : 1;   /* ids reach 2^31 - 1 */
        if (f->id - from >= 2 * H2_SEEN_IDS)
            from = (int64_t)f->id - 2 * (H2_SEEN_IDS - 1);
        for (int64_t id = from; id <= f->id; id += 2) {
            bit_set(s->opened, (int32_t)id, 0);
            bit_set(s->ended, (int32_t)id, 0);
        }
        s->top_id = f->id;
        bit_set(s->opened, f->id, 1);
    }
    if (!remembered(s, f->id))
        return;
    if (f->type == NGHTTP2_RST_STREAM ||
        ((f->type == NGHTTP2_DATA || f->type == NGHTTP2_HEADERS) &&
         (f->flags & NGHTTP2_FLAG_END_STREAM)))
        bit_set(s->ended, f->id, 1);
}

int h2_seen_next(h2_seen *s, const uint8_t *data, size_t len, size_t *consumed,
                 h2_seen_frame *f)
{
    size_t off = 0;
    while (off < len) {
        if (s->skip) {
            size_t k = len - off < s->skip ? len - off : s->skip;
            off += k;
            s->skip -= (uint32_t)k;
            continue;
        }
        size_t k = 9 - s->hd_len;
        if (k > len - off)
            k = len - off;
        memcpy(s->hd + s->hd_len, data + off, k);
        s->hd_len += (uint8_t)k;
        off += k;
        if (s->hd_len < 9)
            break;
        s->hd_len = 0;
        const uint8_t *hd = s->hd;
        s->skip = (uint32_t)hd[0] << 16 | (uint32_t)hd[1] << 8 | hd[2];
        *f = (h2_seen_frame){
            .start = off >= 9 ? off - 9 : 0,
            .type = hd[3],
            .flags = hd[4],
            .id = (int32_t)((uint32_t)(hd[5] & 0x7f) << 24 | (uint32_t)hd[6] << 16 |
                            (uint32_t)hd[7] << 8 | hd[8]),
        };
        if ((f->type == NGHTTP2_DATA || f->type == NGHTTP2_HEADERS) && (f->id & 1) &&
            f->id <= s->top_id) {
            *consumed = off;
            return 1;
        }
        record(s, f);
    }
    *consumed = off;
    return 0;
}

uint32_t h2_seen_verdict(h2_seen *s, const h2_seen_frame *f, int open)
{
    uint32_t code = 0;
    if (!open && remembered(s, f->id)) {
        int opened = bit_get(s->opened, f->id), ended = bit_get(s->ended, f->id);
        if (f->type == NGHTTP2_HEADERS && (!opened || ended))
            code = NGHTTP2_PROTOCOL_ERROR;   /* §5.1.1: a new stream on a lower id */
        else if (ended)
            code = NGHTTP2_STREAM_CLOSED;    /* §5.1: DATA after the client closed it */
        /* opened, not ended: we closed it while the client was still
         * sending (an early answer, a refusal); its frames in flight are
         * ignored (§5.1) */
    }
    record(s, f);
    return code;
}
