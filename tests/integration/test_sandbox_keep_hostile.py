"""serve --sandbox-keep under attack: a function called twice on the same
kept host, the first call planting something, the second (or what the first
left running) looking for it (docs/sandbox.md, "A sandbox kept per
function"). The function's shell script (test_sandbox_keep.SEES) reports on
stderr; `extra` is the attack, run in each call. The host resets after each
call: the second call must see nothing of the first, on the same host when
the reset could undo what the first did, on a new one when it could not."""
import os
import re
import signal
import time

from test_sandbox_keep import call, hosts, serve
from test_sandbox_spawner import wait_for


def two_calls(srv):
    """Both calls' reports, and whether the second ran on the first's host:
    only one host was made (the log says each at verbosity 3; the PID
    namespace's inode number would not tell, the kernel reuses it)."""
    first = call(srv)
    # the reset after the first call is done, or failed (the host ended)
    assert wait_for(lambda: " ended: " in srv.stderr() or
                    any(not any(n.startswith("left-by") for n in tmp_of(host))
                        for host in hosts(srv)))
    time.sleep(0.1)
    second = call(srv)
    made = re.findall(r"sandbox keep: host \d+ made", srv.stderr())
    assert made, srv.stderr()
    return first, second, len(made) == 1


def tmp_of(host):
    try:
        return os.listdir(f"/proc/{host}/root/tmp")
    except OSError:
        return []


# The host's attributes a process of the same uid may set (PID 1: the
# host), read back with system calls, not /proc (hidden: below). The first
# call sets each to a value of its own; the second must read the host's.
HOST_ATTRS = r"""
echo "rttime=$(prlimit --pid 1 --rttime --noheadings -o SOFT 2>&1)" >&2
echo "msgq=$(prlimit --pid 1 --msgqueue --noheadings -o SOFT,HARD 2>&1 | tr -s ' ')" >&2
echo "affinity=$(taskset -p 1 2>&1 | sed 's/.*: //')" >&2
echo "ioprio=$(ionice -p 1 2>&1)" >&2
prlimit --pid 1 --rttime=4242: --msgqueue=777:777 >&2
taskset -p 1 1 >/dev/null
ionice -c 3 -p 1 >&2
"""


def test_what_a_call_sets_on_its_host_is_set_back(start_server, tmp_path):
    """Resource limits (a soft one raised back, a hard one lowered: that
    cannot be undone, the host is ended), CPU affinity and I/O priority
    of PID 1 set by the first call: the second reads the host's own."""
    srv = serve(start_server, tmp_path, "--sandbox-keep", extra=HOST_ATTRS)
    first, second, same_host = two_calls(srv)
    for key in ("rttime", "msgq", "affinity", "ioprio"):
        assert second[key] == first[key], (key, first, second)
    assert "4242" not in second["rttime"] and "777" not in second["msgq"], second
    assert not same_host, (first, second)   # the lowered hard limit could not be raised again
    assert "its reset failed at set its resource limits back: Operation not permitted" \
        in srv.stderr(), srv.stderr()


def test_a_soft_limit_affinity_and_io_priority_are_set_back_on_the_same_host(
        start_server, tmp_path):
    extra = HOST_ATTRS.replace(" --msgqueue=777:777", "")
    srv = serve(start_server, tmp_path, "--sandbox-keep", extra=extra)
    first, second, same_host = two_calls(srv)
    assert same_host, srv.stderr()
    for key in ("rttime", "affinity", "ioprio"):
        assert second[key] == first[key], (key, first, second)
    assert "4242" not in second["rttime"], second


def test_a_call_that_renices_its_host_ends_it(start_server, tmp_path):
    """A nice value raised on the host cannot be lowered again (no
    capability outside the namespaces): the reset fails, the next call
    gets a new host, at the nice value every call starts with."""
    extra = ('echo "nice=$(ps -o ni= -p 1 | tr -d " ")" >&2; '
             'echo "prio=$(python3 -c "import os; print(os.getpriority(os.PRIO_PROCESS, 1))")" >&2; '
             "renice -n 7 -p 1 >/dev/null")
    srv = serve(start_server, tmp_path, "--sandbox-keep", extra=extra)
    first, second, same_host = two_calls(srv)
    assert first["prio"] == second["prio"] == "0", (first, second)
    assert not same_host
    assert "its reset failed at set its scheduling back: Operation not permitted" \
        in srv.stderr(), srv.stderr()


def test_the_next_calls_pids_do_not_count_the_last_ones_processes(start_server, tmp_path):
    """The host's pid counter is set back: the first call's 50 processes
    do not show in the second call's pid (which is 2, as on a new host,
    or the next free one while serve has yet to reap the first)."""
    extra = "i=0; while [ $i -lt 50 ]; do /bin/true; i=$((i+1)); done"
    srv = serve(start_server, tmp_path, "--sandbox-keep", extra=extra)
    first, second, same_host = two_calls(srv)
    assert same_host, srv.stderr()
    assert first["pid"] == "2", first
    assert int(second["pid"]) <= 3, second


def test_a_call_sees_no_process_but_its_own(start_server, tmp_path):
    """/proc shows a call its own processes only (hidepid): not the host,
    PID 1, whose counters (CPU time, context switches, children reaped) an
    earlier call could have set for a later one to read."""
    extra = ('echo "procs=$(cd /proc && ls -d [0-9]* | sort -n | tr "\\n" " ")" >&2; '
             'echo "host=$(cat /proc/1/stat 2>&1 | cut -c1-40)" >&2')
    srv = serve(start_server, tmp_path, "--sandbox-keep", extra=extra)
    first, second, same_host = two_calls(srv)
    assert same_host, srv.stderr()
    for seen in (first, second):
        assert "1" not in seen["procs"].split(), seen
        assert seen["host"] == "cat: /proc/1/stat: Operation not permitt", seen
        assert seen["pid"] in seen["procs"].split(), seen


def skeleton_top(tmp_path):
    """The directory beneath /tmp that leads to --functions (a test's
    tmp_path is beneath /tmp): made in the host's /tmp for the bind."""
    return "/tmp/" + tmp_path.parts[2]


# What the first call sets on the directories a new /tmp has again (/tmp
# and the skeleton's top): mode, modification time, an extended attribute,
# an inode flag (nodump); each call reports them first.
TMP_METADATA = r"""
for d in /tmp {top}; do
  echo "stat$d=$(stat -c '%a' $d)" >&2
  echo "mtime$d=$(stat -c '%Y' $d)" >&2
  echo "xattrs$d=$(python3 -c "import os,sys; print(os.listxattr(sys.argv[1]))" $d)" >&2
  echo "flags$d=$(lsattr -d $d 2>&1 | cut -d' ' -f1)" >&2
  chmod 713 $d && touch -d '2001-02-03 04:05:06' $d || echo "failed to plant" >&2
  python3 -c "import os,sys; os.setxattr(sys.argv[1], 'user.secret', b'42')" $d
  chattr +d $d
done
"""


def test_a_new_tmp_has_none_of_the_last_ones_metadata(start_server, tmp_path):
    top = skeleton_top(tmp_path)
    srv = serve(start_server, tmp_path, "--sandbox-keep", extra=TMP_METADATA.format(top=top))
    first, second, same_host = two_calls(srv)
    assert same_host, srv.stderr()
    for key in ("stat/tmp", f"stat{top}", "xattrs/tmp", f"xattrs{top}", "flags/tmp",
                f"flags{top}"):
        assert second[key] == first[key], (key, first, second)
    assert first["stat/tmp"] == "1777" and first["xattrs/tmp"] == "[]", first
    assert "981173106" not in (second["mtime/tmp"], second[f"mtime{top}"]), second
    assert "failed to plant" not in first and "d" not in first["flags/tmp"], first


def test_a_kept_directory_renamed_is_back_in_place(start_server, tmp_path):
    """The directories leading to what is bound into /tmp are the host's:
    one renamed (its name is data the next call would read, and what is
    bound beneath it would be out of place) is made again where it was, in
    a new /tmp, with what is bound beneath it, on the same host (and still
    read-only: --functions)."""
    top = skeleton_top(tmp_path)
    extra = (f'echo "functions=$(ls {tmp_path}/functions 2>&1)" >&2; '
             f"touch {tmp_path}/functions/planted-by-$$ 2>/dev/null; "
             f"mv {top} /tmp/renamed-by-$$")
    srv = serve(start_server, tmp_path, "--sandbox-keep", extra=extra)
    first, second, same_host = two_calls(srv)
    assert same_host, srv.stderr()
    assert second["tmp"] == first["tmp"] == f"[{tmp_path.parts[2]} ]", (first, second)
    assert second["functions"] == first["functions"] == "fn", (first, second)
    assert sorted(os.listdir(tmp_path / "functions")) == ["fn"]


# Files the reset must remove however they were left: names a shell or a
# path would take for something else, entries in directories without any
# permission bits, a read-only file, a FIFO, a unix socket, a hard link,
# links to outside, a file planted inside a kept directory, a file held
# open and locked by a process left running.
HOSTILE_FILES = r"""
echo "left=$(find /tmp -mindepth 1 -not -path '{top}*' 2>&1 | wc -l) \
$(find {top} -maxdepth 1 -name 'planted-by-*' | wc -l)" >&2
cd /tmp || exit 1
touch -- "$(printf 'new\nline')" -rf '*' '.hidden' "$(head -c 255 /dev/zero | tr '\0' x)" \
  "$(printf '\377\376')" ' ' '..  ' || echo "failed to plant" >&2
mkdir -p locked/inner && touch locked/inner/f && chmod 0 locked/inner/f locked/inner locked
touch ro && chmod 0 ro && ln ro hardlink && ln -s / root-link && ln -s {top} top-link
mkfifo fifo && python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("/tmp/sock")'
touch {top}/planted-by-$$
(setsid flock /tmp/.lock sleep 4242 &)
echo "planted=$(ls -A /tmp | wc -l)" >&2
"""


def test_the_next_calls_inode_numbers_do_not_count_the_last_ones_files(start_server, tmp_path):
    """Each reset gives the host a new /tmp: a file the second call makes
    there has the number the first call's first file had, not one after
    the 50 files the first call made (a tmpfs numbers its files in order,
    and emptying it did not start the count again)."""
    extra = ('touch /tmp/first-file; echo "inode=$(stat -c %i /tmp/first-file)" >&2; '
             "i=0; while [ $i -lt 50 ]; do touch /tmp/f$i; i=$((i+1)); done")
    srv = serve(start_server, tmp_path, "--sandbox-keep", extra=extra)
    first, second, same_host = two_calls(srv)
    assert same_host, srv.stderr()
    assert second["inode"] == first["inode"], (first, second)


def test_files_left_in_any_form_are_removed(start_server, tmp_path):
    top = skeleton_top(tmp_path)
    srv = serve(start_server, tmp_path, "--sandbox-keep", extra=HOSTILE_FILES.format(top=top))
    first, second, same_host = two_calls(srv)
    assert same_host, srv.stderr()
    assert "failed to plant" not in first and int(first["planted"]) >= 17, first
    assert second["left"] == first["left"] == "0 0", (first, second)
    assert second["tmp"] == first["tmp"], (first, second)


def in_namespace(host):
    """The processes of host's PID namespace but the host, seen from here."""
    ns = os.readlink(f"/proc/{host}/ns/pid")
    found = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and int(p) != host and os.readlink(f"/proc/{p}/ns/pid") == ns:
                found.append((int(p), open(f"/proc/{p}/comm").read().strip()))
        except OSError:
            pass   # gone meanwhile
    return found


# A process blocked in vfork (its child paused before any exec): the
# parent waits in the kernel for a child that never execs.
VFORK_C = r"""
#include <unistd.h>
int main(void) { if (vfork() == 0) { pause(); _exit(0); } return 0; }
"""

# Processes meant to outlive the call: shells forking as fast as they can
# while the reset kills (setsid'd, so the call's group kill misses them), a
# stopped one, one blocked in vfork, a subreaper with a child of its own
# and one that ignores every signal it can.
SURVIVORS = r"""
for i in 1 2 3 4; do (setsid sh -c 'while :; do sh -c "sleep 4242 &"; done' &) ; done
(setsid sleep 4243 & echo $! > /tmp/stopped; kill -STOP $(cat /tmp/stopped)) 2>/dev/null
(setsid {vfork} &)
(setsid python3 -c 'import ctypes, os, time
ctypes.CDLL(None).prctl(36, 1)   # PR_SET_CHILD_SUBREAPER
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(4244)
    os._exit(0)
time.sleep(4244)' &)
(setsid sh -c 'trap "" HUP INT QUIT TERM USR1 USR2; sleep 4245' &)
sleep 0.3
echo "running=$(cat /proc/[0-9]*/comm 2>/dev/null | sort -u | tr '\n' ' ')" >&2
"""


def test_no_process_of_a_call_outlives_its_reset(start_server, tmp_path):
    """kill(-1, SIGKILL) from the host, PID 1, reaches every other process
    of its namespace, forks under way included (the kernel gives a signal
    sent to every process to the children being forked), stopped ones,
    one blocked in vfork, orphans of a subreaper; the reset reaps them all
    before the next call."""
    import subprocess
    functions = tmp_path / "functions"
    functions.mkdir()
    src = tmp_path / "vfork.c"
    src.write_text(VFORK_C)
    subprocess.run(["cc", "-o", str(functions / "vfork"), str(src)], check=True)
    extra = SURVIVORS.format(vfork=functions / "vfork")
    srv = serve(start_server, tmp_path, "--sandbox-keep", extra=extra)
    first = call(srv)
    assert {"sh", "sleep", "vfork", "python3"} <= set(first["running"].split()), first
    [host] = hosts(srv)
    assert wait_for(lambda: in_namespace(host) == []), in_namespace(host)
    second = call(srv)
    assert second["ns"] == first["ns"], srv.stderr()
    assert wait_for(lambda: in_namespace(host) == []), in_namespace(host)
    assert " ended: " not in srv.stderr(), srv.stderr()


def test_every_signal_to_the_host_is_refused(start_server, tmp_path):
    """PID 1 is outside the call's Landlock domain (ABI 6: no signal out of
    it): no signal reaches the host, SIGSTOP and SIGKILL included, and it
    resets for the next call as ever."""
    extra = ('n=0; for s in $(seq 1 64); do kill -s $s 1 2>/dev/null || n=$((n+1)); done; '
             'echo "refused=$n" >&2')
    srv = serve(start_server, tmp_path, "--sandbox-keep", extra=extra)
    first, second, same_host = two_calls(srv)
    assert first["refused"] == second["refused"] == "64", (first, second)
    assert same_host, srv.stderr()
    [host] = hosts(srv)
    assert open(f"/proc/{host}/stat").read().split(") ")[1][0] != "T"   # not stopped


ABSTRACT = r"""
python3 -c 'import os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
try:
    s.bind(b"\0krm-keep-hostile")
    print("abstract=bound", file=sys.stderr)
except OSError as e:
    print("abstract=%s" % e.strerror, file=sys.stderr)
    sys.exit(0)
s.listen(1)
if os.fork() == 0:
    os.setsid()
    time.sleep(4242)   # holds the name past the call
'
"""


def test_an_abstract_socket_name_does_not_outlive_its_call(start_server, tmp_path):
    """Kept calls share the network namespace, so its abstract socket names:
    a name the first call bound, held by a process it left, is free again
    for the second (that process is killed by the reset)."""
    srv = serve(start_server, tmp_path, "--sandbox-keep", extra=ABSTRACT)
    first, second, same_host = two_calls(srv)
    assert same_host, srv.stderr()
    assert first["abstract"] == second["abstract"] == "bound", (first, second)


def test_a_call_holds_no_descriptor_but_its_own(start_server, tmp_path):
    """Nothing of the spawner's or the host's reaches a call by descriptor
    number: its standard pipes, the script's own file (the shell reads it
    through /proc/self/fd) and what ls opens to list them."""
    extra = 'echo "fds=$(ls -l /proc/self/fd/ | tail -n +2 | sed "s/.*-> //" | tr "\\n" " ")" >&2'
    srv = serve(start_server, tmp_path, "--sandbox-keep", extra=extra)
    first, second, same_host = two_calls(srv)
    assert same_host, srv.stderr()
    for seen in (first, second):
        fds = seen["fds"].split()
        assert len(fds) <= 6, seen
        assert all(f.startswith(("pipe:", "/proc/", str(tmp_path))) for f in fds), seen


def test_nothing_is_written_outside_tmp(start_server, tmp_path):
    """The places a function could write on a host without its namespaces
    (and that a kept host does not empty): refused, in every call; with
    --sandbox off the same writes reach the machine."""
    import uuid
    name = f"krm-keep-hostile-{uuid.uuid4().hex}"
    places = ["/dev/shm", "/var/tmp", "/run", "/", "/etc", "/usr/local"]
    extra = ("n=0; for d in " + " ".join(places) + f"; do "
             f"echo x > $d/{name} 2>/dev/null && n=$((n+1)); done; echo \"written=$n\" >&2")
    try:
        srv = serve(start_server, tmp_path, "--sandbox-keep", extra=extra)
        first, second, same_host = two_calls(srv)
        assert first["written"] == second["written"] == "0", (first, second)
        assert not any(os.path.exists(f"{d}/{name}") for d in places)
        off = serve(start_server, tmp_path, "--sandbox", "off", extra=extra)
        assert call(off)["written"] == str(len(places))
    finally:
        for d in places:
            try:
                os.unlink(f"{d}/{name}")
            except OSError:
                pass


def test_the_next_calls_ipc_ids_do_not_count_the_last_ones_objects(start_server, tmp_path):
    """Each reset gives the host a new IPC namespace: the first call's five
    System V message queues are gone, and the second call's first queue has
    the id the first call's first had (removed one by one, the kernel would
    number it after them)."""
    extra = ('echo "first-id=$(ipcmk -Q | tr -dc 0-9)" >&2; '
             "for i in 1 2 3 4; do ipcmk -Q >/dev/null; done; "
             'echo "queues=$(tail -n +2 /proc/sysvipc/msg | wc -l)" >&2')
    srv = serve(start_server, tmp_path, "--sandbox-keep", extra=extra)
    first, second, same_host = two_calls(srv)
    assert same_host, srv.stderr()
    assert first["queues"] == second["queues"] == "5", (first, second)
    assert second["first-id"] == first["first-id"], (first, second)




def test_signals_left_for_the_host_do_not_wait_for_the_next_call(start_server, tmp_path):
    """Without Landlock nothing refuses a call the kill of PID 1. Signals
    the host blocked stayed pending on it, one bit each, real-time ones
    queued with a value and counted against the pending signals of the uid
    the next call runs as: a call could leave some for the next. The host
    ignores them: none is pending on it (seen from here: the host's
    /proc/PID/status is not the call's to read, it is not dumpable), and it
    is not stopped."""
    from test_sandbox_spawner import NO_CLOSE_RANGE
    from test_sandbox_keep import SEES, config
    wrapper = tmp_path / "no_landlock.py"
    wrapper.write_text(NO_CLOSE_RANGE.replace("436", "444"))
    functions = tmp_path / "functions"
    functions.mkdir()
    extra = ('n=0; for s in $(seq 1 64); do kill -s $s 1 2>/dev/null && n=$((n+1)); done; '
             'echo "sent=$n" >&2; '
             "python3 -c 'import signal; [signal.sigqueue(1, signal.SIGRTMIN + 3, 42) "
             "for _ in range(5)]' 2>/dev/null")
    (functions / "fn").write_text(SEES.format(extra=extra))
    (functions / "fn").chmod(0o755)
    cfg = config(tmp_path, ["fn"])
    from krmtest import CLIENT_BIN
    srv = start_server([], binary=CLIENT_BIN, wrapper=["/usr/bin/python3", str(wrapper)], argv=[
        "serve", "--port", "{port}", "--function-config", str(cfg), "--functions",
        str(functions), "--disable-runtimes=pod", "--sandbox", "auto", "--prespawn", "0",
        "--sandbox-keep", "--verbosity", "3"])
    assert wait_for(lambda: "unavailable: landlock" in srv.stderr()), srv.stderr()
    first, second, same_host = two_calls(srv)
    assert same_host, srv.stderr()
    assert int(first["sent"]) >= 60, first
    [host] = hosts(srv)

    def pending():
        """The signals pending on the host but SIGCHLD (which it reads from
        its signalfd as soon as it runs) and how many are queued."""
        fields = dict(line.split(":\t", 1) for line in
                      open(f"/proc/{host}/status").read().splitlines() if ":\t" in line)
        chld = 1 << (signal.SIGCHLD - 1)
        return (int(fields["ShdPnd"], 16) & ~chld, int(fields["SigPnd"], 16) & ~chld,
                int(fields["SigQ"].split("/")[0]) > 1)

    assert wait_for(lambda: pending() == (0, 0, False)), open(f"/proc/{host}/status").read()
    assert open(f"/proc/{host}/stat").read().split(") ")[1][0] != "T"
