/* Tests for the functions' system call filter (runtime/sandbox_seccomp):
 * the program sandbox_seccomp_build exports is run here, by a classic BPF
 * interpreter as small as the instructions libseccomp emits, over the
 * seccomp_data the kernel would give it. What it answers for each call,
 * and how many instructions an allowed call costs: the kernel runs the
 * filter at every system call a function makes, and once per system call
 * number for each architecture when the child loads it (its cache of
 * always-allowed calls), so a long path is paid at every spawn too. */
#include <criterion/criterion.h>

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "runtime/sandbox_seccomp.h"

/* Runs prog over data; returns its verdict (SECCOMP_RET_*), the
 * instructions it executed in *steps. Fails the test on an instruction it
 * does not know, a jump out of the program or a load out of data. */
static uint32_t run_filter(const struct sock_fprog *prog, const struct seccomp_data *data,
                           unsigned *steps)
{
    uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
    const unsigned char *bytes = (const unsigned char *)data;
    *steps = 0;
    for (unsigned pc = 0; pc < prog->len; pc++) {
        const struct sock_filter *in = &prog->filter[pc];
        ++*steps;
        uint32_t k = in->k;
        switch (in->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            cr_assert((size_t)k + 4 <= sizeof *data && k % 4 == 0, "load at %u", k);
            memcpy(&a, bytes + k, 4);
            break;
        case BPF_LD | BPF_MEM:
            cr_assert(k < BPF_MEMWORDS);
            a = mem[k];
            break;
        case BPF_LDX | BPF_MEM:
            cr_assert(k < BPF_MEMWORDS);
            x = mem[k];
            break;
        case BPF_ST:
            cr_assert(k < BPF_MEMWORDS);
            mem[k] = a;
            break;
        case BPF_STX:
            cr_assert(k < BPF_MEMWORDS);
            mem[k] = x;
            break;
        case BPF_ALU | BPF_AND | BPF_K:
            a &= k;
            break;
        case BPF_MISC | BPF_TAX:
            x = a;
            break;
        case BPF_MISC | BPF_TXA:
            a = x;
            break;
        case BPF_RET | BPF_K:
            return k;
        case BPF_JMP | BPF_JA:
            pc += k;
            break;
        case BPF_JMP | BPF_JEQ | BPF_K:
        case BPF_JMP | BPF_JGT | BPF_K:
        case BPF_JMP | BPF_JGE | BPF_K:
        case BPF_JMP | BPF_JSET | BPF_K: {
            int op = BPF_OP(in->code);
            int taken = op == BPF_JEQ ? a == k : op == BPF_JGT ? a > k : op == BPF_JGE ? a >= k
                                                                                        : (a & k) != 0;
            pc += taken ? in->jt : in->jf;
            break;
        }
        default:
            cr_assert_fail("instruction %#x at %u not known here", in->code, pc);
        }
    }
    cr_assert_fail("the program ran past its end");
    return 0;
}

static struct sock_fprog build(int allow_network)
{
    struct sock_fprog prog = {0};
    buf why = {0};
    cr_assert_eq(sandbox_seccomp_build(allow_network, &prog, &why), 0, "%s",
                 why.data ? why.data : "");
    buf_free(&why);
    return prog;
}

static uint32_t verdict(const struct sock_fprog *prog, int nr, uint64_t arg0, unsigned *steps)
{
    struct seccomp_data data = {.nr = nr, .arch = AUDIT_ARCH_X86_64, .args = {arg0}};
    unsigned ignored;
    return run_filter(prog, &data, steps ? steps : &ignored);
}

#define ERRNO(e) ((uint32_t)SECCOMP_RET_ERRNO | (uint32_t)(e))

Test(sandbox_seccomp, refuses_what_it_names_and_allows_the_rest)
{
#if !defined(__x86_64__)
    cr_skip_test("the expected numbers are x86_64's");
#endif
    struct sock_fprog prog = build(0);
    cr_expect_eq(verdict(&prog, SYS_mount, 0, NULL), (uint32_t)ERRNO(EPERM));
    cr_expect_eq(verdict(&prog, SYS_ptrace, 0, NULL), ERRNO(EPERM));
    cr_expect_eq(verdict(&prog, SYS_unshare, CLONE_NEWUSER, NULL), ERRNO(EPERM));
    cr_expect_eq(verdict(&prog, SYS_bpf, 0, NULL), ERRNO(EPERM));
    cr_expect_eq(verdict(&prog, SYS_fanotify_init, 0, NULL), ERRNO(EPERM));
    cr_expect_eq(verdict(&prog, SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL), ERRNO(EPERM));
    cr_expect_eq(verdict(&prog, SYS_clone, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL),
                 SECCOMP_RET_ALLOW);
    cr_expect_eq(verdict(&prog, SYS_clone3, 0, NULL), ERRNO(ENOSYS));
    cr_expect_eq(verdict(&prog, SYS_socket, AF_INET, NULL), ERRNO(EPERM));
    cr_expect_eq(verdict(&prog, SYS_socket, AF_UNIX, NULL), SECCOMP_RET_ALLOW);
    cr_expect_eq(verdict(&prog, SYS_read, 0, NULL), SECCOMP_RET_ALLOW);
    cr_expect_eq(verdict(&prog, SYS_execve, 0, NULL), SECCOMP_RET_ALLOW);
    struct seccomp_data x86 = {.nr = SYS_read, .arch = AUDIT_ARCH_I386};
    unsigned steps;
    uint32_t other = run_filter(&prog, &x86, &steps) & SECCOMP_RET_ACTION_FULL;
    cr_expect(other == (uint32_t)SECCOMP_RET_KILL_PROCESS || other == SECCOMP_RET_KILL_THREAD,
              "another architecture's calls are not judged: %#x", other);
    free(prog.filter);
    prog = build(1);
    cr_expect_eq(verdict(&prog, SYS_socket, AF_INET, NULL), SECCOMP_RET_ALLOW);
    cr_expect_eq(verdict(&prog, SYS_mount, 0, NULL), (uint32_t)ERRNO(EPERM));
    free(prog.filter);
}

/* A deny list of about fifty calls, compared one by one, costs an allowed
 * call about fifty instructions; as a binary tree, about a dozen. */
Test(sandbox_seccomp, an_allowed_call_runs_a_short_path)
{
#if !defined(__x86_64__)
    cr_skip_test("the numbers are x86_64's");
#endif
    struct sock_fprog prog = build(0);
    unsigned longest = 0, longest_nr = 0, total = 0;
    for (int nr = 0; nr < 512; nr++) {
        unsigned steps;
        (void)verdict(&prog, nr, AF_UNIX, &steps);
        total += steps;
        if (steps > longest) {
            longest = steps;
            longest_nr = (unsigned)nr;
        }
    }
    /* as a list: 52 on average, 82 at most (clone, judged by its flags) */
    cr_expect_leq(total / 512, 20, "a call runs %u instructions on average", total / 512);
    cr_expect_leq(longest, 48, "system call %u runs %u instructions of %u", longest_nr, longest,
                  prog.len);
    unsigned read_steps;
    cr_expect_eq(verdict(&prog, SYS_read, 0, &read_steps), SECCOMP_RET_ALLOW);
    cr_expect_leq(read_steps, 16, "read runs %u instructions", read_steps);
    free(prog.filter);
}
