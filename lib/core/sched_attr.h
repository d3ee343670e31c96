/* sched_attr: the argument of sched_setattr(2) and sched_getattr(2), as of
 * its second version (56 bytes: with the utilisation clamps), and the flags
 * we use. The C libraries before glibc 2.41 declare none of it and the
 * static (musl) build has no kernel headers; named apart from the struct
 * sched_attr a later build may see. A kernel that knows only the first
 * version (48 bytes) takes this one while the clamps are 0. */
#ifndef KRM_SCHED_ATTR_H
#define KRM_SCHED_ATTR_H

#include <stdint.h>

typedef struct krm_sched_attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;   /* runtime: the slice asked, in ns (0: default) */
    uint32_t util_min, util_max;
} krm_sched_attr;

#define SCHED_ATTR_KEEP_POLICY 0x08   /* SCHED_FLAG_KEEP_POLICY */
#define SCHED_ATTR_UTIL_CLAMP 0x60    /* SCHED_FLAG_UTIL_CLAMP_MIN | _MAX */

#endif
