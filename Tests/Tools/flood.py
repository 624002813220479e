#!/usr/bin/env python3
"""A hostile client for the load tests: opens COUNT connections to 127.0.0.1:PORT from the
loopback addresses 127.0.BASE+i.j (ADDRESSES of them, round robin), sends REQUEST on each,
then watches the answers for HOLD seconds, keeping every connection the server keeps open.
Prints one JSON line: how many were opened, answered (by status), closed by the server, and
still open. Run in a process of its own: each process has its own limit of open files."""
import json
import selectors
import socket
import sys
import time


def main():
    port, count, addresses, base, hold = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    request = sys.stdin.read().encode()
    selector = selectors.DefaultSelector()
    opened = failed = 0
    statuses = {}
    closed = 0
    buffers = {}
    for i in range(count):
        source = f"127.0.{base + i % addresses}.{1 + (i // addresses) % 250}"
        s = socket.socket()
        try:
            s.bind((source, 0))
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
        except OSError:
            failed += 1
            s.close()
            continue
        opened += 1
        selector.register(s, selectors.EVENT_WRITE)
        buffers[s] = b""
        if i % 500 == 499:
            drain(selector, buffers, statuses, request, 0.005)
    deadline = time.time() + hold
    while time.time() < deadline:
        closed += drain(selector, buffers, statuses, request, 0.05)
    still = len(selector.get_map())
    print(json.dumps({"opened": opened, "failed": failed, "statuses": statuses, "closedByServer": closed, "open": still}))
    sys.stdout.flush()


def drain(selector, buffers, statuses, request, timeout):
    closed = 0
    for key, events in selector.select(timeout):
        s = key.fileobj
        if events & selectors.EVENT_WRITE:
            try:
                s.send(request)
            except OSError:
                selector.unregister(s); s.close(); closed += 1
                continue
            selector.modify(s, selectors.EVENT_READ)
            continue
        try:
            data = s.recv(65536)
        except OSError:
            data = b""
        if not data:
            selector.unregister(s); s.close(); closed += 1
            continue
        if not buffers[s]:
            status = data.split(b" ", 2)[1].decode(errors="replace") if data.startswith(b"HTTP/") else "?"
            statuses[status] = statuses.get(status, 0) + 1
        buffers[s] += data[:64]
    return closed


if __name__ == "__main__":
    main()
