# SPDX-License-Identifier: BSD-3-Clause
r"""Two gateways, one set of tunnels ([ha] issue 30): state sync and takeover.

Gateway B of the IKE lab is a pair, B1 and B2, with one [ha] section each:
their dpvpnds, each in a namespace of its own, sync over TLS 1.3 with a
pre-shared key on a link of their own, which a test can cut.  The peer, gateway A, initiates; B1 is made
master (`dpvpnctl ha master`, as keepalived's notify script does) and
answers; B2 stays backup and gets every IKE SA record, CHILD_SA and
sequence reservation.  Then B1 dies (kill -9 of both processes) and B2 takes
over: the same IKE SA and CHILD_SA SPIs, no IKE_SA_INIT on the wire, pings
through, no (SPI, sequence number) sent twice, and a rekey afterwards.

Each node has its own addresses (outside 198.19.0.3 and .4, inside
198.18.2.3 and .4) and the pair's virtual ones: 198.19.0.2, the tunnel's
local, and 198.18.2.1, host B's gateway.  The master's dataplane holds them
(ARP answered, ESP and IKE taken) and announces them with a gratuitous ARP
when it takes over; the backup's answers nothing for them.  keepalived is
stood in for by `dpvpnctl ha master`, the command its notify script runs.

    host A == gateway A (gwa-out) ==[br-out]== B1 ==[br-in]== host B
                                         \== B2 ==/
    B1's dpvpnd (namespace s1) 10.255.0.1 ==sync== 10.255.0.2 B2's dpvpnd (s2)
"""
import json
import os
import re
import secrets
import shutil
import tempfile

import pytest
from scapy.all import ESP, IP, UDP, rdpcap

import lab
from test_dpvpnd_restart import ike_sa_inits
from test_ike_lab import child_of, ike, psk_file, pskdir  # noqa: F401

pytestmark = [pytest.mark.ha, pytest.mark.ike]

OWN = {"b1": 3, "b2": 4}        # each node's own host number on both links


class Pair(lab.Managed):
    """Gateway A and the pair B1/B2 in one namespace, hosts in their own."""

    VIPS = "virtual-address = outside 198.19.0.2/24\nvirtual-address = inside 198.18.2.1/24\n"

    def __init__(self, psk, seq_block=1024, keepalived=False, ike_a="", gateway_a=True,
                 ike_b="", extra_a="", extra_b="", vips=VIPS, preempt=False, static=False):
        """keepalived: each node of the pair in its namespace (s1, s2) with its
        dataplane, dpvpnd and keepalived, the ports' twins (host-interface)
        carrying VRRP; its notify scripts run dpvpnctl ha.  gateway_a=False:
        no gateway A, a Linux router in its place (namespace ns_pa, gwa-in
        198.18.1.1 and gwa-out 198.19.0.1) for another peer to run in
        (tests/test_ha_swan.py: strongSwan).  ike_b: more lines for B's
        tunnel; extra_a, extra_b: more config (sections) for gateway A and
        for B1 and B2; vips: the pair's virtual-address lines; preempt:
        keepalived without nopreempt."""
        self.extra_a, self.vips = extra_a, vips
        self.static = static       # the lab's static tunnel (its keys in lab-a/b.conf), no IKE
        self.preempt = preempt     # keepalived: the higher priority takes master back
        self.psk = psk
        self.seq_block = seq_block
        self.keepalived = keepalived
        self.ike_a = ike_a     # more lines for gateway A's tunnel
        self.gateway_a = gateway_a
        self.ike_b = ike_b     # more lines for the pair's tunnel to A
        self.extra_b = extra_b  # more config for B1 and B2 (after [ha])
        self.tag = secrets.token_hex(2)
        self.ns_a, self.ns_b, self.ns_gw = (f"dpvpn-{self.tag}-{x}" for x in ("a", "b", "gw"))
        self.ns_s = {n: f"dpvpn-{self.tag}-s{n[-1]}" for n in ("b1", "b2")}
        self.ns_pa = f"dpvpn-{self.tag}-pa"
        self.more_ns = [] if gateway_a else [self.ns_pa]    # removed by close()
        self.workdir = tempfile.mkdtemp(prefix="dpvpn-ha-")
        self.gws, self.procs = [], []

    def ns(self, ns, *args, **kw):
        return lab.sh("ip", "netns", "exec", ns, *args, **kw)

    def ip(self, ns, *args):
        return lab.sh("ip", "-n", ns, *args)

    def _veth(self, a, b, ns_b=None):
        g = self.ns_gw
        self.ip(g, "link", "add", a, "type", "veth", "peer", "name", b,
                *(["netns", ns_b] if ns_b else []))
        for dev, ns in ((a, g), (b, ns_b or g)):
            self.ns(ns, "ethtool", "-K", dev, "tx", "off", "tso", "off", "gso", "off",
                    "gro", "off", check=False)
            self.ns(ns, "sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1", check=False)
            self.ip(ns, "link", "set", dev, "up")

    def _net(self):
        g = self.ns_gw
        for n in (self.ns_a, self.ns_b, g, *self.ns_s.values(), *self.more_ns):
            lab.sh("ip", "netns", "add", n)
            self.ip(n, "link", "set", "lo", "up")
            self.ns(n, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1", check=False)
        s1, s2 = self.ns_s["b1"], self.ns_s["b2"]
        self.ip(s1, "link", "add", "sync", "type", "veth", "peer", "name", "sync", "netns", s2)
        for i, ns in ((1, s1), (2, s2)):
            self.ip(ns, "addr", "add", f"10.255.0.{i}/30", "dev", "sync")
            self.ip(ns, "link", "set", "sync", "up")
        for br in ("br-out", "br-in"):
            self.ip(g, "link", "add", br, "type", "bridge", "forward_delay", "0")
            self.ns(g, "sysctl", "-qw", f"net.ipv6.conf.{br}.disable_ipv6=1", check=False)
            self.ip(g, "link", "set", br, "up")
        self._veth("gwa-in", "eth0", self.ns_a)
        self._veth("gwa-out", "a-br")
        if not self.gateway_a:      # a Linux router in gateway A's place
            for dev, addr in (("gwa-in", "198.18.1.1/24"), ("gwa-out", "198.19.0.1/24")):
                self.ip(g, "link", "set", dev, "netns", self.ns_pa)
                self.ip(self.ns_pa, "addr", "add", addr, "dev", dev)
                self.ip(self.ns_pa, "link", "set", dev, "up")
            for key in ("ip_forward=1", "conf.all.rp_filter=0", "conf.default.rp_filter=0"):
                self.ns(self.ns_pa, "sysctl", "-qw", "net.ipv4." + key)
        self._veth("hb-br", "eth0", self.ns_b)
        for n in ("b1", "b2"):
            self._veth(f"{n}-out", f"{n}-out-br")
            self._veth(f"{n}-in", f"{n}-in-br")
            if self.keepalived:     # the node's ports in its namespace, its kernel deaf
                for side in ("out", "in"):
                    dev, ns = f"{n}-{side}", self.ns_s[n]
                    self.ip(g, "link", "set", dev, "netns", ns)
                    self.ns(ns, "sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1",
                            check=False)
                    self.ip(ns, "link", "set", dev, "up")
                    chain = dev.replace("-", "_")
                    self.ns(ns, "nft", "add table netdev dpvpn_lab", check=False)
                    self.ns(ns, "nft", f"add chain netdev dpvpn_lab {chain} {{ type filter "
                            f"hook ingress device \"{dev}\" priority 0; policy drop; }}")
        for dev, br in (("a-br", "br-out"), ("hb-br", "br-in"), ("b1-out-br", "br-out"),
                        ("b1-in-br", "br-in"), ("b2-out-br", "br-out"), ("b2-in-br", "br-in")):
            self.ip(g, "link", "set", dev, "master", br)
        for ns, net in ((self.ns_a, 1), (self.ns_b, 2)):
            self.ip(ns, "link", "set", "eth0", "mtu", str(lab.HOST_MTU))
            self.ip(ns, "addr", "add", f"198.18.{net}.2/24", "dev", "eth0")
            self.ip(ns, "route", "add", "default", "via", f"198.18.{net}.1")

    def outside_ns(self, name, addr):
        """A namespace of its own on br-out (eth0, addr as ADDR/LEN), e.g.
        a road warrior's; removed by close().  Its name."""
        ns = f"dpvpn-{self.tag}-{name}"
        lab.sh("ip", "netns", "add", ns)
        self.more_ns.append(ns)
        self.ip(ns, "link", "set", "lo", "up")
        self._veth(f"{name}-br", "eth0", ns)
        self.ip(self.ns_gw, "link", "set", f"{name}-br", "master", "br-out")
        self.ip(ns, "addr", "add", addr, "dev", "eth0")
        return ns

    def sync_link(self, up):
        """The sync link up or down (both ends: a cut cable)."""
        for ns in self.ns_s.values():
            self.ip(ns, "link", "set", "sync", "up" if up else "down")

    def _ha(self, me, other):
        key = os.path.join(self.workdir, "sync.key")
        if not os.path.exists(key):
            with open(os.open(key, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
                f.write(secrets.token_hex(32) + "\n")
        return (f"\n[ha]\nnode = {me}\nlocal = 10.255.0.{me[-1]}\n"
                f"peer = 10.255.0.{other[-1]}\nsync-key = {key}\n"
                "dead-ms = 3000\nheartbeat-ms = 100\n" + self.vips)

    def open(self):
        self._net()
        ike = lab.Lab.__new__(lab.Lab)      # (its config edits only)
        ike.ike = {"psk": self.psk, "a": "start = yes\n" + self.ike_a,
                   "b": "start = no\n" + self.ike_b}
        edit_a, edit_b = lab.Lab._ike_edits(ike) if not self.static else ((), ())
        block = (("[control]\n", f"[control]\nseq-block = {self.seq_block}\n"),)
        self.a = None
        if self.gateway_a:
            self.a = lab.Gateway("gw-a", os.path.join(lab.CONFIGS, "lab-a.conf"),
                                 ["net_af_packet0,iface=gwa-in",
                                  "net_af_packet1,iface=gwa-out,qdisc_bypass=0"],
                                 self.workdir, ["-l", "0-1", "--main-lcore", "1"],
                                 self.ns_gw, replace=edit_a + block,
                                 extra_config=self.extra_a)
            self.gws.append(self.a)
        self.b = {}
        for n, other, lc in (("b1", "b2", "0"), ("b2", "b1", "1")):
            twin = "\nhost-interface = tw-{}" if self.keepalived else ""
            own = (("address = 198.18.2.1/24",
                    f"address = 198.18.2.{OWN[n]}/24" + twin.format("in")),
                   ("address = 198.19.0.2/24",
                    f"address = 198.19.0.{OWN[n]}/24" + twin.format("out")))
            gw = lab.Gateway(n, os.path.join(lab.CONFIGS, "lab-b.conf"),
                             [f"net_af_packet0,iface={n}-in",
                              f"net_af_packet1,iface={n}-out,qdisc_bypass=0"],
                             self.workdir, ["-l", "0-1", "--main-lcore", lc],
                             self.ns_s[n] if self.keepalived else self.ns_gw,
                             replace=edit_b + block + own,
                             extra_config=self._ha(n, other) + self.extra_b)
            gw.dpvpnd_netns = self.ns_s[n]
            self.gws.append(gw)
            self.b[n] = gw
        for gw in self.gws:
            gw.start()
        if self.keepalived:     # B1 first, as a pair is brought up: master alone
            self.start_keepalived("b1", 150)
            lab.wait_for(lambda: show_ha(self.b["b1"])["role"] == "master", 20,
                         "B1's keepalived: master")
            self.start_keepalived("b2", 100)

    def start_keepalived(self, n, prio):
        """keepalived for node n on its twins: VRRP version 3 at 100 ms, the
        virtual addresses on the twins, dpvpnctl ha as its notify scripts
        (configs/keepalived-dpvpn.conf, the lab's addresses)."""
        gw, d = self.b[n], os.path.join(self.workdir, n)
        ctl = f"{lab.DPVPNCTL} -s {gw.ctl_sock} ha"
        conf = os.path.join(d, "keepalived.conf")
        with open(conf, "w") as f:
            f.write(f"""global_defs {{
	router_id {n}
	enable_script_security
	script_user root
	vrrp_version 3
	vrrp_garp_master_repeat 3
}}
vrrp_script dpvpnd_up {{
	script "{lab.DPVPNCTL} -s {gw.ctl_sock} show ha"
	interval 1
	timeout 1
	fall 1
	rise 1
}}
vrrp_instance dpvpn {{
	state BACKUP
	{"" if self.preempt else "nopreempt"}
	interface tw-out
	virtual_router_id 51
	advert_int 0.1
	priority {prio}
	track_interface {{
		tw-in
	}}
	track_script {{
		dpvpnd_up
	}}
	virtual_ipaddress {{
		198.19.0.2/24 dev tw-out
		198.18.2.1/24 dev tw-in
	}}
	notify_master "{ctl} master"
	notify_backup "{ctl} backup"
	notify_fault "{ctl} fault"
}}
""")
        p = lab.Proc(f"keepalived-{n}", ["keepalived", "-n", "-l", "-D", "-P", "-f", conf,
                                         "-p", os.path.join(d, "ka.pid"),
                                         "-r", os.path.join(d, "ka-vrrp.pid")],
                     self.workdir, self.ns_s[n])
        self.procs.append(p)
        return p

    def capture(self, dev, name):
        path = os.path.join(self.workdir, f"{name}.pcap")
        p = lab.Proc("tcpdump-" + name, ["tcpdump", "-i", dev, "--immediate-mode", "-U",
                                         "-w", path], self.workdir, self.ns_gw)
        self.procs.append(p)
        lab.wait_for(lambda: "listening" in p.output(), 10, "tcpdump")
        return p, path

    def ping(self, count=5, timeout=15):
        return self.ns(self.ns_a, "ping", "-c", str(count), "-i", "0.2", "-W", "1",
                       "-w", str(timeout), "198.18.2.2", check=False, timeout=timeout + 5)

    def close(self):
        for p in self.procs:
            p.stop()
        for gw in self.gws:
            gw.stop()
        for n in (self.ns_a, self.ns_b, self.ns_gw, *self.ns_s.values(), *self.more_ns):
            lab.sh("ip", "netns", "del", n, check=False)
        if os.environ.get("DPVPN_KEEP_LAB"):
            print(f"lab: kept {self.workdir}")
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)


def show_ha(gw):
    return gw.ctl("show", "ha")


def b1_master_b2_in_sync(net):
    """B1 made master (as keepalived's notify would) once the channel is up,
    the tunnel A-B1 up, B2 in sync with its CHILD_SA."""
    b1, b2 = net.b["b1"], net.b["b2"]
    lab.wait_for(lambda: show_ha(b2)["peer"]["channel"], 20, "the sync channel up")
    b1.ctl("ha", "master")
    lab.wait_for(lambda: child_of(net.a, "to-b") and child_of(b1, "to-a"), 40,
                 "the IKE tunnel between A and B1")
    lab.wait_for(lambda: show_ha(b2)["sync"] == "in sync" and show_ha(b2)["sas"] == 2,
                 20, "B2 in sync with B1's CHILD_SA")


def replay_to(net, gw, pcap, src):
    """The first ESP packet from src in pcap, sent again to gw's outside port
    (into its link, as an attacker on the switch would); the frame's (SPI,
    sequence number)."""
    mac = [p["mac"] for p in gw.ctl("show", "ports")["ports"] if p["id"] == 1][0]
    code = (f"from scapy.all import ESP, IP, Ether, rdpcap, sendp\n"
            f"p = [p for p in rdpcap({pcap!r}) if IP in p and p[IP].proto == 50 and "
            f"p[IP].src == {src!r}][0]\n"
            f"sendp(Ether(dst={mac!r}) / p[IP], iface={gw.name + '-out-br'!r}, verbose=False)\n"
            f"print(p[ESP].spi, p[ESP].seq)\n")
    out = net.ns(net.ns_gw, "/usr/bin/python3", "-c", code).stdout.split()
    return int(out[0]), int(out[1])


def esp_seqs(pcap, src):
    """(SPI, sequence number) of every ESP packet from src in a capture."""
    out = []
    for p in rdpcap(pcap):
        if IP in p and p[IP].src == src and p[IP].proto == 50:
            out.append((p[ESP].spi, p[ESP].seq))
    return out


def test_backup_holds_the_masters_tunnels_and_takes_over(pskdir, monkeypatch):
    """B2 gets B1's IKE SA and CHILD_SAs over the sync channel and, once B1
    is gone and B2 master, carries the tunnel on: same SPIs, no new
    IKE_SA_INIT, its sequence numbers above every block B1 reserved, no
    (SPI, sequence number) on the wire twice, a packet of A's replayed to it
    refused, a rekey afterwards, A's liveness checks answered (dpd = 1), and
    a Delete from B2 ends the IKE SA at A, which starts a new one."""
    monkeypatch.setenv("DPVPND_IKE_RETRANS_MS", "200")     # a missed DPD: A gives up fast
    monkeypatch.setenv("DPVPND_IKE_RETRANS_TRIES", "3")
    psk = psk_file(pskdir, "lab.psk")
    with Pair(psk, ike_a="dpd = 1\n") as net:
        b1, b2 = net.b["b1"], net.b["b2"]
        assert show_ha(b1)["role"] == "backup" and show_ha(b2)["role"] == "backup"
        lab.wait_for(lambda: show_ha(b1)["peer"]["channel"] and
                     show_ha(b2)["peer"]["role"] == "backup", 20, "the sync channel up")
        r = b1.ctl("ha", "master")
        assert "master" in r["message"], r
        lab.wait_for(lambda: child_of(net.a, "to-b") and child_of(b1, "to-a"), 40,
                     "the IKE tunnel between A and B1")
        ca = child_of(net.a, "to-b")
        net.ping(count=2)           # ARP on the host links
        r = net.ping(count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        # B2 holds what B1 holds for the IKE tunnel, in sync
        lab.wait_for(lambda: show_ha(b2)["sync"] == "in sync" and show_ha(b2)["sas"] == 2,
                     20, "B2 in sync with B1's CHILD_SA")
        assert b2.sa_ids() == b1.sa_ids(), (b2.sa_ids(), b1.sa_ids())
        h1 = show_ha(b1)
        assert h1["role"] == "master" and h1["peer"]["role"] == "backup", h1
        assert h1["pending_grants"] == 0, h1
        # B2's copy of the outbound SA is silent: it sends nothing yet
        out2 = [s for s in b2.ctl("show", "sa")["sas"] if s["dir"] == "out"][0]
        assert out2["packets"] == 0, out2
        ike_b1 = [s for s in ike(b1)["sas"] if s["name"] == "to-a"][0]

        cap, pcap = net.capture("a-br", "peer")
        r = net.ping(count=10)
        assert " 0% packet loss" in r.stdout, r.stdout
        # B1 dies; B2 is told it is master: it holds the addresses and says so
        b1.dpvpnd.kill9()
        b1.dataplane.kill9()
        r = b2.ctl("ha", "master")
        assert "master" in r["message"], r
        out = b2.dpvpnd.output()
        assert "taken up again" in out, out
        r = net.ping(count=10)
        assert " 0% packet loss" in r.stdout, (r.stdout, b2.dpvpnd.output())
        ike_b2 = [s for s in ike(b2)["sas"] if s["name"] == "to-a"][0]
        assert (ike_b2["spi_i"], ike_b2["spi_r"]) == (ike_b1["spi_i"], ike_b1["spi_r"]), \
            (ike_b1, ike_b2)
        c2 = child_of(b2, "to-a")
        assert (c2["spi_in"], c2["spi_out"]) == (ca["spi_out"], ca["spi_in"]), (ca, c2)
        h2 = show_ha(b2)
        assert h2["role"] == "master" and h2["last_takeover"] is not None, h2
        # a rekey after the takeover works (the IKE SA's message IDs followed)
        b2.ctl("rekey", "to-a")
        lab.wait_for(lambda: (child_of(b2, "to-a") or {}).get("spi_in") not in
                     (None, c2["spi_in"]), 20, "the CHILD_SA rekeyed by B2")
        r = net.ping(count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        lab.Lab.stop_capture(cap)
        # a packet A sent B1 before the takeover, replayed to B2: its window
        # started at B1's last synced high mark
        drops = [s for s in b2.ctl("show", "sa")["sas"] if s["dir"] == "in"]
        before = sum(s["drops"]["replay"] for s in drops)
        spi, q = replay_to(net, b2, pcap, "198.19.0.1")
        lab.wait_for(lambda: sum(s["drops"]["replay"] for s in b2.ctl("show", "sa")["sas"]
                                 if s["dir"] == "in") == before + 1, 10,
                     f"B2 refusing the replayed (0x{spi:08x}, {q}) as a replay")
        assert show_ha(b2)["replay_floors"] >= 1
        assert ike_sa_inits(pcap) == 0
        seqs = esp_seqs(pcap, "198.19.0.2")
        assert len(seqs) >= 20, seqs
        assert len(seqs) == len(set(seqs)), "an (SPI, sequence number) sent twice"
        spi = ca["spi_in"]
        spi = int(spi, 16) if isinstance(spi, str) else spi
        old = [q for s, q in seqs if s == spi]
        # B2 went on above B1's first block of seq-block numbers
        assert min(old) < 1024 < max(old), old
        # A's liveness checks (dpd = 1, 3 tries 200 ms apart) answered by B2
        rx = [s for s in ike(net.a)["sas"] if s["name"] == "to-b"][0]["rx"]
        lab.wait_for(lambda: [s for s in ike(net.a)["sas"] if s["name"] == "to-b"][0]["rx"] >=
                     rx + 2, 15, "A's liveness checks answered by B2")
        ia = [s for s in ike(net.a)["sas"] if s["name"] == "to-b"][0]
        assert (ia["spi_i"], ia["spi_r"]) == (ike_b1["spi_i"], ike_b1["spi_r"]), ia
        # a Delete of the IKE SA from B2: A ends it and (start = yes) makes a new one
        b2.ctl("terminate", "to-a")
        lab.wait_for(lambda: "IKE SA ended" in net.a.dpvpnd.output(), 15, "A: the IKE SA ended")
        lab.wait_for(lambda: child_of(net.a, "to-b") and child_of(b2, "to-a"), 40,
                     "a new IKE SA between A and B2")
        assert [s for s in ike(net.a)["sas"] if s["name"] == "to-b"][0]["spi_i"] != \
            ike_b1["spi_i"]
        r = net.ping(count=3)
        assert " 0% packet loss" in r.stdout, r.stdout


def test_backup_that_connects_later_gets_the_whole_state(pskdir):
    """A backup whose dpvpnd starts after the tunnel is up (or restarts) gets
    the whole state first: the SAs and the IKE SA record, then changes."""
    psk = psk_file(pskdir, "lab.psk")
    with Pair(psk) as net:
        b1, b2 = net.b["b1"], net.b["b2"]
        b1.ctl("ha", "master")
        lab.wait_for(lambda: child_of(net.a, "to-b") and child_of(b1, "to-a"), 40,
                     "the IKE tunnel between A and B1")
        lab.wait_for(lambda: show_ha(b2)["sync"] == "in sync" and show_ha(b2)["sas"] == 2,
                     20, "B2 in sync")
        b2.restart_dpvpnd("again")
        lab.wait_for(lambda: show_ha(b2)["sync"] == "in sync" and show_ha(b2)["sas"] == 2,
                     20, "B2 in sync again after its restart")
        assert b2.sa_ids() == b1.sa_ids()
        assert show_ha(b1)["resyncs"] >= 2
        # a bad role is refused, naming the field
        r = lab.sh(lab.DPVPNCTL, "-s", b2.ctl_sock, "ha", "boss", check=False)
        assert r.returncode != 0 and "role" in r.stderr, r.stderr


def test_takeover_after_the_sync_link_was_cut_rekeys(pskdir):
    """The sync link is cut while B1 is master and goes on (past a block of
    sequence numbers B2 never hears of); then B1 dies and B2 takes over with
    a state that may be stale, its IKE SA's message IDs too (RFC 6311's
    case): it sends nothing on the old outbound SA and makes a new IKE SA at
    once (takeover-rekey = auto), whose CHILD_SA replaces the old SAs make
    before break: one IKE_SA_INIT, from B2, and no (SPI, sequence number)
    sent twice."""
    psk = psk_file(pskdir, "lab.psk")
    with Pair(psk) as net:
        b1, b2 = net.b["b1"], net.b["b2"]
        b1_master_b2_in_sync(net)
        ca = child_of(net.a, "to-b")
        net.ping(count=2)
        cap, pcap = net.capture("a-br", "peer")
        net.sync_link(False)
        lab.wait_for(lambda: not show_ha(b1)["peer"]["channel"] and
                     not show_ha(b2)["peer"]["channel"], 20, "both ends: the sync channel down")
        # B1 goes on past its first block of 1024 numbers: blocks B2 never hears of
        net.ns(net.ns_a, "ping", "-q", "-i", "0.002", "-c", "1500", "-w", "20", "198.18.2.2",
               check=False, timeout=30)
        b1.dpvpnd.kill9()
        b1.dataplane.kill9()
        r = b2.ctl("ha", "master")
        assert "IKE SAs made anew" in r["message"], r
        old_out = ca["spi_in"]
        lab.wait_for(lambda: (old_out, "out") not in b2.sa_ids() and
                     (child_of(b2, "to-a") or {}).get("spi_out") not in (None, old_out), 20,
                     "B2's new CHILD_SA, the old outbound SA gone")
        r = net.ping(count=10)
        assert " 0% packet loss" in r.stdout, (r.stdout, b2.dpvpnd.output())
        assert "a new IKE SA replaces it now" in b2.dpvpnd.output()
        lab.Lab.stop_capture(cap)
        assert ike_sa_inits(pcap) == 2         # B2's new IKE SA: its request, A's answer
        seqs = esp_seqs(pcap, "198.19.0.2")
        assert len(seqs) == len(set(seqs)), "an (SPI, sequence number) sent twice"
        spi = ca["spi_in"]
        spi = int(spi, 16) if isinstance(spi, str) else spi
        old = [q for s, q in seqs if s == spi]
        assert max(old) > 1024, "B1 did not pass its first block while cut off"
        assert show_ha(b2)["stale_takeovers"] == 1


def test_static_tunnel_continues_above_the_masters_blocks():
    """The lab's static tunnel (its SPIs and keys in the config of A and of
    both nodes) through the pair: B1 master carries it, and each block of
    sequence numbers it reserves is granted once B2 has it.  iperf3 and a
    ping flood take B1 past several blocks; B1 dies (kill -9 of both), B2
    takes over: its first number is above every one B1 sent, so no (SPI,
    sequence number) twice on the peer's link; iperf3 again through B2."""
    with Pair(None, static=True) as net:
        b1, b2 = net.b["b1"], net.b["b2"]
        lab.wait_for(lambda: show_ha(b2)["peer"]["channel"], 20, "the sync channel up")
        b1.ctl("ha", "master")
        net.ping(count=2)           # ARP on the host links
        r = net.ping(count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        macs = {n: [p["mac"] for p in gw.ctl("show", "ports")["ports"] if p["id"] == 1][0]
                for n, gw in net.b.items()}
        cap, pcap = net.capture("a-br", "peer")
        before = iperf_through(net)
        net.ns(net.ns_a, "ping", "-q", "-i", "0.002", "-c", "1500", "-w", "20", "198.18.2.2",
               check=False, timeout=30)
        lab.wait_for(lambda: show_ha(b2)["sync"] == "in sync", 10, "B2 in sync")
        b1.dpvpnd.kill9()
        b1.dataplane.kill9()
        r = b2.ctl("ha", "master")
        assert "master" in r["message"] and "stale" not in r["message"], r
        r = net.ping(count=10)
        assert " 0% packet loss" in r.stdout, (r.stdout, b2.dpvpnd.output())
        after = iperf_through(net)
        lab.Lab.stop_capture(cap)
        seqs = {n: [] for n in macs}
        for p in rdpcap(pcap):
            if IP in p and p[IP].src == "198.19.0.2" and p[IP].proto == 50:
                n = [k for k, m in macs.items() if m.lower() == p.src.lower()][0]
                seqs[n].append((p[ESP].spi, p[ESP].seq))
        both = seqs["b1"] + seqs["b2"]
        assert len(both) == len(set(both)), "an (SPI, sequence number) sent twice"
        assert {s for s, _ in both} == {0x2001}, {s for s, _ in both}
        q1, q2 = [q for _, q in seqs["b1"]], [q for _, q in seqs["b2"]]
        assert max(q1) > 2 * 1024 and min(q2) > max(q1), (max(q1), min(q2))
        print(f"\nstatic tunnel through the pair: iperf3 {before:.0f} Mbit/s via B1, "
              f"{after:.0f} via B2; B1 sent up to {max(q1)}, B2 from {min(q2)}")


def keepalived_pair_up(net):
    """keepalived made B1 master and B2 backup, the tunnel A-B1 is up, B2 in
    sync: A's CHILD_SA."""
    b1, b2 = net.b["b1"], net.b["b2"]
    lab.wait_for(lambda: show_ha(b1)["role"] == "master" and
                 show_ha(b2)["role"] == "backup" and show_ha(b2)["peer"]["channel"], 30,
                 "keepalived: B1 master, B2 backup")
    lab.wait_for(lambda: child_of(net.a, "to-b") and child_of(b1, "to-a"), 40,
                 "the IKE tunnel between A and B1")
    lab.wait_for(lambda: show_ha(b2)["sync"] == "in sync" and show_ha(b2)["sas"] == 2,
                 20, "B2 in sync with B1's CHILD_SA")
    net.ping(count=2)
    return child_of(net.a, "to-b")


def old_master_back(net, cap, pcap):
    """B1 back (its dataplane or dpvpnd restarted): backup (nopreempt: B2
    stays master), in sync with B2, traffic on; on the peer's link no
    IKE_SA_INIT and no (SPI, sequence number) twice over the whole run."""
    b1, b2 = net.b["b1"], net.b["b2"]
    lab.wait_for(lambda: show_ha(b1)["role"] == "backup" and
                 show_ha(b1)["sync"] == "in sync" and show_ha(b1)["sas"] == 2, 30,
                 "B1 back as backup, in sync with B2")
    assert show_ha(b2)["role"] == "master"
    r = net.ping(count=5)
    assert " 0% packet loss" in r.stdout, r.stdout
    lab.Lab.stop_capture(cap)
    assert ike_sa_inits(pcap) == 0
    seqs = esp_seqs(pcap, "198.19.0.2")
    assert len(seqs) == len(set(seqs)), "an (SPI, sequence number) sent twice"


def flood_loss(out):
    """(sent, received) from ping -q's summary."""
    m = re.search(r"(\d+) packets transmitted, (\d+) received", out)
    return int(m.group(1)), int(m.group(2))


def fault_under_flood(net, fault, what, count=600):
    """A 100 packets/s ping flood (count pings) from host A through the
    tunnel; fault() once it is under way; B2 master; the loss printed as
    the traffic's gap (a figure, not a target: doc/ha.md).  (sent,
    received)."""
    b2 = net.b["b2"]
    flood = lab.Proc("flood-" + what.replace(" ", "-"),
                     ["ping", "-q", "-i", "0.01", "-c", str(count), "-w", "30", "198.18.2.2"],
                     net.workdir, net.ns_a)
    net.procs.append(flood)

    def out_packets():
        return sum(s["packets"] for s in net.a.ctl("show", "sa")["sas"] if s["dir"] == "out")
    first = out_packets()
    lab.wait_for(lambda: out_packets() >= first + 100, 10, "the flood under way")
    fault()
    lab.wait_for(lambda: show_ha(b2)["role"] == "master", 15,
                 "B2's keepalived: master, and its notify run")
    lab.wait_for(lambda: flood.p.poll() is not None, 40, "the flood's end")
    sent, got = flood_loss(flood.output())
    print(f"\n{what}, under a 100 pps flood: {sent - got} of {sent} lost (a gap of about "
          f"{10 * (sent - got)} ms); B2's show ha: {show_ha(b2)['last_takeover']}")
    assert got > count // 2, flood.output()
    return sent, got


def iperf_through(net, seconds=2):
    """iperf3 from host A to host B through the pair (bounded); Mbit/s."""
    srv = lab.Proc("iperf3-server", ["iperf3", "-s", "-1", "-B", "198.18.2.2"], net.workdir,
                   net.ns_b)
    net.procs.append(srv)
    lab.wait_for(lambda: ":5201" in net.ns(net.ns_b, "ss", "-ltn", check=False).stdout, 10,
                 "iperf3 server")
    r = net.ns(net.ns_a, "iperf3", "-c", "198.18.2.2", "-t", str(seconds), "-J",
               check=False, timeout=seconds + 30)
    srv.stop()
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    return json.loads(r.stdout)["end"]["sum_received"]["bits_per_second"] / 1e6


@pytest.mark.parametrize("what", ["dataplane", "both"])
def test_keepalived_moves_the_tunnels_when_the_master_dies(pskdir, what):
    """keepalived on each node's twins: VRRP adverts through the dataplanes,
    B1 (priority 150) master by its notify script, B2 backup and in sync.
    B1's dataplane (what = dataplane), or its dataplane and dpvpnd (both),
    killed under a ping flood: its adverts stop, B2's keepalived becomes
    master and runs `dpvpnctl ha master`, B2 holds the virtual addresses and
    carries the tunnel on with the same SPIs; the gap is printed (a figure,
    not a target: doc/ha.md).  B1's dpvpnd gives up master with its
    dataplane; once B1 is back (as systemd restarts it) it is backup
    (nopreempt: no second takeover) and gets B2's whole state."""
    psk = psk_file(pskdir, "lab.psk")
    with Pair(psk, keepalived=True) as net:
        b1, b2 = net.b["b1"], net.b["b2"]
        ca = keepalived_pair_up(net)
        cap, pcap = net.capture("a-br", "peer")

        def fault():
            if what == "both":
                b1.dpvpnd.kill9()
            b1.dataplane.kill9()
        fault_under_flood(net, fault, "kill -9 of the master's dataplane" +
                          (" and dpvpnd" if what == "both" else ""), count=1000)
        r = net.ping(count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        c2 = child_of(b2, "to-a")
        assert (c2["spi_in"], c2["spi_out"]) == (ca["spi_out"], ca["spi_in"]), (ca, c2)
        # B1 back, as systemd restarts it: backup (nopreempt: B2 stays
        # master), and it gets B2's whole state
        if os.path.exists(b1.dp_sock):
            os.unlink(b1.dp_sock)
        b1.start_dataplane(log_suffix="-2")
        if what == "both":
            b1.start_dpvpnd()
        else:
            assert "master no longer" in b1.dpvpnd.output()
            lab.wait_for(lambda: "dataplane back" in b1.dpvpnd.output(), 30,
                         "B1's dataplane back")
        old_master_back(net, cap, pcap)


def test_keepalived_takes_over_when_the_masters_dpvpnd_dies(pskdir):
    """kill -9 of the master's dpvpnd alone: its dataplane releases the
    virtual addresses at once (the connection that set them closed), its
    keepalived's track script (dpvpnctl show ha) fails and it goes to FAULT,
    B2 takes over with the same SPIs; the restarted dpvpnd comes back as
    backup and in sync."""
    psk = psk_file(pskdir, "lab.psk")
    with Pair(psk, keepalived=True) as net:
        b1, b2 = net.b["b1"], net.b["b2"]
        ca = keepalived_pair_up(net)
        cap, pcap = net.capture("a-br", "peer")
        fault_under_flood(net, b1.dpvpnd.kill9, "kill -9 of the master's dpvpnd")
        assert "released" in b1.dataplane.output()
        r = net.ping(count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        c2 = child_of(b2, "to-a")
        assert (c2["spi_in"], c2["spi_out"]) == (ca["spi_out"], ca["spi_in"]), (ca, c2)
        b1.start_dpvpnd()
        old_master_back(net, cap, pcap)


def test_keepalived_moves_the_tunnels_when_the_masters_outside_link_goes(pskdir):
    """B1's outside cable is cut (its dataplane and dpvpnd live on): its
    port's twin goes down with the port's link, so B1's keepalived (which
    tracks the twins) goes to FAULT and says so, B1 lets the addresses go,
    B2 takes over with the sync channel up (no stale state: no rekey, the
    same SPIs); the cable back, B1 is backup (nopreempt) and in sync."""
    psk = psk_file(pskdir, "lab.psk")
    with Pair(psk, keepalived=True) as net:
        b1, b2 = net.b["b1"], net.b["b2"]
        ca = keepalived_pair_up(net)
        cap, pcap = net.capture("a-br", "peer")
        fault_under_flood(net, lambda: net.ip(net.ns_gw, "link", "set", "b1-out-br", "down"),
                          "the master's outside link cut")
        lab.wait_for(lambda: show_ha(b1)["role"] == "fault", 15,
                     "B1's keepalived: fault (its outside twin down)")
        assert "link down: host interface tw-out down too" in b1.dataplane.output()
        r = net.ping(count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        c2 = child_of(b2, "to-a")
        assert (c2["spi_in"], c2["spi_out"]) == (ca["spi_out"], ca["spi_in"]), (ca, c2)
        assert show_ha(b2)["stale_takeovers"] == 0
        net.ip(net.ns_gw, "link", "set", "b1-out-br", "up")
        old_master_back(net, cap, pcap)
