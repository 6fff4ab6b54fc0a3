# SPDX-License-Identifier: BSD-3-Clause
"""Issue 13, one of each: a second dpvpnd or dataplane started by mistake
refuses before it touches anything, a dataplane whose device failed says
which, and drift made behind dpvpnd's back is repaired by reload and by
tunnel up, each answer naming the tunnels.

    host A eth0 ==veth== gwa-in [gw A] gwa-out ==veth== gwb-out [gw B] gwb-in ==veth== host B
      198.18.1.2                          2001:db8:19::1/::2                     198.18.2.2
      2001:db8:18:1::2      tunnels to-b (IPv4 4o6) and to-b6 (IPv6 6o6)   2001:db8:18:2::2

The dual-stack lab (configs/lab6-*.conf): two tunnels, each with its own
traffic, so that a tunnel left out shows.  The dataplanes started here
besides the lab's drive net_null ports (or a device that does not exist)
in the root namespace: they touch none of the lab's links.
"""
import json
import os
import re
import signal
import socket
import struct
import time

import pytest

import lab

pytestmark = pytest.mark.operator

V4, V6 = "198.18.2.2", "2001:db8:18:2::2"
HDR = struct.Struct("=HHIIi")       # struct dpvpn_msg_hdr
MSG_SA_DEL, DIR_IN, DIR_OUT = 6, 1, 2
FATES = ("added", "removed", "changed", "repaired", "unchanged")
DOC = open(os.path.join(lab.ROOT, "control", "ctl_proto.h")).read()


@pytest.fixture(scope="module")
def net():
    with lab.Lab(ipv6=True) as n:
        both_tunnels_pass(n)
        yield n


def both_tunnels_pass(net, timeout=10):
    """A ping through each tunnel, once ARP/ND settle (bounded)."""
    for dst in (V4, V6):
        lab.wait_for(lambda: net.ping(count=1, dst=dst).returncode == 0, timeout,
                     f"a ping to {dst} through the tunnel")


def sa_table(gw):
    return {(s["name"], s["spi"], s["dir"]): s for s in gw.ctl("show", "sa")["sas"]}


def ctl_request(gw, req):
    """One JSON request on dpvpnd's control socket: the reply's result."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(20)
        s.connect(gw.ctl_sock)
        s.send(json.dumps(req).encode())
        reply = json.loads(s.recv(1 << 20))
    assert reply["ok"], reply
    return reply["result"]


def names(result):
    """{fate: set of tunnel names}, every fate documented in ctl_proto.h."""
    for k in result:
        assert f'"{k}"' in DOC, f"{k}: not documented in ctl_proto.h"
    return {f: set(result[f]) for f in FATES}


def dataplane_argv(tag, sock, *vdevs):
    return [lab.DATAPLANE, "--no-pci", "--file-prefix", f"dpvpn-{os.getpid()}-{tag}",
            "--log-level", "lib.eal:error", "-l", "0-1", *lab.eal_mem_args(),
            *[a for v in vdevs for a in ("--vdev", v)], "--", "--socket", sock]


def run_until_exit(proc, timeout):
    """The exit code, or None if still running after timeout s (then stopped)."""
    try:
        return proc.p.wait(timeout)
    except Exception:
        proc.stop()
        return None


# ---- defect 1: a second dpvpnd ----

def test_second_dpvpnd_refuses_untouched(net):
    """Same sockets, a config without to-b6: it used to reconcile first
    ("2 stale SAs removed": to-b6 gone) and refuse only at the control
    socket.  Now it finds the dataplane's lock held and sends nothing."""
    before = sa_table(net.a)
    text = open(net.a.config).read()
    lacking = os.path.join(net.a.dir, "lacking.conf")
    with open(lacking, "w") as f:
        f.write(re.sub(r"\[tunnel to-b6\][^\[]*", "", text))
    os.chmod(lacking, 0o600)
    r = lab.sh(lab.DPVPND, "-c", lacking, "-D", net.a.dp_sock, "-s", net.a.ctl_sock,
               "-w", "5", check=False, timeout=30)
    assert r.returncode != 0, r.stderr
    assert f"held by pid {net.a.dpvpnd.p.pid}" in r.stderr, r.stderr
    assert "another dpvpnd manages the dataplane" in r.stderr, r.stderr
    assert "already forwarding" not in r.stderr, r.stderr
    after = sa_table(net.a)
    assert after.keys() == before.keys(), (before.keys(), after.keys())
    both_tunnels_pass(net, timeout=5)
    assert net.a.dpvpnd.alive()


def test_second_dpvpnd_same_state_file_refused(net):
    """The same config (so the same sequence state file) for another
    dataplane: two dpvpnds would reserve the same numbers.  Refused at once,
    before it waits for any dataplane."""
    other = os.path.join(net.a.dir, "nowhere.sock")
    ctl = os.path.join(net.a.dir, "second-ctl.sock")
    t0 = time.monotonic()
    r = lab.sh(lab.DPVPND, "-c", net.a.config, "-D", other, "-s", ctl, "-w", "10",
               check=False, timeout=30)
    assert r.returncode != 0
    assert f"{net.a.config}.state.lock: held by pid {net.a.dpvpnd.p.pid}" in r.stderr, \
        r.stderr
    assert time.monotonic() - t0 < 5, "it waited for the dataplane first"
    assert not os.path.exists(ctl)


# ---- defect 2: a second dataplane on the same socket ----

def test_second_dataplane_refused(net):
    """It used to start, take over the socket path and remove it at exit:
    the first one forwarded on, unmanageable.  Now it names the first one's
    pid and exits before probing a device; the first stays manageable."""
    second = lab.Proc("second-dataplane", dataplane_argv("second", net.a.dp_sock, "net_null0"),
                      net.a.dir)
    rc = run_until_exit(second, 20)
    out = second.output()
    assert rc is not None and rc != 0, out
    assert f"socket in use by pid {net.a.dataplane.p.pid}" in out, out
    assert os.path.exists(net.a.dp_sock)
    # a restarted dpvpnd finds the first dataplane and takes over
    net.a.dpvpnd.stop()
    net.a.dpvpnd = lab.Proc("gw-a-dpvpnd-2", [lab.DPVPND, "-c", net.a.config, "-D",
                                              net.a.dp_sock, "-s", net.a.ctl_sock,
                                              "-w", "10"], net.a.dir)
    lab.wait_for(lambda: "already forwarding" in net.a.dpvpnd.output() or
                 not net.a.dpvpnd.alive(), 20, "the new dpvpnd")
    assert "2 tunnels kept, 0 installed, 0 stale SAs removed" in net.a.dpvpnd.output(), \
        net.a.dpvpnd.output()
    assert net.a.ctl("status")["dataplane"]["started"]
    both_tunnels_pass(net, timeout=5)


def test_stale_socket_replaced(tmp_path):
    """A socket file nobody listens on (a dataplane killed with -9 leaves
    one) is still replaced, and removed at exit."""
    sock = str(tmp_path / "dp.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind(sock)
    s.close()
    dp = lab.Proc("stale-dataplane", dataplane_argv("stale", sock, "net_null0"), str(tmp_path))
    try:
        lab.wait_for(lambda: "ready" in dp.output() or not dp.alive(), 30, "the dataplane")
        assert dp.alive(), dp.output()
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as c:
            c.connect(sock)         # its own socket now
    finally:
        assert dp.stop() == 0
    assert not os.path.exists(sock)


# ---- defect 3: a device that failed to probe ----

@pytest.mark.parametrize("vdevs", [("net_null0", "net_af_packet1,iface=dpvpn-nosuch0"),
                                   ("net_af_packet0,iface=dpvpn-nosuch0",)],
                         ids=["second-of-two", "only-one"])
def test_failed_device_named(tmp_path, vdevs):
    """An af_packet port on an interface that does not exist: the dataplane
    used to say ready with the other port renumbered (or "need 1..N ports"
    without a name).  Now it exits non-zero naming the device."""
    bad = vdevs[-1]
    dp = lab.Proc("bad-vdev", dataplane_argv("badvdev", str(tmp_path / "dp.sock"), *vdevs),
                  str(tmp_path))
    rc = run_until_exit(dp, 20)
    out = dp.output()
    assert rc is not None and rc != 0, out
    assert f"dpvpn-dataplane: device {bad.split(',')[0]} (--vdev {bad}) did not become a " \
           "port" in out, out
    assert "ready" not in out, out
    assert not os.path.exists(tmp_path / "dp.sock")
