/* rl_writer: writes one new ResourceList into a buf with libyaml's emitter:
 * the `apiVersion: config.kubernetes.io/v1, kind: ResourceList` wrapper,
 * then whatever the caller puts under `items` (and after it).
 *
 * Why a writer of its own: every way rl_input builds a list (the objects
 * of a file, of stdin, of a directory walk, the items of an unwrapped
 * `kind: List`) shares the same frame, the same emitter settings and the
 * same promise that a failure leaves `out` as it was. It also carries what
 * messages need to name the place: the input being read and the document
 * in it (rl_writer_fail_doc).
 *
 * How: rl_writer_open emits the frame up to the `items` key; the caller
 * emits the value (a sequence, usually, opened and closed with
 * rl_writer_emit_new) and copies events from an event_list into it;
 * rl_writer_close ends the frame and, on failure, truncates out back to
 * where it began. Emitted events are owned by the emitter; their copies in
 * the event_list are zeroed. Long scalars are never folded, indent is 2. */
#ifndef KRM_RC_RL_WRITER_H
#define KRM_RC_RL_WRITER_H

#include <stddef.h>
#include <yaml.h>

#include "core/buf.h"
#include "pkg/event_list.h"

typedef struct rl_writer {
    yaml_emitter_t emitter;
    int emitter_open;
    buf *out;
    size_t out_start;    /* out->len before we began; restored on failure */
    buf *err;            /* the caller's, for the reason */
    const char *name;    /* input being read, for messages */
    size_t doc_position; /* its document being wrapped, counting empty ones */
    size_t doc_line;     /* 1-based line where that document's object starts */
    size_t objects;      /* objects wrapped into items so far */
    int framed;          /* opened with rl_writer_open (not _open_stream) */
} rl_writer;

/* Prepares w to append to out; `name` names the input in messages (the
 * caller may point w->name at another input while it reads that one). */
void rl_writer_init(rl_writer *w, buf *out, buf *err, const char *name);

/* Starts the ResourceList and emits everything up to the `items` key. */
int rl_writer_open(rl_writer *w);

/* Starts a bare YAML stream instead: no wrapper; the caller emits each
 * document (DOCUMENT_START, a node, DOCUMENT_END). For the files of a
 * package, unwrapped items and results.yaml. */
int rl_writer_open_stream(rl_writer *w);

/* Ends the ResourceList (or the stream) when rc is 0, releases the emitter, and on failure
 * takes back whatever was appended to out. Returns rc, or -1 if closing
 * failed. Call it after rl_writer_open whatever that returned. */
int rl_writer_close(rl_writer *w, int rc);

/* Emits a new event of a kind that carries no data (collections in block
 * style, documents implicit). */
int rl_writer_emit_new(rl_writer *w, yaml_event_type_t type);

/* A plain scalar (keys, and the wrapper's apiVersion/kind). */
int rl_writer_emit_plain(rl_writer *w, const char *text);

/* A string value, single-quoted as kyaml writes annotation values ('0'),
 * so it can never be read back as a number or boolean. */
int rl_writer_emit_quoted(rl_writer *w, const char *text);

/* A string value: plain when a YAML reader takes it back as a string
 * (yaml.v3's resolution), else quoted, so "007" or "true" stay strings. */
int rl_writer_emit_string(rl_writer *w, const char *text);

/* Hands *ev to the emitter, which owns it from then on (*ev is zeroed,
 * also on failure). */
int rl_writer_emit(rl_writer *w, yaml_event_t *ev);

/* Hands events [from, to) of list to the emitter, as they are. */
int rl_writer_copy(rl_writer *w, event_list *list, size_t from, size_t to);

/* Appends a one-line message to w's err and returns -1. */
int rl_writer_fail(rl_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same, located at the document being wrapped: "NAME: document N (line
 * L): ..." from w->name, w->doc_position and w->doc_line. */
int rl_writer_fail_doc(rl_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
