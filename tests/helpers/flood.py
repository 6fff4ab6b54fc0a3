# SPDX-License-Identifier: BSD-3-Clause
"""A frame flooder for tests/test_hostile.py: sends the frames of a JSON file
({"category": ["hex frame", ...], ...}) round-robin out of one interface
through a raw AF_PACKET socket, as fast as it can, for at most SECONDS and at
most COUNT frames; prints {"category": frames sent, ...} as JSON.

    flood.py FRAMES.json IFACE SECONDS COUNT
"""
import json
import socket
import sys
import time


def main():
    path, iface, seconds, count = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    with open(path) as f:
        cats = json.load(f)
    lists = [(c, [bytes.fromhex(h) for h in v]) for c, v in cats.items()]
    order = []      # the categories interleaved: frame i of each in turn
    for i in range(max(len(v) for _, v in lists)):
        order += [(c, v[i]) for c, v in lists if i < len(v)]
    sent = {c: 0 for c in cats}
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
    end = time.monotonic() + seconds
    n = 0
    while n < count and time.monotonic() < end:
        for cat, frame in order:
            try:
                s.send(frame)
            except OSError:         # ENOBUFS: not sent, not counted
                continue
            sent[cat] += 1
        n += len(order)
    json.dump(sent, sys.stdout)


if __name__ == "__main__":
    main()
