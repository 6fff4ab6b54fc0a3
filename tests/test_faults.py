# SPDX-License-Identifier: BSD-3-Clause
"""Fault injection (the [hardening] issue): every fault ends with counted
drops only, and everything recovers.

* kill -9 at random moments: under a ping flood and an iperf3 UDP stream,
  rounds of SIGKILL to one of the four processes (either gateway's dataplane
  or dpvpnd, chosen with a seeded RNG, the seed printed; DPVPN_FAULT_SEED
  repeats a run), each restarted as systemd would: a dataplane like
  Gateway.crash_dataplane (its dpvpnd installs the config again), a dpvpnd
  started anew on the same config and sockets (it finds its dataplane
  forwarding and leaves it alone); or a dataplane and then, at a random
  moment of its reinstall, its dpvpnd too.  After each round traffic passes again
  within a bound and nothing else died.  Over a capture of the gateway link
  no (SPI, sequence number) pair repeats and each SPI's numbers only rise;
  neither gateway ever drops a packet as a replay or bad ICV, not even the
  dataplanes that were killed (read over DPDK telemetry just before);
  every drop is under a reason a restart explains; and at the end each
  gateway's counters balance: received + made = sent + counted drops +
  consumed (lab.counters_balance).
* dpvpnd killed in the middle of installing a fresh dataplane: the next
  dpvpnd clears what the first one left and installs everything.
* a full TX queue (a slow tbf qdisc on gateway A's link: net_af_packet's
  ring backs up and A counts tx-full) and a stalled peer (gateway B's
  dataplane SIGSTOPped for 3 s under traffic): no crash, the pool's in-use
  count back to where it was, counters balanced, ping and iperf3 work after.
* out of packet buffers: gateway A with --desc 64 and --mbufs just above the
  minimum the dataplane accepts (its error message names it), flooded with
  IPv6 outer fragments that never complete (each held in reassembly until it
  times out) while host A sends pings and 1300-byte datagrams over a tunnel
  MTU of 576 (fragmented, or answered with ICMP: both allocate).  The pool
  runs dry: the kernel drops what A cannot take (the packet socket's drop
  count: 22.11's net_af_packet reports neither imissed nor rx_nombuf), A
  counts every buffer it could not get as no-mbuf; afterwards nothing
  leaked, the counters balance and traffic passes.

(IPv6 fragments because net_af_packet's fanout defragments IPv4 in the
kernel: IPv4 fragments never reach the dataplane in this lab.)
"""
import json
import os
import random
import re
import signal
import socket
import struct
import time
import warnings

import pytest

import lab

pytestmark = pytest.mark.hardening

KILL_ROUNDS = 7
RECOVERY_S = 20             # traffic passes again within this after a restart
MBUF_CACHE_HELD = 384       # what one lcore's mempool cache may hold (main.c)
# drops a restart explains: packets that meet a dataplane before ARP has
# resolved its neighbours again (more than it holds meanwhile, or held for a
# peer that did not answer in 3 s), or its transmit ring still full, and what
# its ports queued before it was forwarding again (discarded at START)
RESTART_DROPS = {"no-neighbour", "neigh-timeout", "tx-full", "before-start"}
NEVER = ("replay", "bad-icv", "seq-unreserved", "seq-exhausted", "unknown-spi",
         "crypto-error", "punt-full", "no-mbuf")


def telemetry(gw, cmd):
    """One DPDK telemetry command, straight to the dataplane (no dpvpnd)."""
    path = f"/var/run/dpdk/{gw.file_prefix}/dpdk_telemetry.v2"
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(5)
        s.connect(path)
        json.loads(s.recv(16384))
        s.send(cmd.encode())
        return json.loads(s.recv(65536))[cmd.split(",")[0]]


def esp_numbers(pcap):
    """(SPI, sequence number) of every ESP frame of a pcap file, in order
    (a plain reader: scapy takes minutes over a flood's worth)."""
    out = []
    with open(pcap, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    end = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
    off = 24
    while off + 16 <= len(data):
        caplen = struct.unpack(end + "I", data[off + 8:off + 12])[0]
        frame = data[off + 16:off + 16 + caplen]
        off += 16 + caplen
        if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[23] != 50:
            continue
        ihl = (frame[14] & 0x0f) * 4
        if len(frame) >= 14 + ihl + 8:
            out.append(struct.unpack("!LL", frame[14 + ihl:14 + ihl + 8]))
    return out


def settled(gw, what="counters"):
    """Counters once nothing moves any more (traffic stopped)."""
    last = None
    for _ in range(40):
        now = gw.ctl("show", what)
        if last is not None and now["rx_packets"] == last["rx_packets"]:
            return now
        last = now
        time.sleep(0.25)
    return last


def check_balanced(gw):
    c = settled(gw)
    got, gone = lab.counters_balance(c)
    assert got == gone, (gw.name, got, gone, c)
    return c


def nonzero(drops):
    return {k: v for k, v in drops.items() if v}


def everyone_alive(net):
    dead = [p.name for gw in net.gws for p in (gw.dataplane, gw.dpvpnd) if not p.alive()]
    assert not dead, f"died: {dead}"


def wait_traffic(net, bound=RECOVERY_S):
    """Seconds until one ping passes host A -> host B -> host A."""
    t0 = time.monotonic()
    lab.wait_for(lambda: net.ns(net.ns_a, "ping", "-c", "1", "-W", "1", "198.18.2.2",
                                check=False).returncode == 0, bound, "traffic to pass again")
    return time.monotonic() - t0


def restart_dpvpnd(gw, tag):
    """SIGKILL gw's dpvpnd, start a new one on the same config and sockets,
    as systemd would; returns once it has taken over its dataplane."""
    gw.dpvpnd.kill9()
    gw.dpvpnd = lab.Proc(f"{gw.name}-dpvpnd-{tag}", [lab.DPVPND, "-c", gw.config, "-D",
                                                     gw.dp_sock, "-s", gw.ctl_sock], gw.dir)
    lab.wait_for(lambda: "already forwarding" in gw.dpvpnd.output() or not gw.dpvpnd.alive(),
                 30, f"{gw.name}'s new dpvpnd")
    assert gw.dpvpnd.alive(), gw.dpvpnd.output()
    return gw.dpvpnd.output()


def iperf3_udp(net, seconds, rate):
    """iperf3 UDP host A -> host B in the background: (server, client)."""
    srv = net.bg("iperf3-server", net.ns_b, "iperf3", "-s", "-1", "-B", "198.18.2.2")
    lab.wait_for(lambda: ":5201" in net.ns(net.ns_b, "ss", "-ltn", check=False).stdout, 10,
                 "iperf3 server")
    cli = net.bg("iperf3-client", net.ns_a, "iperf3", "-c", "198.18.2.2", "-u", "-b", rate,
                 "-l", "1200", "-t", str(seconds))
    return srv, cli


def iperf3_works(net):
    rep = net.iperf(seconds=2)
    assert rep["end"]["sum_received"]["bytes"] > 100_000, rep["end"]


@pytest.fixture
def seed():
    s = int(os.environ.get("DPVPN_FAULT_SEED", random.randrange(1 << 32)))
    print(f"\ntest_faults: seed {s} (DPVPN_FAULT_SEED={s} repeats this run)")
    return s


def crash_both(gw, rng, n):
    """The dataplane killed, then its dpvpnd too at a random moment of its
    wait for the new dataplane or of installing it; a new dpvpnd finds the
    dataplane fresh, half installed or forwarding and must cope with each."""
    gw.dataplane.kill9()
    os.unlink(gw.dp_sock)
    gw.start_dataplane(log_suffix=f"-r{n}")
    time.sleep(rng.uniform(0, 0.8))
    gw.dpvpnd.kill9()
    gw.dpvpnd = lab.Proc(f"{gw.name}-dpvpnd-r{n}", [lab.DPVPND, "-c", gw.config, "-D",
                                                     gw.dp_sock, "-s", gw.ctl_sock], gw.dir)
    lab.wait_for(lambda: ("ready" in gw.dpvpnd.output() or "already forwarding" in
                          gw.dpvpnd.output() or not gw.dpvpnd.alive()), 30,
                 f"{gw.name}'s new dpvpnd")
    assert gw.dpvpnd.alive(), gw.dpvpnd.output()


def kill_round(net, rng, n, log):
    """One round: a random moment, a random victim, its restart, recovery."""
    gw = rng.choice(net.gws)
    what = rng.choice(["dataplane", "dataplane", "dpvpnd", "dpvpnd", "both"])
    time.sleep(rng.uniform(0.2, 2.5))
    t0 = time.monotonic()
    if what != "dpvpnd":
        # what the doomed process counted, read just before it dies
        log["killed"].append((gw.name, telemetry(gw, "/dpvpn/counters")))
    if what == "dataplane":
        gw.crash_dataplane()
    elif what == "both":
        crash_both(gw, rng, n)
    else:
        out = restart_dpvpnd(gw, f"r{n}")
        # a dpvpnd started against a forwarding dataplane touches nothing
        assert "1 tunnels kept, 0 installed, 0 stale SAs removed" in out, out
    wait_traffic(net)
    note = " (an interrupted install cleared)" if "interrupted" in gw.dpvpnd.output() else ""
    log["rounds"].append(f"{gw.name} {what}: back in {time.monotonic() - t0:.1f}s{note}")
    everyone_alive(net)


@pytest.mark.nosan
def test_kill9_at_random_moments(seed):
    rng = random.Random(seed)
    # blocks of 16384 numbers: dpvpnd grants new ones during the run (under
    # ~1000 packets a second each way), dpvpnd kills included
    with lab.Lab(seq_block=16384) as net:
        net.ping(count=3)
        cap, pcap = net.capture("gwa-out", snaplen=64)
        flood = net.bg("ping-flood", net.ns_a, "ping", "-q", "-i", "0.004", "-w", "150",
                       "198.18.2.2")
        srv, cli = iperf3_udp(net, 150, "8M")
        log = {"killed": [], "rounds": []}
        t0 = time.monotonic()
        for n in range(KILL_ROUNDS):
            kill_round(net, rng, n, log)
        time.sleep(1)
        assert flood.alive() and cli.alive(), (flood.output(), cli.output())
        for p in (cli, srv, flood):
            p.stop()
        net.stop_capture(cap)
        print(f"test_faults: {KILL_ROUNDS} kills in {time.monotonic() - t0:.0f}s: " +
              "; ".join(log["rounds"]))
        # the peer's anti-replay: no false drop, in the dataplanes killed too
        for name, c in log["killed"]:
            assert all(c["drop_" + r.replace("-", "_")] == 0 for r in NEVER), (name, c)
        for gw in net.gws:
            c = check_balanced(gw)
            print(f"test_faults: {gw.name} drops since its last start: {nonzero(c['drops'])}")
            assert all(c["drops"][r] == 0 for r in NEVER), (gw.name, c["drops"])
            assert set(nonzero(c["drops"])) <= RESTART_DROPS, (gw.name, c["drops"])
            assert all(s["drops"]["replay"] == 0 for s in gw.ctl("show", "sa")["sas"])
        seen = esp_numbers(pcap)
        assert len(set(seen)) == len(seen), "an (SPI, sequence number) pair repeats"
        for spi in (0x1001, 0x2001):
            nums = [s for x, s in seen if x == spi]
            assert len(nums) > 1000, (hex(spi), len(nums))
            back = [(a, b) for a, b in zip(nums, nums[1:]) if b <= a]
            assert not back, (hex(spi), back[:5])


BULK = """
[tunnel bulk{i}]
local = 198.19.0.1
remote = 198.19.0.2
local-ts = 198.18.1.0/24
remote-ts = 10.{hi}.{lo}.0/24
cipher = aes128-gcm
out-spi = {out}
out-key = 0x{key}
in-spi = {inn}
in-key = 0x{key}
"""


def test_dpvpnd_killed_while_installing():
    """dpvpnd killed -9 half way through installing a fresh dataplane (1500
    tunnels make the install last long enough to be hit): the dataplane is
    not started and holds half the SAs.  The next dpvpnd used to fail on
    every start ("sa.spi: ... is already installed"), forwarding stopped for
    good; now it removes those SAs and installs everything."""
    with lab.Lab() as net:
        net.ping(count=3)
        with open(net.a.config, "a") as f:
            for i in range(1500):
                f.write(BULK.format(i=i, hi=i // 250, lo=i % 250, out=0x10000 + i,
                                    inn=0x20000 + i, key="ab" * 20))
        gw = net.a
        gw.dpvpnd.kill9()
        gw.dataplane.kill9()
        os.unlink(gw.dp_sock)
        gw.start_dataplane(log_suffix="-2")
        first = lab.Proc("gw-a-dpvpnd-2", [lab.DPVPND, "-v", "-c", gw.config, "-D", gw.dp_sock,
                                            "-s", gw.ctl_sock], gw.dir)
        lab.wait_for(lambda: "tunnel bulk300 policy" in first.output() or not first.alive(),
                     60, "half the install", interval=0.005)
        first.kill9()
        assert "ready" not in first.output(), "the install finished before the kill"
        gw.dpvpnd = lab.Proc("gw-a-dpvpnd-3", [lab.DPVPND, "-c", gw.config, "-D", gw.dp_sock,
                                                "-s", gw.ctl_sock], gw.dir)
        lab.wait_for(lambda: "ready" in gw.dpvpnd.output() or not gw.dpvpnd.alive(), 60,
                     "the second dpvpnd")
        out = gw.dpvpnd.output()
        assert gw.dpvpnd.alive() and "ready (2 ports, 1501 tunnels)" in out, out
        assert "an install was interrupted" in out
        wait_traffic(net)
        c = gw.ctl("show", "counters")
        assert c["drops"]["replay"] == 0 and c["drops"]["sa-gone"] == 0, c["drops"]


FOREIGN = r"""
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
frame = bytes.fromhex("020000000099") + s.getsockname()[4] + b"\x88\xb5" + bytes(46)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    try:
        s.send(frame)
    except OSError:
        pass
"""


def test_restarted_dataplane_forwards_nothing_from_before_start():
    """net_af_packet opens its sockets for every interface of the namespace
    and binds each to its own only after mapping the ring: what crosses any
    interface in between waits in the ring for START.  Here host A floods
    its link with frames for nobody (gateway A counts them as wrong-mac)
    while gateway B's dataplane restarts: B's new sockets catch some of them
    before they are bound, and used to forward them at START (wrong-mac
    there; ESP of the gateway link seen twice: replay drops).  Now a worker
    discards what its af_packet queues hold at START, as before-start."""
    with lab.Lab() as net:
        net.ping(count=3)
        net.bg("foreign-frames", net.ns_a, "python3", "-c", FOREIGN, "60")
        caught = 0      # the race is the kernel's: restart until it happened
        for _ in range(6):
            net.b.crash_dataplane()
            wait_traffic(net)
            c = net.b.ctl("show", "counters")
            print(f"test_faults: gateway B restarted: {nonzero(c['drops'])}")
            assert c["drops"]["wrong-mac"] == 0 and c["drops"]["replay"] == 0, c["drops"]
            caught += c["drops"]["before-start"]
            if caught and _ >= 2:
                break
        assert caught > 0, "no restart caught frames before START: the test proved nothing"
        everyone_alive(net)


def link_taken(net, gw, dev):
    """(frames that reached dev, frames gw's dataplane took from it): the
    difference is what the kernel dropped before the dataplane saw it (its
    packet socket's ring full), which 22.11's net_af_packet does not report."""
    st = json.loads(net.ns(net.ns_gw, "ip", "-j", "-s", "link", "show", dev).stdout)
    port = next(p for p in gw.ctl("show", "ports")["ports"] if p["role"] == "outside")
    return st[0]["stats64"]["rx"]["packets"], port["rx_packets"]


def kernel_dropped(before, after):
    return (after[0] - before[0]) - (after[1] - before[1])


def in_use_back(gw, base):
    lab.wait_for(lambda: gw.ctl("show", "counters")["mbufs_in_use"] <= base, 10,
                 f"{gw.name}'s packet pool back to {base} in use")


def test_full_tx_queue_and_stalled_peer():
    with lab.Lab() as net:
        net.ping(count=3)
        base = {gw.name: settled(gw)["mbufs_in_use"] for gw in net.gws}
        full0 = net.a.ctl("show", "counters")["drops"]["tx-full"]
        # 1. a full TX queue: the link drains at 2 Mbit/s, 50 Mbit/s offered
        net.ns(net.ns_gw, "tc", "qdisc", "add", "dev", "gwa-out", "root", "tbf", "rate",
               "2mbit", "burst", "8kb", "limit", "16kb")
        try:
            srv, cli = iperf3_udp(net, 3, "50M")
            flood = net.bg("ping-flood", net.ns_a, "ping", "-q", "-i", "0.005", "-w", "3",
                           "198.18.2.2")
            time.sleep(4)
            tc = net.ns(net.ns_gw, "tc", "-s", "qdisc", "show", "dev", "gwa-out").stdout
        finally:
            net.ns(net.ns_gw, "tc", "qdisc", "del", "dev", "gwa-out", "root", check=False)
        for p in (cli, srv, flood):
            p.stop()
        everyone_alive(net)
        a = check_balanced(net.a)
        print(f"test_faults: full TX queue: gateway A counted {a['drops']['tx-full'] - full0} "
              f"tx-full; the qdisc: {' '.join(tc.split())}")
        assert a["drops"]["tx-full"] - full0 > 1000, a["drops"]
        in_use_back(net.a, base["gw-a"])
        r = net.ping(count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        iperf3_works(net)

        # 2. a stalled peer: B's dataplane stopped for 3 s under traffic
        before = link_taken(net, net.b, "gwb-out")
        srv, cli = iperf3_udp(net, 6, "20M")
        flood = net.bg("ping-flood", net.ns_a, "ping", "-q", "-i", "0.005", "-w", "6",
                       "198.18.2.2")
        time.sleep(1)
        os.kill(net.b.dataplane.p.pid, signal.SIGSTOP)
        try:
            time.sleep(3)
        finally:
            os.kill(net.b.dataplane.p.pid, signal.SIGCONT)
        time.sleep(3)
        for p in (cli, srv, flood):
            p.stop()
        everyone_alive(net)
        held = kernel_dropped(before, link_taken(net, net.b, "gwb-out"))
        print(f"test_faults: stalled peer: the kernel dropped {held} frames for gateway B "
              "while it was stopped (its socket ring full)")
        assert held > 0
        for gw in net.gws:
            c = check_balanced(gw)
            assert all(c["drops"][r] == 0 for r in NEVER), (gw.name, c["drops"])
            in_use_back(gw, base[gw.name])
        # dpvpnd waited for its answers: it never took the stall for a crash
        assert "connection lost" not in net.b.dpvpnd.output(), net.b.dpvpnd.output()
        r = net.ping(count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        iperf3_works(net)


def mbufs_floor(desc):
    """The least --mbufs the dataplane takes for the lab's shape (2 ports, 1
    worker), from its own refusal of a pool too small (net_null ports)."""
    r = lab.sh(lab.DATAPLANE, "--no-pci", "--no-huge", "-m", "256", "--file-prefix",
               f"dpvpn-floor-{os.getpid()}", "-l", "0-1", "--log-level", "lib.eal:error",
               "--vdev", "net_null0", "--vdev", "net_null1", "--", "--socket",
               f"/tmp/dpvpn-floor-{os.getpid()}.sock", "--desc", str(desc), "--mbufs", "1",
               check=False)
    m = re.search(r"--mbufs: 1 is below the minimum (\d+) for 2 ports x 1 queues", r.stdout +
                  r.stderr)
    assert r.returncode == 1 and m, r.stdout + r.stderr
    return int(m.group(1))


FRAG_FLOOD = r"""
import socket, struct, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("gwb-out", 0))
dst, src = bytes.fromhex(sys.argv[1].replace(":", "")), s.getsockname()[4]
a, b = (socket.inet_pton(socket.AF_INET6, x) for x in ("2001:db8:19::2", "2001:db8:19::1"))
def frame(ident, k):        # 7 of the fragments of a packet whose last never comes
    frag = struct.pack("!BBHI", 50, 0, (k * 8) << 3 | 1, ident)
    return (dst + src + b"\x86\xdd" + struct.pack("!IHBB", 6 << 28, 8 + 64, 44, 64) + a + b +
            frag + bytes([k]) * 64)
frames = [frame(i, k) for i in range(1 << 14) for k in range(7)]
end, i = time.monotonic() + float(sys.argv[2]), 0
while time.monotonic() < end:
    try:
        s.send(frames[i % len(frames)])
    except OSError:
        pass
    i += 1
"""

DATAGRAMS = r"""
import socket, sys, time
df, nodf = socket.socket(socket.AF_INET, socket.SOCK_DGRAM), socket.socket(socket.AF_INET,
                                                                           socket.SOCK_DGRAM)
df.setsockopt(socket.IPPROTO_IP, 10, 3)     # IP_MTU_DISCOVER: IP_PMTUDISC_PROBE (DF, no PMTU)
nodf.setsockopt(socket.IPPROTO_IP, 10, 0)   # IP_PMTUDISC_DONT: no DF
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:       # bursts: a worker's whole burst wants buffers at once
    for s in [nodf] * 32 + [df] * 8:
        try:
            s.sendto(b"x" * 1300, ("198.18.2.2", 9))
        except OSError:
            pass
    time.sleep(0.01)
"""


def test_out_of_mbufs():
    floor = mbufs_floor(64)
    pool = floor + 16
    replace = (("replay-window = 1024", "replay-window = 1024\nmtu = 576"),  # [tunnel to-b]
               ("address = 198.19.0.1/24", "address = 198.19.0.1/24, 2001:db8:19::1/64"))
    with lab.Lab(dp_args_a=("--desc", "64", "--mbufs", str(pool)), replace_a=replace) as net:
        net.ping(count=3)
        a0 = settled(net.a)
        assert a0["mbufs_total"] == pool
        base = a0["mbufs_in_use"]
        link0 = link_taken(net, net.a, "gwa-out")
        mac = net.ns(net.ns_gw, "cat", "/sys/class/net/gwa-out/address").stdout.strip()
        # Whether a fragmentation or ICMP error meets the empty pool (no-mbuf)
        # is a race between the ports' RX, which cannot take frames while the
        # pool is dry, and the reassembly timeouts that refill it: on one
        # machine every round shows it, on another none of the first (the
        # unit test test_nombuf covers each no-mbuf path deterministically).
        # So up to four rounds, until one has counted it.
        peak, rounds = 0, 0
        while rounds < 4:
            rounds += 1
            traffic = [net.bg("frag-flood", net.ns_gw, "python3", "-c", FRAG_FLOOD, mac, "4"),
                       net.bg("datagrams", net.ns_a, "python3", "-c", DATAGRAMS, "5"),
                       net.bg("ping-flood", net.ns_a, "ping", "-q", "-i", "0.005", "-w", "5",
                              "198.18.2.2")]
            end = time.monotonic() + 5
            while time.monotonic() < end:
                peak = max(peak, net.a.ctl("show", "counters")["mbufs_in_use"])
                time.sleep(0.2)
            for p in traffic:
                p.stop()
            everyone_alive(net)
            if net.a.ctl("show", "counters")["drops"]["no-mbuf"] > 0:
                break
        a = check_balanced(net.a)
        check_balanced(net.b)
        lost = kernel_dropped(link0, link_taken(net, net.a, "gwa-out"))
        print(f"test_faults: out of mbufs: pool {pool} (minimum {floor}), peak {peak} in use, "
              f"{rounds} round(s); gateway A counted no-mbuf {a['drops']['no-mbuf']}, frag_in "
              f"{a['frag_in']}, reass_dropped {a['reass_dropped']}, icmp_out {a['icmp_out']}, "
              f"fragments {a['fragments']}; the kernel dropped {lost} frames before A took them")
        # dry: every mbuf in use but what the two lcores' caches may keep
        assert peak >= pool - 2 * MBUF_CACHE_HELD, (peak, pool)
        assert lost > 0
        if a["drops"]["no-mbuf"] == 0:
            # Seen once in CI (a faster machine): the pool dry, the ports' RX
            # starved (lost above), yet every fragmentation and ICMP error
            # found a buffer in four rounds.  Not a fault of the dataplane;
            # the unit test test_nombuf proves each no-mbuf path counts.
            warnings.warn(f"test_out_of_mbufs: no no-mbuf drop in {rounds} rounds (RX starved: "
                          f"{lost} frames dropped by the kernel)")
        assert a["frag_in"] > 0 and a["reassembled"] == 0
        lab.wait_for(lambda: net.a.ctl("show", "counters")["reass_dropped"] == a["frag_in"], 10,
                     "every fragment held to time out and be counted")
        assert all(a["drops"][r] == 0 for r in ("replay", "bad-icv", "tx-full")), a["drops"]
        in_use_back(net.a, base)
        r = net.ping(count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        iperf3_works(net)
