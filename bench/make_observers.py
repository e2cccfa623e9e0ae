#!/usr/bin/env python3
"""Creates N observers on a running observable-server and writes their ids,
one a line, to a file: `make_observers.py PORT N FILE`. Pipelined over one
keep-alive connection, 200 requests at a time."""
import json
import re
import socket
import sys


def main():
    port, count, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    sock = socket.create_connection(("127.0.0.1", port))
    body = b'{"ttlSeconds":3600}'
    request = b"POST /observers HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    ids, buffer = [], b""
    while len(ids) < count:
        batch = min(200, count - len(ids))
        sock.sendall(request * batch)
        got = 0
        while got < batch:
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise SystemExit("the server closed the connection")
            buffer += chunk
            while (end := buffer.find(b"\r\n\r\n")) >= 0:
                length = int(re.search(rb"(?i)content-length: *(\d+)", buffer[:end]).group(1))
                if len(buffer) < end + 4 + length:
                    break
                ids.append(json.loads(buffer[end + 4:end + 4 + length])["id"])
                got += 1
                buffer = buffer[end + 4 + length:]
    with open(out, "w") as f:
        f.write("\n".join(ids) + "\n")


if __name__ == "__main__":
    main()
