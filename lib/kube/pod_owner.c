/* pod_owner: the ownership rule of replicas sharing a namespace; see pod_owner.h. */
#include "kube/pod_owner.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static int64_t sat_add(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

pod_owner_verdict pod_owner_judge(const pod_owner_facts *f, const char *owner, int64_t created_us)
{
    if (!owner || !*owner)
        return POD_OWNER_NONE;
    if (!strcmp(owner, f->me))
        return POD_OWNER_MINE;
    if (!f->leases_known)
        return POD_OWNER_LIVE;
    for (int i = 0; i < f->n_leases; i++) {
        const lease_view *l = &f->leases[i];
        if (!l->holder || strcmp(l->holder, owner))
            continue;
        if (l->renew_us < 0 || l->duration_s < 0)   /* never renewed: as without a Lease */
            break;
        int64_t expires = sat_add(sat_add(l->renew_us, l->duration_s > INT64_MAX / 1000000
                                                           ? INT64_MAX : l->duration_s * 1000000),
                                  f->margin_us);
        return f->now_us > expires ? POD_OWNER_EXPIRED : POD_OWNER_LIVE;
    }
    /* no Lease: its owner is gone (or has not made it yet: a young pod waits) */
    return created_us >= 0 && f->now_us - created_us > f->grace_us ? POD_OWNER_EXPIRED
                                                                   : POD_OWNER_LIVE;
}

const char *pod_owner_verdict_name(pod_owner_verdict v)
{
    switch (v) {
    case POD_OWNER_MINE: return "mine";
    case POD_OWNER_LIVE: return "live";
    case POD_OWNER_EXPIRED: return "expired";
    case POD_OWNER_NONE: return "none";
    }
    return "?";
}

int pod_owner_service_in_use(const pod_owner_pod *pods, int n, const char *pod_id,
                             const char *except)
{
    for (int i = 0; i < n; i++)
        if (!pods[i].terminating && pods[i].pod_id && !strcmp(pods[i].pod_id, pod_id) &&
            (!except || !pods[i].name || strcmp(pods[i].name, except)))
            return 1;
    return 0;
}

int64_t rfc3339_us(const char *s)
{
    struct tm tm = {0};
    const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!end)
        return -1;
    int64_t frac = 0;
    int digits = 0;
    if (*end == '.')
        for (end++; *end >= '0' && *end <= '9'; end++)
            if (digits < 6) {
                frac = frac * 10 + (*end - '0');
                digits++;
            }
    for (; digits < 6; digits++)
        frac *= 10;
    if (strcmp(end, "Z"))   /* Kubernetes writes UTC */
        return -1;
    time_t t = timegm(&tm);
    if (t < 0)
        return -1;
    return (int64_t)t * 1000000 + frac;
}

int64_t wall_clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void rfc3339_micro(int64_t us, char out[RFC3339_MICRO_MAX])
{
    time_t t = (time_t)(us / 1000000);
    struct tm tm;
    char day[24] = "1970-01-01T00:00:00";
    if (gmtime_r(&t, &tm))
        strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, RFC3339_MICRO_MAX, "%s.%06lldZ", day, (long long)(us % 1000000));
}
