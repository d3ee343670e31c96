/* fd_pass: one message with descriptors (SCM_RIGHTS) over a Unix socket,
 * sent or received whole: the sandbox spawner's requests (a function's
 * stdio and binary) and a kept sandbox's host's answers (its namespaces)
 * go through here, so the receiving rules live once: every descriptor that
 * arrives is either handed back or closed, a message or a set of
 * descriptors larger than the receiver allows is an error (never a
 * message cut short), and what arrives closes on exec. */
#ifndef KRM_FD_PASS_H
#define KRM_FD_PASS_H

#include <stddef.h>
#include <sys/types.h>

#include "core/buf.h"

/* The most descriptors one message carries either way. */
#define FD_PASS_MAX 8

/* Sends len bytes of data and n_fds descriptors (at most FD_PASS_MAX) as
 * one message; flags as sendmsg's (MSG_NOSIGNAL is always added). 0 once
 * all of it is sent, or -1 with errno: EINVAL for over FD_PASS_MAX
 * descriptors, EMSGSIZE for a short send, else sendmsg's (EINTR is
 * retried). */
int fd_pass_send(int sock, const void *data, size_t len, const int *fds, size_t n_fds, int flags);

/* Receives one message into data (room bytes) and at most max_fds of its
 * descriptors (max_fds at most FD_PASS_MAX) into fds, *n_fds of them, all
 * close-on-exec; flags as recvmsg's (MSG_CMSG_CLOEXEC is always added).
 * *got is the message's length (0: the peer closed its end). Returns 0, or
 * -1 with no descriptor kept, errno and err saying why: EMSGSIZE when the
 * message was longer than room (the first room bytes are in data and *got
 * says so: the caller can still answer the request they name), when
 * descriptors were cut short or more than max_fds came; else recvmsg's
 * (EINTR and EAGAIN included: the caller's to retry or wait on). */
int fd_pass_recv(int sock, void *data, size_t room, size_t *got, int *fds, size_t max_fds,
                 size_t *n_fds, int flags, buf *err);

#endif
