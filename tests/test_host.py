# SPDX-License-Identifier: BSD-3-Clause
"""Issue 17, requirement 1: the host exception path (doc/host-path.md).

The split lab (lab.py, split=True): each gateway in a namespace of its own,
which is that box's Linux host, with dpvpnd beside its dataplane:

    host A ==== [inside  gw A  outside] ==== [outside  gw B  inside] ==== host B
    198.18.1.2   dpvpn-in      dpvpn-out       dpvpn-out                  198.18.2.2
                 198.18.1.1    198.19.0.1      198.19.0.2
                 (netns ns_gw: A's Linux host)  (netns ns_gwb: B's Linux host)

dpvpn-in / dpvpn-out are the ports' twins (host-interface =, net_tap):
what is addressed to a port's address and not ESP, IKE or ARP / ND goes to
its twin; what the host sends through the twin leaves by the port.

- TCP from B's host to a stdlib echo server on A's host (198.19.0.1), while
  ESP flows host A -> host B: every line echoed; host_in / host_out count.
- ping from B's host to A's outside address, and from host A to A's inside
  address: the kernel answers (the dataplane's icmp_echo stays put).
- cleartext from the tunnel for A's inside address never reaches dpvpn-in:
  counted to-self, nothing at a socket on A's host.
- (slow) a UDP flood at 198.19.0.1 stays within --host-rate, the rest
  host-limit, and a trickle to TCP 179 (control class) all arrives.
"""
import json
import os
import socket
import sys
import time

import pytest
from scapy.all import ICMP, IP, UDP, Ether, rdpcap

import lab

pytestmark = pytest.mark.deploy

OUT_A, OUT_B, IN_A = "198.19.0.1", "198.19.0.2", "198.18.1.1"
HOST_RATE = 5000                # A's --host-rate (a second, one worker): the echo's
                                # lock-step exchange makes ~2000 a second
HOST_DEPTH = 64                 # dataplane/host.h: the bucket's depth (10 ms of 5000)
ECHO_PORT = 7777

# A line-echo server (stdlib): python3 -c ECHO ADDR PORT; prints "ready".
ECHO = """
import socketserver, sys
class H(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            self.wfile.write(line)
class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
s = S((sys.argv[1], int(sys.argv[2])), H)
print("ready", flush=True)
s.serve_forever()
"""

# Send N lines to ADDR:PORT and read them back: prints how many came back.
CLIENT = """
import socket, sys
addr, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection((addr, port), timeout=10)
f = s.makefile("rwb")
good = 0
for i in range(n):
    line = b"line %d of the host path\\n" % i
    f.write(line)
    f.flush()
    good += f.readline() == line
print(good, flush=True)
"""

# Count UDP datagrams at ADDR:PORT for SECONDS: prints the count.
UDP_COUNT = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
s.settimeout(0.2)
print("ready", flush=True)
n, end = 0, time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    try:
        s.recv(2048)
        n += 1
    except socket.timeout:
        pass
print("got", n, flush=True)
"""


@pytest.fixture(scope="module")
def net():
    twin_a = ("role = outside\naddress = 198.19.0.1/24\n",
              "role = outside\naddress = 198.19.0.1/24\nhost-interface = dpvpn-out\n")
    twin_a_in = ("role = inside\naddress = 198.18.1.1/24\n",
                 "role = inside\naddress = 198.18.1.1/24\nhost-interface = dpvpn-in\n")
    twin_b = ("role = outside\naddress = 198.19.0.2/24\n",
              "role = outside\naddress = 198.19.0.2/24\nhost-interface = dpvpn-out\n")
    with lab.Lab(split=True, replace_a=(twin_a, twin_a_in), replace_b=(twin_b,),
                 dp_args_a=("--host-rate", str(HOST_RATE))) as n:
        yield n


def counters(gw):
    return gw.ctl("show", "counters")


def server(net, name, ns, script, *args):
    p = net.bg(name, ns, sys.executable, "-c", script, *map(str, args))
    lab.wait_for(lambda: "ready" in p.output() or not p.alive(), 10, name)
    assert p.alive(), p.output()
    return p


def test_twins_exist(net):
    """dpvpnd gave each twin the port's MAC, address, and link up."""
    ports = {p["id"]: p for p in net.a.ctl("show", "ports")["ports"]}
    link = net.ns(net.ns_gw, "ip", "-j", "addr", "show", "dpvpn-out").stdout
    info = json.loads(link)[0]
    assert info["address"] == ports[1]["mac"].lower()
    assert "UP" in info["flags"]
    assert [a["local"] for a in info["addr_info"] if a["family"] == "inet"] == [OUT_A]
    link_b = json.loads(net.ns(net.ns_gwb, "ip", "-j", "addr", "show", "dpvpn-out").stdout)[0]
    assert [a["local"] for a in link_b["addr_info"] if a["family"] == "inet"] == [OUT_B]
