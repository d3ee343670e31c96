/* proc_signals: a server process's signals, routed through a signalfd into
 * the event loop, as tini does for a container's PID 1.
 *
 * As PID 1 the kernel drops every signal the process has no handler for;
 * anywhere else a signal's default action applies, and for most that is
 * death. The server must behave the same in both places, so no signal whose
 * default is to terminate is left at its default, except the faults a
 * program cannot survive:
 *
 *   SIGCHLD                 reap every exited child (fn_job_reap), orphans
 *                           included
 *   SIGTERM, SIGINT,        drain the server (a second one stops it at
 *   SIGQUIT                 once). SIGQUIT drains too, as nginx's graceful
 *                           quit: Go's default (dump goroutines, exit 2) has
 *                           nothing to dump here, and dying would drop the
 *                           calls in flight
 *   SIGHUP                  the on_hup callback (runner-client serve reloads
 *                           its FunctionConfigs); without one (wrapper-server
 *                           has nothing to reload) logged and ignored
 *   SIGUSR1, SIGUSR2,       logged and ignored: the first of each kind at
 *   SIGALRM, SIGIO/SIGPOLL, level 2, later ones at 3 (a function may send
 *   SIGPWR, SIGSTKFLT,      them in a loop). SIGXCPU/SIGXFSZ: the CPU or
 *   SIGXCPU, SIGXFSZ,       file-size limit was passed; the write that
 *   SIGRTMIN..SIGRTMAX      passed it fails with EFBIG and says so
 *   SIGPIPE                 ignored: a peer closing its end is EPIPE
 *   SIGPROF, SIGVTALRM      ignored, not blocked, so a profiler that sets
 *                           its own handler still gets its ticks
 *   SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS, SIGTRAP: default (a
 *   crash must stay a crash, with its core and its sanitizer report)
 *
 * The routed signals are blocked so they queue on the signalfd. The real-
 * time range is SIGRTMIN..SIGRTMAX as the C library reports it at run time:
 * glibc (32-33) and musl (32-34) keep the signals below SIGRTMIN for their
 * threads and timers, and those are left alone.
 *
 * Functions get none of this: fn_job spawns them with every signal at its
 * default disposition and an empty mask (POSIX_SPAWN_SETSIGDEF with a full
 * set, POSIX_SPAWN_SETSIGMASK with an empty one). Both matter: an ignored
 * signal stays ignored across exec, and so does a blocked one. */
#ifndef KRM_PROC_SIGNALS_H
#define KRM_PROC_SIGNALS_H

#include "core/loop.h"
#include "grpc/rpc_server.h"

typedef struct proc_signals proc_signals;
typedef void proc_hup_fn(void *ctx);

/* Returns NULL after logging why (errno in the message). */
proc_signals *proc_signals_open(loop *l, server *srv, proc_hup_fn *on_hup, void *ctx);
void proc_signals_close(proc_signals *ps);

#endif
