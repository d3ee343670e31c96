/* kube_pod_view: the pods the cache holds, as a person or a script reads
 * them (runner-client serve's GET /debug/pods); see kube_pod_cache.h. */
#include "kube/kube_pod_internal.h"

#include <stdio.h>
#include <string.h>

#include "core/json_write.h"
#include "core/log.h"

static int count_waiters(const pod_waiter *w)
{
    int n = 0;
    for (; w; w = w->next)
        n++;
    return n;
}

static double seconds(int64_t ns)
{
    return (double)ns / 1e9;
}

/* Idle since the last call's end (or since it served); 0 while busy or
 * not serving yet. */
static double idle_s(const pod *p, int64_t now)
{
    return p->state == POD_SERVING && !p->calls ? seconds(now - p->last_used_ns) : 0;
}

static int view_json(pod_cache *pc, buf *out)
{
    int64_t now = pod_now(pc);
    int rc = buf_append_str(out, "{\"pods\":[");
    int first = 1;
    for (fn_entry *f = pc->fns; f; f = f->next)
        for (pod *p = f->pods; p; p = p->next) {
            json_obj o;
            rc |= buf_append_str(out, first ? "" : ",");
            first = 0;
            json_obj_begin(&o, out);
            json_obj_string(&o, "image", p->image);
            json_obj_string(&o, "pod", p->name);
            json_obj_string(&o, "podId", p->pod_id);
            json_obj_string(&o, "node", p->node);
            json_obj_string(&o, "state", pod_state_name(p->state));
            json_obj_key(&o, "calls");
            o.rc |= buf_printf(out, "%d", p->calls);
            json_obj_key(&o, "waiting");
            o.rc |= buf_printf(out, "%d", count_waiters(p->waiters) + count_waiters(p->parked));
            json_obj_key(&o, "idleSeconds");
            o.rc |= buf_printf(out, "%.1f", idle_s(p, now));
            json_obj_string(&o, "lastTransition", pod_event_name(p->last_event));
            json_obj_key(&o, "sinceSeconds");
            o.rc |= buf_printf(out, "%.1f", seconds(now - p->changed_ns));
            json_obj_key(&o, "created");
            o.rc |= buf_append_str(out, p->created ? "true" : "false");
            json_obj_string(&o, "owner", pc->o.owner);   /* replicas: every pod held is its own */
            rc |= json_obj_end(&o);
        }
    return rc | buf_append_str(out, "]}\n");
}

/* ---- the text table ------------------------------------------------------ */

#define VIEW_COLUMNS 10
#define VIEW_CELL 320   /* an escaped image reference, a pod name */

typedef char view_row[VIEW_COLUMNS][VIEW_CELL];

static void cell(char *out, const char *text)
{
    size_t used, n = log_escape(out, VIEW_CELL - 1, text ? text : "-", strlen(text ? text : "-"), &used);
    out[n] = '\0';
}

static void fill(view_row row, const pod *p, int64_t now)
{
    char num[4][32];
    snprintf(num[0], sizeof num[0], "%d", p->calls);
    snprintf(num[1], sizeof num[1], "%d", count_waiters(p->waiters) + count_waiters(p->parked));
    snprintf(num[2], sizeof num[2], "%.0fs", idle_s(p, now));
    snprintf(num[3], sizeof num[3], "%s %.0fs ago", pod_event_name(p->last_event),
             seconds(now - p->changed_ns));
    const char *text[VIEW_COLUMNS] = {p->image, p->name, p->node, pod_state_name(p->state),
                                      num[0], num[1], num[2], num[3],
                                      p->created ? "created" : "adopted", p->pc->o.owner};
    for (int i = 0; i < VIEW_COLUMNS; i++)
        cell(row[i], text[i]);
}

static int put_row(buf *out, const size_t *width, const char *const *cells)
{
    int rc = 0;
    for (int i = 0; i < VIEW_COLUMNS - 1; i++)
        rc |= buf_printf(out, "%-*s  ", (int)width[i], cells[i]);
    return rc | buf_printf(out, "%s\n", cells[VIEW_COLUMNS - 1]);
}

static int view_text(pod_cache *pc, buf *out)
{
    static const char *const head[VIEW_COLUMNS] = {"IMAGE", "POD", "NODE", "STATE", "CALLS",
                                                   "WAITING", "IDLE", "LAST TRANSITION", "ORIGIN",
                                                   "OWNER"};
    size_t width[VIEW_COLUMNS];
    for (int i = 0; i < VIEW_COLUMNS; i++)
        width[i] = strlen(head[i]);
    int64_t now = pod_now(pc);
    view_row row;
    const char *cells[VIEW_COLUMNS];
    for (int i = 0; i < VIEW_COLUMNS; i++)
        cells[i] = row[i];
    /* two passes, widths then lines: the table is the cache's pods, few */
    for (fn_entry *f = pc->fns; f; f = f->next)
        for (pod *p = f->pods; p; p = p->next) {
            fill(row, p, now);
            for (int i = 0; i < VIEW_COLUMNS; i++)
                if (strlen(row[i]) > width[i])
                    width[i] = strlen(row[i]);
        }
    int rc = put_row(out, width, head);
    for (fn_entry *f = pc->fns; f; f = f->next)
        for (pod *p = f->pods; p; p = p->next) {
            fill(row, p, now);
            rc |= put_row(out, width, cells);
        }
    return rc;
}

int pod_cache_view(pod_cache *pc, int text, buf *out)
{
    return text ? view_text(pc, out) : view_json(pc, out);
}
