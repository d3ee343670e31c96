"""Connection timeouts: a peer that never completes the HTTP/2 handshake is
dropped after 10 s; a connection without calls for --idle-timeout gets
GOAWAY and is closed, and clients simply reconnect."""

import socket
import time

from krmtest import simple_rl


def server_fd_count(srv):
    """The server's TCP sockets (the listener and its connections): the pipes
    of a pre-started function, replaced after each answer, come and go at
    their own pace and are not counted."""
    import os
    d = f"/proc/{srv.pid}/fd"
    n = 0
    for fd in os.listdir(d):
        try:
            n += os.readlink(f"{d}/{fd}").startswith("socket:")
        except OSError:
            pass   # closed meanwhile
    return n


def test_idle_connection_gets_goaway_and_client_reconnects(start_server):
    srv = start_server(["cat"], options=["--idle-timeout", "300ms"])
    ch = srv.channel()
    rl = simple_rl()
    assert srv.evaluate(rl, channel=ch).resource_list == rl
    base = server_fd_count(srv)
    deadline = time.time() + 5
    while server_fd_count(srv) >= base and time.time() < deadline:
        time.sleep(0.05)
    assert server_fd_count(srv) == base - 1, "the idle connection was not closed"
    # the same channel reconnects transparently
    assert srv.evaluate(rl, channel=ch).resource_list == rl
    ch.close()


def test_busy_connection_is_not_idle(start_server):
    srv = start_server(["sh", "-c", "sleep 1; cat"], options=["--idle-timeout", "300ms"])
    rl = simple_rl()
    assert srv.evaluate(rl).resource_list == rl   # a 1 s call outlives the 300 ms idle timeout


def test_handshake_timeout_drops_silent_peer(start_server):
    """The server speaks only once the first bytes say which protocol (HTTP/2
    or HTTP/1.1 for probes), so a silent peer hears nothing, then EOF."""
    srv = start_server(["cat"])
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.settimeout(15)
    start = time.time()
    received = b""
    while True:
        data = s.recv(4096)       # EOF when the handshake timer fires
        if not data:
            break
        received += data
    elapsed = time.time() - start
    s.close()
    assert received == b"", received[:100]
    assert 9 <= elapsed <= 13, elapsed
    rl = simple_rl()
    assert srv.evaluate(rl).resource_list == rl
