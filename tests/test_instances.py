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


def test_drift_repaired_by_reload(net):
    """to-b6's outbound SA deleted (dpvpnctl sa del: its policy goes with
    it) and to-b's policy deleted: both tunnels carry nothing.  A reload
    used to answer "0 changed, 2 unchanged"; now it compares with what the
    dataplane holds and installs the missing parts, naming both tunnels."""
    limit = {ln.split()[1]: int(ln.split()[2])
             for ln in open(net.a.config + ".state").read().splitlines()}
    b_out = sa_table(net.a)[("to-b", "0x00003001", "out")]["seq"]
    net.a.ctl_text("sa", "del", "0x00003002", "out")
    net.a.ctl_text("policy", "del", "198.18.1.0/24", "198.18.2.0/24")
    assert net.ping(count=1, dst=V6).returncode != 0
    assert net.ping(count=1, dst=V4).returncode != 0
    text = net.a.ctl_text("reload")
    assert "0 changed, 0 unchanged, 2 repaired" in text, text
    assert re.search(r"^\s+repaired\s+to-b, to-b6$|^\s+repaired\s+to-b6, to-b$", text, re.M), \
        text
    out = net.a.dpvpnd.output()
    assert "tunnel to-b6: repaired: the dataplane lacked its outbound SA" in out, out
    assert "tunnel to-b: repaired: the dataplane lacked its policy" in out, out
    both_tunnels_pass(net)
    sas = sa_table(net.a)
    # to-b6's new outbound SA went on above every number reserved before (no reuse)
    assert sas[("to-b6", "0x00003002", "out")]["seq"] > limit["00003002"]
    # to-b only lacked its policy: its outbound SA was left alone, numbers run on
    assert b_out < sas[("to-b", "0x00003001", "out")]["seq"] < b_out + 1000
    assert len(net.a.ctl("show", "policies")["policies"]) == 2
    assert net.b.ctl("show", "counters")["drops"]["replay"] == 0


def test_drift_repaired_by_tunnel_up(net):
    """to-b's inbound SA deleted directly over the dataplane socket, which
    dpvpnd never sees: replies to host A are dropped.  tunnel to-b up (it
    is not down) used to answer "unchanged"; now it repairs it."""
    b_out = sa_table(net.a)[("to-b", "0x00003001", "out")]["seq"]
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(5)
        s.connect(net.a.dp_sock)
        s.send(HDR.pack(MSG_SA_DEL, 0, 1, 8, 0) + struct.pack("!I", 0x4001) +
               bytes([DIR_IN, 0, 0, 0]))
        assert HDR.unpack_from(s.recv(4096))[4] == 0
    assert ("to-b", "0x00004001", "in") not in sa_table(net.a)
    assert net.ping(count=1, dst=V4).returncode != 0
    res = ctl_request(net.a, {"cmd": "tunnel", "name": "to-b", "state": "up"})
    assert res["message"].startswith("tunnel to-b up: repaired"), res
    assert names(res) == {"added": set(), "removed": set(), "changed": set(),
                          "repaired": {"to-b"}, "unchanged": {"to-b6"}}, res
    both_tunnels_pass(net)
    # the outbound SA was not touched: the peer sees its numbers run on
    assert b_out < sa_table(net.a)[("to-b", "0x00003001", "out")]["seq"] < b_out + 1000


def test_reload_and_tunnel_answers_name_tunnels(net):
    """reload and tunnel NAME up|down name what they did to each tunnel
    (JSON lists, and dpvpnctl's lines); a second down says so."""
    res = ctl_request(net.a, {"cmd": "reload"})
    assert names(res) == {"added": set(), "removed": set(), "changed": set(),
                          "repaired": set(), "unchanged": {"to-b", "to-b6"}}, res
    res = ctl_request(net.a, {"cmd": "tunnel", "name": "to-b6", "state": "down"})
    assert res["message"].startswith("tunnel to-b6 down: removed; reloaded: 0 tunnels added, "
                                     "1 removed"), res
    assert names(res)["removed"] == {"to-b6"} and names(res)["unchanged"] == {"to-b"}, res
    text = net.a.ctl_text("tunnel", "to-b6", "down")
    assert text.startswith("tunnel to-b6 down: already down; nothing changed"), text
    assert ("to-b6", "0x00003002", "out") not in sa_table(net.a)
    text = net.a.ctl_text("tunnel", "to-b6", "up")
    assert text.startswith("tunnel to-b6 up: installed; reloaded: 1 tunnels added"), text
    assert re.search(r"^\s+added\s+to-b6$", text, re.M), text
    assert re.search(r"^\s+unchanged\s+to-b$", text, re.M), text
    text = net.a.ctl_text("tunnel", "to-b6", "up")
    assert text.startswith("tunnel to-b6 up: already up;"), text
    # dpvpnctl --json gives the result object of changes too (it printed text)
    res = net.a.ctl("reload")
    assert names(res)["unchanged"] == {"to-b", "to-b6"}, res
    both_tunnels_pass(net)


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


def test_socket_directory_made(tmp_path):
    """A socket in a directory that does not exist yet (doc/first-tunnel.md's
    "Running it by hand": /run/dpvpn/lab-a/): the dataplane makes it, 0700, and starts.
    The in-use check must not take the missing directory for an error."""
    sock = str(tmp_path / "run" / "lab-a" / "dp.sock")
    dp = lab.Proc("mkdir-dataplane", dataplane_argv("mkdir", sock, "net_null0"), str(tmp_path))
    try:
        lab.wait_for(lambda: "ready" in dp.output() or not dp.alive(), 30, "the dataplane")
        assert dp.alive(), dp.output()
        assert os.stat(os.path.dirname(sock)).st_mode & 0o777 == 0o700
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as c:
            c.connect(sock)
    finally:
        assert dp.stop() == 0


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
