# SPDX-License-Identifier: BSD-3-Clause
"""[tester] issue 15: dpvpn-dataplane --tester N against a device under test.

The DUT is a real dpvpn gateway (dataplane + dpvpnd) keyed from the tester's
--emit-peer-config dpvpn output; the two meet over two veth pairs in a
namespace of the test's own, driven by net_af_packet:

  tester port A (198.18.1.2) == t-a | d-in  == DUT inside  (198.18.1.1)
  tester port B (198.19.0.2) == t-b | d-out == DUT outside (198.19.0.1)
"""
import json
import os
import secrets
import tempfile
import time

import pytest

import lab

pytestmark = pytest.mark.tester

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(lab.CONFIGS), "tester"))
import tester as T  # noqa: E402
import testerlab  # noqa: E402


link, Pair = testerlab.link, testerlab.Pair


def test_trial_both_directions_every_tunnel():
    """4 tunnels, both directions at once, two frame sizes: every packet the
    tester sent came back through the DUT, per direction and per tunnel,
    with sequence and latency accounting; the DUT's counters agree."""
    with Pair(4) as p:
        p.warm()
        c0 = p.dut.ctl("show", "counters")
        s = p.tester.trial(5000, 5000, 1.0, [64, 1400])
        c1 = p.dut.ctl("show", "counters")
        for d in T.DIRS:
            x = s[d]
            assert 4500 <= x["sent"] <= 5500, (d, x)
            assert x["received"] == x["sent"] and x["lost"] == 0, (d, x)
            assert x["duplicated"] == 0 and x["reordered"] == 0, (d, x)
            assert x["sent_bytes"] == x["received_bytes"], (d, x)
            assert 0 < x["lat_min_ns"] <= x["lat_p50_ns"] <= x["lat_p99_ns"] <= x["lat_max_ns"], x
        assert s["late"] == 0 and s["foreign"] == 0, s
        # the DUT encrypted the one direction and decrypted the other
        assert c1["encrypted"] - c0["encrypted"] == s["dut_encap"]["sent"], (c0, c1, s)
        assert c1["decrypted"] - c0["decrypted"] == s["dut_decap"]["sent"], (c0, c1, s)
        per = p.tester.tunnels()
        assert sorted(per) == [0, 1, 2, 3]
        for i, t in per.items():
            for k in ("e", "d"):
                assert t[f"{k}_sent"] > 1000 and t[f"{k}_received"] == t[f"{k}_sent"], (i, t)
        assert sum(t["e_sent"] for t in per.values()) == s["dut_encap"]["sent"]


PCT_KEYS = ("lat_min_ns", "lat_p50_ns", "lat_p99_ns", "lat_p999_ns", "lat_max_ns")
TUNNEL_BUCKET = 1.25        # per-stream histogram: a bucket <= 25 % of its lower edge wide
DIR_BUCKET = 1.0625         # per-direction: 6.25 %
TUNNEL_UNIT_NS = 64         # the per-stream unit is 32..64 ns (exact below 4 units)


@pytest.mark.nosan
def test_per_tunnel_latency_percentiles():
    """Per tunnel and direction: min <= p50 <= p99 <= p99.9 <= max, and each
    agrees with the per-direction histogram: the direction's min and max are
    the tunnels' extremes, and its p50 / p99 / p99.9 (a quantile of the
    tunnels' mixture) lies between the tunnels' own, each histogram within
    its buckets' width."""
    with Pair(4) as p:
        p.warm()
        s = p.tester.trial(6000, 6000, 1.0, [64, 1400])
        per = p.tester.tunnels()
        for d, k in (("dut_encap", "e"), ("dut_decap", "d")):
            x = s[d]
            assert x["received"] > 0.9 * x["sent"] > 0, x     # (loss does not matter here)
            for i, t in per.items():
                v = [t[f"{k}_{key}"] for key in PCT_KEYS]
                assert 0 < v[0] and v == sorted(v), (i, k, v)
            assert x["lat_min_ns"] == min(t[f"{k}_lat_min_ns"] for t in per.values()), (x, per)
            assert x["lat_max_ns"] == max(t[f"{k}_lat_max_ns"] for t in per.values()), (x, per)
            for key in PCT_KEYS[1:4]:
                tun = [t[f"{k}_{key}"] for t in per.values()]
                lo = (min(tun) - TUNNEL_UNIT_NS) / TUNNEL_BUCKET - 2
                hi = max(tun) * DIR_BUCKET + 2
                assert lo <= x[key] <= hi, (d, key, lo, x[key], hi, tun)
            print(d, {key: x[key] for key in PCT_KEYS},
                  [[t[f"{k}_{key}"] for key in PCT_KEYS] for t in per.values()])


def link_flap(ns, dev, at, seconds, log):
    """During a trial: dev down at monotonic time at for seconds, then up;
    log gets the least time it was down: from the down command's return to
    the up command's start (each took effect somewhere inside its run)."""
    def run(t0):
        time.sleep(max(0.0, t0 + at - time.monotonic()))
        lab.sh("ip", "-n", ns, "link", "set", dev, "down")
        down = time.monotonic()
        time.sleep(seconds)
        log.append(time.monotonic() - down)
        lab.sh("ip", "-n", ns, "link", "set", dev, "up")
    return run


def test_gap_and_esp_check_place_the_loss():
    """A stall of known length in the DUT's path, both sides of its
    encryption, in DUT-encap streams (the tester decrypts their ESP):

    * the DUT's outside link (d-out) down 0.3 s: what it encrypted in that
      time never reaches the tester, so every lost packet left a hole in
      the ESP sequence numbers: e_esp_gap == lost > 0 per tunnel;
    * the DUT's inside link (d-in) down 0.3 s: the cleartext never reaches
      the DUT, it encrypts none of it: e_esp_gap == 0 < lost.

    Both times the longest inter-arrival gap of every stream (and of the
    direction) is at least the time the link was down; a trial with no
    stall has none near that long."""
    with Pair(2) as p:
        p.warm()
        calm = p.tester.trial(4000, 4000, 1.0, [64])
        per = p.tester.tunnels()
        assert calm["dut_encap"]["lost"] == 0, calm
        assert calm["dut_encap"]["gap_max_ns"] < 0.1e9, calm
        assert all(t["e_esp_gap"] == 0 and t["e_icv_failures"] == 0 and
                   0 < t["e_gap_max_ns"] < 0.1e9 for t in per.values()), per
        for dev, after_encryption in (("d-out", True), ("d-in", False)):
            down = []
            s = p.tester.trial(4000, 4000, 1.5, [64],
                               during=link_flap(p.ns, dev, 0.5, 0.3, down))
            per = p.tester.tunnels()
            x = s["dut_encap"]
            print(dev, f"down {down[0]:.3f} s, behind {s['behind']}", x,
                  {i: {k: t[k] for k in ("e_sent", "e_received", "e_esp_gap", "e_gap_max_ns")}
                   for i, t in per.items()})
            assert x["gap_max_ns"] >= down[0] * 1e9, (down, x)
            # sent is what was built, stalls of the tester's own (behind) or not
            assert x["sent"] == sum(t["e_sent"] for t in per.values()), (x, per)
            assert x["sent_bytes"] == 64 * x["sent"], x
            for i, t in per.items():
                lost = t["e_sent"] - t["e_received"]
                assert lost > 0 and t["e_gap_max_ns"] >= down[0] * 1e9, (dev, i, t)
                assert t["e_esp_gap"] == (lost if after_encryption else 0), (dev, i, t)
                assert t["e_icv_failures"] == 0, (dev, i, t)
            p.warm()


def test_tester_stall_is_not_sent():
    """The tester itself stopped 0.2 s mid-trial (SIGSTOP): what fell due
    meanwhile is not made up (behind counts it) and not counted as sent
    either: sent is what was built, as the per-tunnel counts and the bytes
    say, so it is not counted as lost; the stall shows as the gap."""
    import signal
    with Pair(2) as p:
        p.warm()
        pid = p.tester.gw.dataplane.p.pid

        def stall(t0):
            time.sleep(max(0.0, t0 + 0.4 - time.monotonic()))
            os.killpg(pid, signal.SIGSTOP)
            time.sleep(0.2)
            os.killpg(pid, signal.SIGCONT)
        s = p.tester.trial(4000, 0, 1.0, [64], during=stall)
        x = s["dut_encap"]
        per = p.tester.tunnels()
        print(s["behind"], x)
        assert s["behind"] >= 1, s
        assert x["sent"] == sum(t["e_sent"] for t in per.values()), (x, per)
        assert x["sent_bytes"] == 64 * x["sent"] and x["sent"] <= 4000 - 600, x
        assert x["lost"] == 0 and x["gap_max_ns"] >= 0.19e9, x
        # ... but unsent, and a search counts that as lost
        assert 600 <= x["unsent"] and abs(x["sent"] + x["unsent"] - 4000) <= 64, x
        assert T.loss_of(s, ["dut_encap"]) == (x["sent"] + x["unsent"], x["received"],
                                               x["unsent"] / (x["sent"] + x["unsent"])), x


def test_one_direction_and_a_new_trial_resets():
    """Each direction alone; a second trial counts from zero; bad trial
    parameters are refused with an error, the dataplane carries on."""
    with Pair(1) as p:
        p.warm()
        s = p.tester.trial(2000, 0, 0.5, [128])
        assert s["dut_decap"]["sent"] == 0 and s["dut_encap"]["received"] == \
            s["dut_encap"]["sent"] > 500, s
        for bad in ("", "1,1", "x,1,100,64", "1,1,0,64", "1,1,100,63", "1,1,100,1515",
                    "1,1,100," + ",".join(["64"] * 17), "1,-1,100,64", "1" * 300):
            r = p.tester.tel.cmd("/dpvpn/tester/start," + bad)
            assert "error" in r, (bad, r)
        assert p.tester.tel.cmd("/dpvpn/tester/tunnels,zz") is None
        dut = T.probe.Telemetry(p.dut.file_prefix)    # no tester mode there: refused, no crash
        try:
            for cmd in ("/dpvpn/tester/stats", "/dpvpn/tester/start,1,1,100,64",
                        "/dpvpn/tester/tunnels", "/dpvpn/tester/tunnels,0,5"):
                r = dut.cmd(cmd)
                assert r == {} or "error" in r, (cmd, r)
        finally:
            dut.close()
        assert p.dut.dataplane.alive()
        assert p.tester.tel.cmd("/dpvpn/tester/tunnels,5,3") == {}   # past the last
        for odd in ("18446744073709551615,16", "99999999999999999999999,1", "0,0",
                    "0,18446744073709551615", "-1,-1"):
            r = p.tester.tel.cmd("/dpvpn/tester/tunnels," + odd)
            assert r in ({}, None) or list(r) == ["0"], (odd, r)
        assert p.tester.tel.cmd("/dpvpn/tester/tunnels,0,99") is not None
        s2 = p.tester.trial(0, 2000, 0.5, [128])
        assert s2["trial"] == s["trial"] + 1
        assert s2["dut_encap"]["sent"] == 0 and s2["dut_decap"]["received"] == \
            s2["dut_decap"]["sent"] > 500, s2


def test_frames_checked_byte_for_byte():
    """The sink checks what it counts: a frame with the tester's payload but
    one padding byte changed, or a UDP length that is not the frame's, is
    counted as corrupt, not received; the same frame intact is received."""
    from scapy.all import Ether, IP, UDP, Raw
    import struct
    with Pair(1) as p:
        p.warm()
        mac = next(x["mac"] for x in p.tester.gw.ctl("show", "ports")["ports"] if x["id"] == 0)
        r = p.tester.tel.cmd("/dpvpn/tester/start,0,0,3000,128")   # counters zeroed, no traffic
        trial = r["trial"]

        def frame(seq, pad, udp_len=None):
            pl = struct.pack("<HIQQ", 0x5444, 1, (trial & 0xffff) << 48 | seq, 0)
            udp = UDP(sport=10000, dport=20000, chksum=0)
            if udp_len:
                udp.len = udp_len
            return (Ether(dst=mac) / IP(src="198.18.1.1", dst="198.18.1.2", flags="DF") / udp /
                    Raw(pl + pad))
        good = frame(0, bytes(128 - 64))
        bad_pad = frame(1, bytes(30) + b"\x01" + bytes(128 - 64 - 31))
        bad_len = frame(2, bytes(128 - 64), udp_len=99)
        time.sleep(0.1)
        lab.sh("ip", "netns", "exec", p.ns, "/usr/bin/python3", "-c",
               "import sys; from scapy.all import sendp, Ether; "
               "[sendp(Ether(bytes.fromhex(h)), iface='d-in', verbose=False) for h in sys.argv[1:]]",
               *(bytes(f).hex() for f in (good, bad_pad, bad_len)))
        lab.wait_for(lambda: p.tester.stats()["dut_decap"]["corrupt"] >= 2, 5, "corrupt counted")
        x = p.tester.stats()["dut_decap"]
        assert x["corrupt"] == 2 and x["received"] == 1, x


def test_wrong_key_counted_per_tunnel():
    """A DUT with a wrong key for tunnel 1: the tester reports the loss on
    that tunnel's DUT-encap stream alone and counts the ICV failures on its
    SA; nothing crashes, the other tunnels and direction are whole."""
    with Pair(3, wrong_key=1) as p:
        s = p.tester.trial(3000, 3000, 0.6, [64])
        s = p.tester.trial(3000, 3000, 0.6, [64])     # the first waited for ARP
        per = p.tester.tunnels()
        assert per[1]["e_sent"] > 0 and per[1]["e_received"] == 0, per
        for i in (0, 2):
            assert per[i]["e_received"] == per[i]["e_sent"] > 0, per
        for i in (0, 1, 2):
            assert per[i]["d_received"] == per[i]["d_sent"] > 0, per
        icv = p.tester.icv_failures()
        assert icv.get(1, 0) >= per[1]["e_sent"] and icv.get(0, 0) == 0, icv
        assert s["dut_encap"]["lost"] == per[1]["e_sent"], s


@pytest.mark.nosan
def test_search_finds_ndr_and_pdr():
    """A short MLRsearch (NDR and PDR as the csit preset has them, but 0.2 s
    trials, 0.6 s sums and 5 % width) through the DUT over af_packet links
    completes with both bounds of each goal inside the load range, every
    trial logged, and at least half the trials at NDR's lower bound lost nothing."""
    with Pair(1) as p:
        p.warm()
        common = dict(exceed_ratio=0.5, relative_width=0.05, initial_trial_duration=0.2,
                      final_trial_duration=0.2, duration_sum=0.6, preceding_targets=1)
        cfg = T.mlr.Config(goals=(T.mlr.Goal("NDR", 0.0, **common),
                                  T.mlr.Goal("PDR", 0.005, **common)),
                           min_load=1e4, max_load=3e6, search_duration_max=90)
        res = T.search(p.tester, [64], list(T.DIRS), config=cfg)
        goals = res.goals
        assert set(goals) == {"NDR", "PDR"}, goals
        assert len(res.trials) >= 4 and all(t.duration > 0 for t in res.trials)
        for g in goals.values():
            assert g.relevant_lower_bound is not None and g.relevant_upper_bound is not None, \
                (g, res.stop_reason)
            assert 1e4 <= g.relevant_lower_bound < g.relevant_upper_bound <= 3e6, g
        ndr = goals["NDR"].relevant_lower_bound
        at = [t for t in res.trials if t.load == ndr]
        # exceed ratio 0.5: at least half of its trials there lost nothing
        assert at and 2 * sum(t.extras["received"] == t.extras["sent"] for t in at) >= len(at), at
        lat = T.latency_points(p.tester, [64], list(T.DIRS),
                               goals["PDR"].relevant_lower_bound, seconds=0.3)
        doc = T.document([{"sizes": [64], "dirs": list(T.DIRS), "search": res,
                           "latency": lat}])
        # 10 % of PDR is below NDR here: nothing lost; every share measured latency
        assert all(lat["10"][d]["received"] == lat["10"][d]["sent"] > 0 for d in T.DIRS), lat
        assert all(st[d]["lat_p50_ns"] > 0 for st in lat.values() for d in T.DIRS), lat
        md = T.rep.markdown(doc)
        assert "| 64 |" in md and "| NDR |" in md and "| PDR |" in md and "Latency" in md, md
        print(md)


def test_emit_peer_config(tmp_path, capsys):
    """--emit-peer-config writes the DUT's side (dpvpn, ip xfrm, swanctl) and
    keeps the keys, 0600, for the run that follows."""
    wd = str(tmp_path / "wd")
    assert T.main(["--tunnels", "3", "--emit-peer-config", "dpvpn", "--workdir", wd]) == 0
    out = capsys.readouterr().out
    assert out.count("[tunnel t") == 3 and "remote-ts = 100.64.0.2/32" in out
    assert os.stat(os.path.join(wd, "plan.json")).st_mode & 0o777 == 0o600
    plan = T.Plan(3)
    plan.load_keys(os.path.join(wd, "plan.json"))
    assert f"in-key = 0x{plan.keys[2][0]}" in out      # the DUT decrypts with to_dut
    assert T.main(["--tunnels", "3", "--emit-peer-config", "xfrm", "--workdir", wd]) == 0
    x = capsys.readouterr().out
    assert x.count("ip xfrm state add") == 6 and "rfc4106(gcm(aes))" in x
    with pytest.raises(ValueError):
        T.Plan(4).load_keys(os.path.join(wd, "plan.json"))


def test_emit_peer_config_a_peer_per_tunnel(tmp_path, capsys):
    """--outer-addresses / --nat-t-ports in every emitted DUT config: each
    tunnel's remote its own address (and port), the prefix routed via the
    tester; a run with other options refuses the saved keys."""
    wd = str(tmp_path / "wd")
    opts = ["--tunnels", "3", "--outer-addresses", "10.128.0.0/14", "--nat-t-ports", "5000",
            "--workdir", wd]
    assert T.main([*opts, "--emit-peer-config", "dpvpn"]) == 0
    out = capsys.readouterr().out
    assert "[route tester-outer]\ndst = 10.128.0.0/14\nport = outside\nvia = 198.19.0.2\n" in out
    for i in range(3):
        assert f"remote = 10.128.0.{i + 1}\n" in out and f"remote-port = {5000 + i}\n" in out
    assert out.count("encap = udp\n") == 3
    assert T.main([*opts, "--emit-peer-config", "xfrm"]) == 0
    x = capsys.readouterr().out
    assert "ip route add 10.128.0.0/14 via 198.19.0.2 dev eth1" in x
    assert "src 10.128.0.3 dst 198.19.0.1 proto esp" in x and "encap espinudp 5002 4500" in x
    assert T.main([*opts, "--emit-peer-config", "swanctl"]) == 0
    w = capsys.readouterr().out
    assert "remote_addrs = 10.128.0.2" in w and "ip route add 10.128.0.0/14" in w
    with pytest.raises(ValueError, match="outer_addresses"):
        T.Plan(3).load_keys(os.path.join(wd, "plan.json"))
    T.Plan(3, outer_addresses="10.128.0.0/14", nat_t_ports=5000).load_keys(
        os.path.join(wd, "plan.json"))


TBF_20MBIT = ["tbf", "rate", "20mbit", "burst", "4kb", "limit", "10kb"]


def shaped_ndr(tester, direction, what):
    """The NDR (exceed ratio 0, 1 s trials, 1 % width) of one direction at
    64 B whose ESP crosses TBF_20MBIT: within 5 % of 20 Mbit/s in ESP frames."""
    expect = 20e6 / (8 * esp_frame(64))
    goal = T.mlr.Goal("NDR", 0.0, exceed_ratio=0.0, relative_width=0.01,
                      initial_trial_duration=1.0, final_trial_duration=1.0,
                      duration_sum=1.0, preceding_targets=1)
    cfg = T.mlr.Config(goals=(goal,), min_load=expect / 4, max_load=expect * 3,
                       search_duration_max=120)
    res = T.search(tester, [64], [direction], config=cfg)
    ndr = res.goals["NDR"].relevant_lower_bound
    print(f"{what}: expected {expect:.0f} pps, NDR {ndr:.0f} pps, {len(res.trials)} trials")
    assert ndr is not None and abs(ndr - expect) <= 0.05 * expect, (ndr, expect, res.trials)


@pytest.mark.nosan
def test_shaped_dut_ndr_matches_the_shaped_rate():
    """Known capacity through a real DUT: the dpvpn gateway's outside link is
    shaped to 20 Mbit/s (tc tbf, as in the back-to-back case); the NDR of the
    DUT-encap stream (its ESP crosses the shaper) is within 5 % of that rate
    in ESP frames."""
    with Pair(2, shape_out=TBF_20MBIT) as p:
        p.warm()
        shaped_ndr(p.tester, "dut_encap", "DUT shaped to 20 Mbit/s")


# ---- known ground truth: back-to-back through a Linux router namespace ----

ESP_GCM_OVERHEAD = 20 + 8 + 8 + 16      # outer IPv4, ESP header, IV, ICV (AES-GCM)


def esp_frame(size):
    """Bytes of the Ethernet frame (no FCS) that carries a clear frame of
    size through an AES-GCM tunnel: the inner IP packet, ESP trailer (pad
    length, next header) padded to 4, the overhead, Ethernet."""
    inner = size - 14
    return 14 + ESP_GCM_OVERHEAD + (inner + 2 + 3) // 4 * 4


class Loop(lab.Managed):
    """The tester alone, back to back (Plan.loop_config): port B's ESP goes
    through a router namespace (Linux forwarding, the qdisc given on its way
    out to port C) and comes back on port C, where the tester decrypts it.

      tester B (198.19.0.2) == t-b | r-b (198.19.0.1) [router] r-c (198.19.1.1) | t-c == tester C (198.19.1.2)
    """

    def __init__(self, tunnels, qdisc=(), nft=None):
        """qdisc: tc qdisc on r-c (the way to port C); nft: an nftables rule
        in the router's forward hook."""
        self.nft = nft
        self.tag = secrets.token_hex(2)
        self.ns, self.rtr = f"dpvpn-{self.tag}-tst", f"dpvpn-{self.tag}-rtr"
        self.dir = tempfile.mkdtemp(prefix="dpvpn-tester-")
        self.plan = T.Plan(tunnels)
        self.qdisc = list(qdisc)
        self.tester = None

    def open(self):
        for n in (self.ns, self.rtr):
            lab.sh("ip", "netns", "add", n)
        for a, b, addr in (("t-b", "r-b", "198.19.0.1/24"), ("t-c", "r-c", "198.19.1.1/24")):
            link(self.ns, a, self.rtr, b, addr)
        lab.sh("ip", "netns", "exec", self.rtr, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        if self.qdisc:
            lab.sh("ip", "netns", "exec", self.rtr, "tc", "qdisc", "add", "dev", "r-c",
                   "root", *self.qdisc)
        if self.nft:
            nft = ["ip", "netns", "exec", self.rtr, "nft"]
            lab.sh(*nft, "add table ip loss")
            lab.sh(*nft, "add chain ip loss forward_loss { type filter hook forward priority 0; }")
            lab.sh(*nft, f"add rule ip loss forward_loss {self.nft}")
        self.tester = T.Tester(self.plan, ["net_null0,no-rx=1", "net_af_packet0,iface=t-b",
                                           "net_af_packet1,iface=t-c"],
                               self.dir, ["-l", "0-1", "--main-lcore", "0"], self.ns, loop=True)
        self.tester.start(60)

    def close(self):
        if self.tester is not None:
            self.tester.stop()
        for n in (self.ns, self.rtr):
            lab.sh("ip", "netns", "del", n, check=False)

    def warm(self):
        """Neighbours resolved before the measured trials (and something back
        round the loop: all of it, unless the path drops on purpose)."""
        for _ in range(20):
            s = self.tester.trial(0, 1000, 0.2, [64])
            x = s["dut_decap"]
            if x["received"] == x["sent"] > 0 or (self.nft or self.qdisc) and x["received"] > 100:
                return
        raise AssertionError(f"nothing came back round the loop: {s}")


def test_loop_delivers_every_packet():
    """Back to back with a plain router: 8 tunnels, every packet back and
    decrypted by the tester's own mirror SAs, per tunnel."""
    with Loop(8) as lp:
        lp.warm()
        s = lp.tester.trial(0, 8000, 1.0, [64, 512, 1400])
        x = s["dut_decap"]
        # (8000 asked for; fewer only if the generator's CPU stalled: behind)
        assert x["sent"] > 4000 and x["received"] == x["sent"], s
        per = lp.tester.tunnels()
        assert all(t["d_received"] == t["d_sent"] > 400 for t in per.values()), per


@pytest.mark.nosan
def test_loop_tbf_ndr_matches_the_shaped_rate():
    """Known capacity: the router shapes the ESP to 20 Mbit/s (tc tbf, a
    4 KB bucket and a 10 KB queue).  The NDR MLRsearch finds (exceed ratio 0,
    1 s trials, 1 % width) is within 5 % of the rate in frames of the size
    the ESP has on that link."""
    with Loop(2, TBF_20MBIT) as lp:
        lp.warm()
        shaped_ndr(lp.tester, "dut_decap", "tbf 20 Mbit/s, back to back")


def netem_available():
    ns = f"dpvpn-{secrets.token_hex(2)}-nq"
    lab.sh("ip", "netns", "add", ns)
    try:
        lab.sh("ip", "-n", ns, "link", "add", "qa", "type", "veth", "peer", "name", "qb")
        return lab.sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "qa", "root",
                      "netem", "loss", "1%", check=False).returncode == 0
    finally:
        lab.sh("ip", "netns", "del", ns, check=False)


@pytest.mark.nosan
def test_loop_random_loss_is_measured():
    """Known loss: 2 % of the ESP dropped at random on the way (netem where
    the kernel has it, else nftables' numgen random mod 50); the loss the
    tester measures over 40 000 packets is 2 % within 0.35 % (4 sigma),
    every packet is either received or lost, none twice, and the loss per
    tunnel is the gap in the ESP sequence numbers its SA received."""
    how = (dict(qdisc=["netem", "loss", "2%"]) if netem_available() else
           dict(nft="numgen random mod 50 == 0 drop"))
    with Loop(4, **how) as lp:
        lp.warm()
        # esp_gap is the highest sequence number accepted after the trial
        # minus the one before it, less the packets accepted: a packet lost
        # at the very end of the warm-up (its tail) is counted in the next
        # trial's gap.  Carry it over (what two CI runs of 2026-11-26 saw:
        # tunnel 3's gap 181 for a loss of 180).
        carry = {i: max(0, t["d_sent"] - t["d_received"] - t["d_esp_gap"])
                 for i, t in lp.tester.tunnels().items()}
        s = lp.tester.trial(0, 20000, 2.0, [64])
        x = s["dut_decap"]
        loss = x["lost"] / x["sent"]
        # every packet lost was lost on the ESP leg: the sequence-number gaps
        # on port C's inbound SAs in the trial say the same, tunnel by tunnel
        per = lp.tester.tunnels()
        per_gap = {i: t["d_esp_gap"] for i, t in per.items()}
        # but a loss after a stream's last received packet (its tail) has no
        # later sequence number to show it: 1 trial in ~12 loses one of the 4
        # tunnels' last packets at 2 %; 3 in a row: 1 in 30 000
        tail = {i: t["d_sent"] - t["d_received"] - (per_gap[i] - carry[i])
                for i, t in per.items()}
        assert all(0 <= n <= 2 for n in tail.values()), (tail, per_gap, carry, x)
        print(f"2 % random loss ({how}): sent {x['sent']}, lost {x['lost']} "
              f"({100 * loss:.2f} %)")
        assert x["sent"] > 38000 and abs(loss - 0.02) <= 0.0035, x
        assert x["duplicated"] == 0 and x["received"] + x["lost"] == x["sent"], x
        assert all(0 < t["d_sent"] - t["d_received"] < 0.05 * t["d_sent"] for t in per.values())


def test_calibration_back_to_back(tmp_path):
    """The tester's own capacity over crossed rings (--tester-loop): every
    frame label measured, a latency bias for each; far above what the
    af_packet lab can carry (a broken loop would give 0)."""
    cal = T.calibrate(2, [[64], list(T.IMIX)], str(tmp_path), ["-l", "0-1"], seconds=0.5)
    print(cal)
    assert set(cal["pps"]) == {"64", "IMIX"}, cal
    assert all(v > 2e5 for v in cal["pps"].values()), cal
    assert all(v > 0 for v in cal["latency_p50_ns"].values()), cal


def test_calibration_two_workers(tmp_path):
    """The back-to-back loop with two workers (three lcores on the two
    CPUs): frames a worker hands to the other carry their port in the
    mbuf, which the ring PMD does not write; before that was set in the
    hand-off, every frame was taken for one of the sending port's and
    nothing came back (a 16-core rig measured 0 pps with 2 to 8 workers)."""
    t = T.Tester(T.Plan(8), ["net_null0,no-rx=1"], str(tmp_path), ["--lcores", "0@0,1@1,2@1"],
                 name="calibration", loop="rings")
    try:
        t.start()
        t.trial(0, 1000, 0.2, [64])         # neighbours resolved
        s = t.trial(0, 2000, 0.5, [64])
        assert s["dut_decap"]["received"] == s["dut_decap"]["sent"] > 500, s
        assert t.gw.ctl("show", "counters")["handoff"] > 0
    finally:
        t.stop()


@pytest.mark.slow
def test_command_line_run_against_a_dut(tmp_path, capsys):
    """dpvpn-tester end to end as a user runs it: --emit-peer-config dpvpn
    --ike for the DUT, then a run with IKE (capacity, set-up rate search,
    both frame sizes' searches with short trials, rekeys at 50 and 90 % of
    NDR) with calibration, the JSON, the plots, the Markdown; then --compare
    of two reports."""
    with Pair(4, ike=True, paced=True) as p:  # the pair's own tester is not used
        p.tester.stop()
        p.tester = None
        wd = str(tmp_path / "wd")
        os.makedirs(wd)
        p.plan.save(os.path.join(wd, "plan.json"))     # what the DUT was given
        T.private_file(os.path.join(wd, "ike.psk"), p.plan.psk_text() + "\n")
        js, plots = str(tmp_path / "r.json"), str(tmp_path / "plots")
        rc = T.main(["--tunnels", "4", "--workdir", wd, "--netns", p.ns, "--ike",
                     "--vdev-a", "net_af_packet0,iface=t-a", "--vdev-b", "net_af_packet1,iface=t-b",
                     "--lcores", "0-1", "--sizes", "64,imix", "--trial", "0.2",
                     "--duration-sum", "0.4", "--min-load", "1e4", "--max-load", "2e6",
                     "--capacity", "--setup-rate", "--setup-min", "20", "--setup-max", "80",
                     "--setup-deadline", "2", "--rekey-rate", "2", "--rekey-seconds", "2",
                     "--json", js, "--plots", plots])
    out = capsys.readouterr()
    assert rc == 0, out
    assert "| 64 |" in out.out and "| IMIX |" in out.out and "Tester capacity" in out.out, out.out
    assert "## IKE set-up rate" in out.out and "## Rekeys under load" in out.out, out.out
    assert "Held at once, traffic crossing each both ways: **4** of 4" in out.out, out.out
    assert "trial " in out.err and " Mpps " in out.err       # the progress lines
    assert "setup " in out.err
    with open(js) as f:
        doc = json.load(f)
    assert [r["sizes"] for r in doc["results"]] == [[64], list(T.IMIX)]
    assert all(r["search"]["trials"] for r in doc["results"]) and doc["calibration"]["pps"]
    assert doc["setup"]["rate_per_s"] == 80 and doc["setup"]["trials"], doc["setup"]
    assert doc["capacity"]["held"] == 4 and doc["capacity"]["at_least"], doc["capacity"]
    rk = doc["rekey"]["points"]
    print(json.dumps(rk))
    assert set(rk) == {"50", "90"} and all(x["rekeys"] == 4 and x["refused"] == 0
                                           for x in rk.values()), rk
    assert any(n.endswith(".png") for n in os.listdir(plots))
    assert T.main(["--compare", js, js]) == 0
    assert "1.00" in capsys.readouterr().out


# ---- IKEv2: the tester initiates every tunnel ----

def test_ike_all_at_once_then_traffic():
    """20 tunnels keyed by IKEv2 (PSK), the tester initiating them all at
    once against a dpvpn DUT (which tells them apart by identity): each
    carries traffic both ways; the set-up is timed by the first packets, and
    what was sent before a tunnel was up is counted as lost, not hidden."""
    with Pair(20, ike=True, start_tester=False) as p:
        r = T.setup_rate(p.tester, 20, seconds=8.0)
        print(r)
        assert r["up"] == 20 and r["failed"] == [], r
        assert 0 < r["first_packet_s"]["min"] <= r["first_packet_s"]["max"] < 8.0, r
        assert r["rate_per_s"] > 0 and sum(r["lost_while_setting_up"].values()) > 0, r
        s = p.tester.trial(2000, 2000, 0.5, [64, 1400])
        assert all(s[d]["received"] == s[d]["sent"] > 800 for d in T.DIRS), s


@pytest.mark.scale
def test_dpvpnd_restart_under_load_loses_nothing():
    """[scale] issue 28 req. 3, a dpvpnd-only restart: 40 tunnels keyed by
    IKEv2 (PSK, the tester initiating) carry 4 000 pps each way while the
    DUT's dpvpnd is killed (-9) and a new one takes over the running
    dataplane: no packet of any tunnel lost, every IKE SA taken up again,
    the DUT's SAs the same ones (SPIs) after, no CHILD_SA made again."""
    n = 40
    with Pair(n, ike=True, start_tester=False) as p:
        r = T.setup_rate(p.tester, n, seconds=5.0)
        assert r["up"] == n and r["failed"] == [], r
        p.warm()
        before = p.dut.sa_ids()
        ups = p.tester.gw.dpvpnd.output().count("IKE CHILD_SA up")
        assert len(before) == 2 * n and ups >= n, (before, ups)
        x = T.restart_under_load(p.tester, lambda: p.dut.restart_dpvpnd("r1"), 4000, 4.0)
        x.pop("stats")
        print(x)
        assert x["restart_s"] is not None and x["tunnels"] == n, x
        assert x["lost"] == {d: 0 for d in T.DIRS} and x["tunnels_with_loss"] == 0, x
        out = p.dut.dpvpnd.output()
        assert f"{n} of {n} IKE SAs taken up again" in out, out
        assert all(v > 4000 for v in x["sent"].values()), x
        assert p.dut.sa_ids() == before
        assert p.tester.gw.dpvpnd.output().count("IKE CHILD_SA up") == ups


@pytest.mark.scale
def test_whole_restart_under_load_comes_back(monkeypatch):
    """[scale] issue 28 req. 3, the whole gateway: 40 tunnels keyed by IKEv2
    (PSK), the DUT initiating, carry 4 000 pps each way while both DUT
    processes are killed (-9) and started again with nothing kept.  The new
    dpvpnd initiates every tunnel with INITIAL_CONTACT; the tester's dpvpnd
    ends its IKE SAs of before on it (not after its liveness checks give up,
    30 s and more), so every tunnel carries traffic both ways again within
    the trial, each measured by the tester (its longest gap), and the tester
    holds one IKE SA a tunnel, the new ones.  The DUT's start window is 8
    (DPVPND_IKE_START_WINDOW): its 40 initiations at each start go 8 at a
    time, the next as one comes up."""
    n = 40
    monkeypatch.setenv("DPVPND_IKE_START_WINDOW", "8")
    with Pair(n, ike=True, dut_initiates=True) as p:
        assert p.all_up(4000, 30) is not None
        before = p.dut.sa_ids()
        x = T.restart_under_load(p.tester, lambda: p.dut.restart_whole("w1"), 4000, 12.0,
                                 at=1.0)
        x.pop("stats")
        print(x)
        assert x["tunnels"] == n and x["back"] == n and x["not_back"] == [], x
        assert x["outage_s"]["max"] < 11.0, x
        assert x["tunnels_with_loss"] == n, x     # the DUT was down: every tunnel lost some
        assert p.tester.gw.dpvpnd.output().count("the peer started again (INITIAL_CONTACT)") \
            == n
        assert p.dut.dpvpnd.output().count("IKE CHILD_SA up") == n
        sas = p.tester.gw.ctl("show", "ike")
        assert len(sas["sas"]) == n and sas["stats"]["initial_contact"] == n, sas["stats"]
        assert not set(p.dut.sa_ids()) & set(before)


@pytest.mark.nosan
def test_ike_paced_setup_and_rekeys_under_load():
    """Paced set-up (20 tunnels initiated at 20 a second): every one up, its
    first packet both ways soon after its initiation; then CHILD_SA rekeys
    (4 a second) under 4000 pps: each rekey done, the loss per rekey counted
    (make-before-break: next to none)."""
    with Pair(20, ike=True, start_tester=False, paced=True) as p:
        r = T.setup_rate(p.tester, 20, seconds=3.0, rate=20)
        print(r)
        assert r["up"] == 20 and r["failed"] == [], r
        assert r["first_packet_s"]["max"] < 1.0, r
        x = T.rekey_under_load(p.tester, 4000, 2.0, 4)
        s = x.pop("stats")
        print(x)
        assert x["rekeys"] == 8 and x["refused"] == 0, x
        assert x["lost"] == sum(s[d]["sent"] - s[d]["received"] for d in T.DIRS), x
        assert x["lost_per_rekey"] <= 2, x
        # 4000 pps over 20 tunnels: 100 a second per stream, 10 ms apart; a rekey
        # that held a stream for a second would show
        assert 0 < x["gap_max_us"] < 500_000, x
        lab.wait_for(lambda: p.tester.gw.dpvpnd.output().count("IKE CHILD_SA rekeyed") >= 8,
                     5, "8 rekeys in the tester's log")


@pytest.mark.slow
@pytest.mark.parametrize("outer", [pytest.param(None, marks=pytest.mark.long),
                                   "198.19.128.0/17"])
def test_thousand_static_tunnels(outer):
    """1 000 statically keyed tunnels through a dpvpn DUT (all from one tester
    address, or each from its own: 1 000 peers behind one route on the DUT):
    every tunnel's packets, both ways, all back."""
    with Pair(1000, outer_addresses=outer) as p:
        p.warm()
        s = p.tester.trial(20000, 20000, 1.0, [64])
        assert all(s[d]["received"] == s[d]["sent"] > 15000 for d in T.DIRS), s
        per = p.tester.tunnels()
        assert len(per) == 1000
        bad = [i for i, t in per.items()
               if not (t["e_received"] == t["e_sent"] > 0 and t["d_received"] == t["d_sent"] > 0)]
        assert bad == [], bad[:10]
        # nothing lost, no hole in any tunnel's ESP sequence numbers (SA snapshots of 2 000 SAs)
        assert all(t["e_esp_gap"] == 0 and t["e_icv_failures"] == 0 for t in per.values())


# long (CI's budget: 41 s): test_thousand_static_tunnels keeps 1 000 tunnels
# and test_ike_paced_setup_and_rekeys_under_load paced IKE set-up in the default pass
@pytest.mark.long
def test_thousand_ike_tunnels_paced():
    """1 000 tunnels keyed by IKEv2, initiated at 100 a second: all up (a
    packet both ways on each).  Most within the 16 s trial; on a host whose
    CPUs other work holds (CI beside other jobs: 982 of 1 000 in one run,
    the last after 8.9 s) some need their retransmissions (0.5 s, doubled
    each time), so those get up to 5 more trials of 3 s: every one of the
    1 000 must carry traffic."""
    with Pair(1000, ike=True, start_tester=False, paced=True) as p:
        r = T.setup_rate(p.tester, 1000, seconds=16.0, per_tunnel_pps=2, rate=100)
        print({k: v for k, v in r.items() if k != "failed"})
        late = set(r["failed"])
        for _ in range(5):
            if not late:
                break
            p.tester.trial(2000, 2000, 3.0, [64])
            late = {i for i in late if not all(p.tester.tunnels(i, 1)[i][f"{d}_received"]
                                               for d in ("e", "d"))}
        assert not late, sorted(late)[:10]


# ---- strongSwan (charon, kernel-libipsec) as the device under test ----

class SwanDut(lab.Managed):
    """charon in a namespace of its own forwarding between d-in and d-out,
    its ESP in userspace (kernel-libipsec: UDP encapsulation), keyed from
    the tester's --emit-peer-config swanctl; the tester as in Pair."""

    def __init__(self, tunnels):
        import swan
        self.swan = swan
        self.tag = secrets.token_hex(2)
        self.ns, self.dns = f"dpvpn-{self.tag}-tst", f"dpvpn-{self.tag}-dut"
        self.dir = tempfile.mkdtemp(prefix="dpvpn-tester-swan-")
        self.plan = T.Plan(tunnels)
        self.plan.use_ike(os.path.join(self.dir, "ike.psk"))
        self.plan.encap_udp = True
        self.plan.ike_proposal = swan.IKE_PROPOSAL
        self.tester = self.charon = None

    def open(self):
        for n in (self.ns, self.dns):
            lab.sh("ip", "netns", "add", n)
            lab.sh("ip", "-n", n, "link", "set", "lo", "up")
        for a, b, addr in (("t-a", "d-in", "198.18.1.1/24"), ("t-b", "d-out", "198.19.0.1/24")):
            link(self.ns, a, self.dns, b, addr)
        lab.sh("ip", "netns", "exec", self.dns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        sw = self.swan
        self.charon = sw.Charon("charon", self.dns, self.dir, "198.19.0.1", "198.19.0.2",
                                "198.18.1.0/24", "100.64.0.0/32", "aes128gcm16")
        T.private_file(os.path.join(self.charon.dir, "swanctl", "swanctl.conf"),
                       self.plan.dut_config_swanctl(self.plan.psk_text()))
        self.charon.start()
        self.tester = T.Tester(self.plan, ["net_af_packet0,iface=t-a",
                                           "net_af_packet1,iface=t-b"],
                               self.dir, ["-l", "0-1", "--main-lcore", "0"], self.ns)
        self.tester.start(60)

    def close(self):
        if self.tester is not None:
            self.tester.stop()
        if self.charon is not None:
            self.charon.stop()
        for n in (self.ns, self.dns):
            lab.sh("ip", "netns", "del", n, check=False)


@pytest.mark.strongswan
def test_against_strongswan():
    """strongSwan (charon, kernel-libipsec) as the DUT, keyed from the
    tester's swanctl output: the tester initiates 3 IKEv2 tunnels (one
    identity each, UDP encapsulation), traffic crosses every one both ways
    with nothing lost at a low rate, and a short NDR/PDR search completes."""
    import swan
    why = swan.ensure_installed()
    if why:
        pytest.skip(f"strongSwan: {why}")
    with SwanDut(3) as d:
        ok = None
        for _ in range(40):         # IKE, then ARP on both sides
            s = d.tester.trial(300, 300, 0.3, [64])
            per = d.tester.tunnels()
            ok = all(t["e_received"] and t["d_received"] for t in per.values())
            if ok:
                break
        assert ok, (per, d.tester.gw.dpvpnd.output()[-2000:], d.charon.log_text()[-3000:])
        s = d.tester.trial(600, 600, 1.0, [64, 1400])
        assert all(s[dd]["received"] == s[dd]["sent"] > 500 for dd in T.DIRS), s
        goal = dict(exceed_ratio=0.5, relative_width=0.1, initial_trial_duration=0.3,
                    final_trial_duration=0.3, duration_sum=0.6, preceding_targets=1)
        cfg = T.mlr.Config(goals=(T.mlr.Goal("NDR", 0.0, **goal), T.mlr.Goal("PDR", 0.005, **goal)),
                           min_load=500, max_load=2e5, search_duration_max=60)
        res = T.search(d.tester, [64], list(T.DIRS), config=cfg)
        print({n: (g.relevant_lower_bound, g.relevant_upper_bound) for n, g in res.goals.items()})
        assert all(g.relevant_lower_bound for g in res.goals.values()), res.goals


def test_imix_mix_per_direction(tmp_path):
    """IMIX is 7:4:1 in each direction, both at once (each cycles the sizes
    alone; they once shared one cycle and the mix of each depended on the
    burst sizes), and every frame, 1514 B included, comes back round the
    calibration loop (its ports take jumbo frames)."""
    t = T.Tester(T.Plan(2), ["net_null0,no-rx=1"], str(tmp_path), ["-l", "0-1"],
                 name="imix", loop="rings")
    try:
        t.start()
        t.trial(0, 1000, 0.2, [64])
        s = t.trial(12000, 12000, 1.0, list(T.IMIX))
    finally:
        t.stop()
    mean = sum(T.IMIX) / len(T.IMIX)
    for d in T.DIRS:
        x = s[d]
        assert x["sent"] > 10000 and abs(x["sent_bytes"] / x["sent"] - mean) < 1.0, (d, x)
    x = s["dut_decap"]      # the encap stream's cleartext goes to net_null: only decap returns
    assert x["received"] == x["sent"] and x["received_bytes"] == x["sent_bytes"], x


@pytest.mark.slow
@pytest.mark.long
def test_setup_rate_search_finds_the_duts_ike_limit():
    """The set-up rate search against a DUT whose dataplane passes its IKE
    daemon at most r = 20 IKE messages a second after a burst of B = 16
    (--ike-rate, one worker).  A tunnel takes two requests from the tester
    (IKE_SA_INIT, IKE_AUTH), so N = 40 tunnels initiated at R a second, each
    up within D = 1 s, need 2N <= B + r (N/R + D) messages passed: R <=
    r N / (2N - B - r D) = 18.2 a second, the ground truth's ceiling (a
    dropped request waits 0.5 s for its retransmission, so the rate found
    may be lower, not higher).  The search finds a rate under that ceiling
    and not far below it, not the tester's own (hundreds a second)."""
    n, r_msg, burst, deadline = 40, 20, 16, 1.0
    ceiling = r_msg * n / (2 * n - burst - r_msg * deadline)
    with Pair(n, ike=True, start_tester=False, paced=True,
              dut_args=["--ike-rate", str(r_msg)]) as p:
        p.tester.start(60)
        r = T.setup_rate_search(p.tester, min_rate=8, max_rate=200, deadline=deadline,
                                precision=0.2, progress=sys.stderr, settle=1.0)
        print({k: v for k, v in r.items() if k != "trials"})
        for t in r["trials"]:
            print(t)
        assert r["rate_per_s"] is not None and r["upper_bound_per_s"] is not None, r
        assert 0.4 * ceiling <= r["rate_per_s"] <= 1.1 * ceiling, (ceiling, r)
        assert all(t["failed"] == 0 for t in r["trials"] if t["passed"]), r
        assert any(t["failed"] > 0 for t in r["trials"]), r
        assert r["first_packet_s"]["max"] <= deadline, r


@pytest.mark.nosan
def test_capacity_finds_the_duts_sa_table():
    """Capacity against a DUT whose dataplane has room for 24 SAs (--max-sa;
    a tunnel holds two, one each way): of the tester's 16 tunnels 12 are
    held at once, traffic crossing each both ways; the rest fail, counted."""
    with Pair(16, ike=True, start_tester=False, paced=True,
              dut_args=["--max-sa", "24"]) as p:
        p.tester.start(60)
        r = T.capacity(p.tester, rate=50, deadline=2.0, hold=1.0)
        print(r)
        assert r["offered"] == 16 and r["held"] == 12 and not r["at_least"], r
        assert r["setup"]["set_up"] == 12 and r["setup"]["failed"] == 4, r


def outer_peers(frames, dut="198.19.0.1"):
    """What the DUT's outside link carried: ({(tester address, UDP port or None)} of
    ESP to the DUT, the same of ESP from it)."""
    from scapy.all import IP, UDP
    to_dut, from_dut = set(), set()
    for f in frames:
        if IP not in f or f[IP].proto not in (50, 17):
            continue
        ip = f[IP]
        port = None
        if ip.proto == 17:
            if 4500 not in (ip[UDP].sport, ip[UDP].dport):
                continue
            port = ip[UDP].sport if ip.dst == dut else ip[UDP].dport
        if ip.dst == dut:
            to_dut.add((ip.src, port))
        elif ip.src == dut:
            from_dut.add((ip.dst, port))
    return to_dut, from_dut


def every_packet(p, tunnels):
    """A trial both ways: every packet of every tunnel through the DUT."""
    s = p.tester.trial(2000, 2000, 0.5, [64, 1400])
    assert all(s[d]["received"] == s[d]["sent"] > 800 for d in T.DIRS), s
    per = p.tester.tunnels()
    assert sorted(per) == list(range(tunnels))
    for i, t in per.items():
        for k in ("e", "d"):
            assert t[f"{k}_sent"] > 50 and t[f"{k}_received"] == t[f"{k}_sent"], (i, t)
    return s


def test_outer_address_per_tunnel():
    """Requirement 2: 8 tunnels, each from its own tester address (port B's
    extra-addresses 198.19.128.0/17, .1 to .8): every packet crosses both
    ways, the DUT's outside link carries ESP from and to 8 distinct peers
    (tcpdump at both ends), its SAs name them, and the tester answers ARP for an
    address of the prefix that no tunnel uses (a gateway's block of
    addresses), from the address asked."""
    want = {(f"198.19.128.{i + 1}", None) for i in range(8)}
    with Pair(8, outer_addresses="198.19.128.0/17") as p:
        p.warm()
        stop = p.capture()
        every_packet(p, 8)
        to_dut, from_dut = outer_peers(stop())
        assert to_dut == want and from_dut == want, (to_dut, from_dut)
        sas = p.dut.ctl("show", "sa")["sas"]
        assert {sa["remote"] for sa in sas} == {a for a, _ in want}, sas
        ports = {x["id"]: x for x in p.tester.gw.ctl("show", "ports")["ports"]}
        assert ports[1]["extra_addresses"] == "198.19.128.0/17", ports
        assert ports[0]["extra_addresses"] is None, ports
        # ARP for an extra address no tunnel uses: answered, as that address
        out = lab.sh("ip", "netns", "exec", p.ns, "/usr/bin/python3", "-c",
                     "from scapy.all import ARP, Ether, srp1\n"
                     "r = srp1(Ether(dst='ff:ff:ff:ff:ff:ff') / ARP(pdst='198.19.200.7', "
                     "psrc='198.19.0.9'), iface='d-out', timeout=3, retry=3, verbose=False)\n"
                     "print(r[ARP].op, r[ARP].psrc) if r else print('none')",
                     timeout=30).stdout
        assert out.split() == ["2", "198.19.200.7"], out


@pytest.mark.parametrize("outer", [None, "198.19.128.0/17"])
def test_nat_t_port_per_tunnel(outer):
    """Requirement 2 with NAT-T: 8 tunnels in UDP, one tester address (or
    one each as well), each from its own UDP port (4600 + i) to the DUT's
    4500: every packet crosses both ways and the DUT's outside link carries
    8 distinct (address, port) peers, both ways; the DUT's SAs say so."""
    want = {(f"198.19.128.{i + 1}" if outer else "198.19.0.2", 4600 + i) for i in range(8)}
    with Pair(8, nat_t_ports=4600, outer_addresses=outer) as p:
        p.warm()
        stop = p.capture()
        every_packet(p, 8)
        to_dut, from_dut = outer_peers(stop())
        assert to_dut == want and from_dut == want, (to_dut, from_dut)
        encaps = {sa["encap"] for sa in p.dut.ctl("show", "sa")["sas"]}
        assert encaps == {f"udp 4500->{4600 + i}" for i in range(8)}, encaps


@pytest.mark.slow
def test_ike_outer_address_per_tunnel():
    """IKEv2 from a tester address per tunnel: dpvpnd initiates each tunnel
    from its own extra address (IKE_TX from it), the DUT answers there, and
    its IKE-made SAs name 8 distinct peers; traffic crosses every tunnel."""
    with Pair(8, ike=True, start_tester=False, outer_addresses="198.19.128.0/17") as p:
        r = T.setup_rate(p.tester, 8, seconds=8.0)
        assert r["up"] == 8 and r["failed"] == [], r
        every_packet(p, 8)
        sas = p.dut.ctl("show", "sa")["sas"]
        assert {sa["remote"] for sa in sas} == {f"198.19.128.{i + 1}" for i in range(8)}, sas


@pytest.mark.slow
def test_ike_nat_t_port_per_tunnel():
    """IKEv2 with a UDP port per tunnel: dpvpnd talks IKE from each
    tunnel's local-port (4600 + i) to the DUT's 4500 once in UDP, the
    dataplane takes the answers there, and the DUT, which sees the tester
    as behind a NAT, sends each tunnel's ESP to its own port: 8 distinct
    (address, port) peers on the link, every packet through."""
    want = {("198.19.0.2", 4600 + i) for i in range(8)}
    with Pair(8, ike=True, start_tester=False, nat_t_ports=4600) as p:
        r = T.setup_rate(p.tester, 8, seconds=8.0)
        assert r["up"] == 8 and r["failed"] == [], r
        stop = p.capture()
        every_packet(p, 8)
        to_dut, from_dut = outer_peers(stop())
        assert to_dut == want and from_dut == want, (to_dut, from_dut)
        encaps = {sa["encap"] for sa in p.dut.ctl("show", "sa")["sas"]}
        assert encaps == {f"udp 4500->{4600 + i}" for i in range(8)}, encaps


def test_outer_options_refused_clearly(tmp_path, capsys):
    """Bad --outer-addresses / --nat-t-ports: one clear line, exit 2; and a
    tester config whose tunnel is outside the port's extra-addresses is
    refused by dpvpnd -n naming the file and line."""
    wd = str(tmp_path / "wd")
    for bad, msg in ((["--outer-addresses", "198.19.0.0/24"], "the DUT's outer address"),
                     (["--outer-addresses", "198.19.128.0/30"], "not the 8 the tunnels need"),
                     (["--outer-addresses", "2001:db8::/64"], "not an IPv4 prefix"),
                     (["--nat-t-ports", "65530"], "not within 1024..65535")):
        with pytest.raises(SystemExit) as e:
            T.main(["--tunnels", "8", *bad, "--emit-peer-config", "dpvpn", "--workdir", wd])
        assert e.value.code == 2 and msg in capsys.readouterr().err, bad
    plan = T.Plan(2, outer_addresses="198.19.128.0/17")
    cfg = tmp_path / "t.conf"
    T.private_file(str(cfg), plan.tester_config().replace("198.19.128.2\n", "198.19.64.2\n"))
    r = lab.sh(os.path.join(lab.BUILD, "control", "dpvpnd"), "-n", "-c", str(cfg), check=False)
    line = plan.tester_config().split("\n").index("local = 198.19.128.2") + 1
    assert r.returncode != 0 and f"{cfg}:{line}: [tunnel t1] local: 198.19.64.2 is not the " \
        "address of an outside port (nor in its extra-addresses)" in r.stdout + r.stderr, r
