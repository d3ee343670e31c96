/* sandbox_seccomp: the system calls a sandboxed function may not make, as a
 * seccomp-bpf program built once at start with libseccomp (which knows
 * every architecture's numbers) and loaded in each function's child.
 *
 * Refused with EPERM: sockets of any family but AF_UNIX (unless the network
 * is allowed), ptrace, process_vm_*, mount and friends, unshare, setns and
 * clone with a new namespace (clone3, whose flags sit in memory a filter
 * cannot read, answers ENOSYS so the C library falls back to clone), bpf,
 * keyctl, perf_event_open, userfaultfd, io_uring (its requests bypass the
 * filter), kexec, modules, swap, reboot and setting the clocks. A deny list
 * on an allow-all default: functions are ordinary programs (Go, Python,
 * shell), and an allow list would break them a version at a time. The
 * filter is for our own architecture only: a process of another (a 32-bit
 * x86 binary, whose sockets go through socketcall, which a filter cannot
 * judge) is killed at its first system call. The calls are looked up in a
 * binary tree, not compared one by one: the kernel runs the filter at
 * every call a function makes, and for every call number when the child
 * loads it. */
#ifndef KRM_SANDBOX_SECCOMP_H
#define KRM_SANDBOX_SECCOMP_H

#include <linux/filter.h>

#include "core/buf.h"

/* Builds the program into *prog (prog->filter malloc'd; free it). Returns
 * 0, or -1 with why. */
int sandbox_seccomp_build(int allow_network, struct sock_fprog *prog, buf *why);

/* In the child: loads prog (no_new_privs must be set). 0 or an errno. */
int sandbox_seccomp_apply(const struct sock_fprog *prog);

#endif
