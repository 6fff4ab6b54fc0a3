# SPDX-License-Identifier: BSD-3-Clause
r"""Roles in an HA pair ([ha] issue 30): active-active and split brain.

Active-active: two groups (two VRRP instances), each with its own virtual
addresses; B1 is master of group a and B2 of group b, so each node runs IKE
for the tunnels whose local address is its group's and is the other's
backup.  Gateway A has a tunnel to each group's outside address:

    to-b  (A) <-> to-a  (B, local 198.19.0.2, group a): 198.18.1.0/24 <-> 198.18.2.0/24
    to-b2 (A) <-> to-a2 (B, local 198.19.0.5, group b): 198.18.1.0/24 <-> 198.18.2.128/25

Host B answers on 198.18.2.2 (through group a's inside address 198.18.2.1)
and on 198.18.2.130 (through group b's, 198.18.2.254: a source rule).  When
B1 dies, B2 is told it is master of group a too and carries both tunnels.

Split brain: B1 master, B2 is told it is master too (VRRP between them
cut).  The channel is up: both see it; the higher priority (here equal:
the name that sorts first, b1) carries the group on and rekeys its CHILD_SA,
B2 yields and takes B1's state as a backup does.
"""
import os

import pytest

import lab
from test_dpvpnd_restart import ike_sa_inits
from test_ha import Pair, b1_master_b2_in_sync, esp_seqs, show_ha
from test_ike_lab import child_of, ike, psk_file, pskdir  # noqa: F401

pytestmark = [pytest.mark.ha, pytest.mark.ike]

GROUPS = ("virtual-address = outside 198.19.0.2/24 group a\n"
          "virtual-address = inside 198.18.2.1/24 group a\n"
          "virtual-address = outside 198.19.0.5/24 group b\n"
          "virtual-address = inside 198.18.2.254/24 group b\n")


def second_tunnels(psk):
    """Gateway A's to-b2 and the pair's to-a2 (group b's)."""
    a = (f"[tunnel to-b2]\nlocal = 198.19.0.1\nremote = 198.19.0.5\n"
         f"local-ts = 198.18.1.0/24\nremote-ts = 198.18.2.128/25\ncipher = aes128-gcm\n"
         f"keying = ike\npsk-file = {psk}\nstart = yes\n")
    b = (f"[tunnel to-a2]\nlocal = 198.19.0.5\nremote = 198.19.0.1\n"
         f"local-ts = 198.18.2.128/25\nremote-ts = 198.18.1.0/24\ncipher = aes128-gcm\n"
         f"keying = ike\npsk-file = {psk}\nstart = no\n")
    return a, b


def ping(net, dst, count=5):
    return net.ns(net.ns_a, "ping", "-c", str(count), "-i", "0.2", "-W", "1", "-w", "15",
                  dst, check=False, timeout=20)


def group(h, name):
    return [g for g in h["groups"] if g["name"] == name][0]


def test_active_active_each_node_carries_one_group_then_both(pskdir):
    """B1 master of group a, B2 of group b: each runs IKE for its own group's
    tunnel (and not the other's), holds its group's addresses, and keeps
    the other's CHILD_SA silent and in sync.  B1 dies (kill -9 of both its
    processes); B2 becomes master of group a too and carries both tunnels:
    to-a with B1's SPIs and no IKE_SA_INIT, to-a2 untouched, no (SPI,
    sequence number) twice on the peer's link."""
    psk = psk_file(pskdir, "lab.psk")
    extra_a, extra_b = second_tunnels(psk)
    with Pair(psk, extra_a=extra_a, extra_b=extra_b, vips=GROUPS) as net:
        b1, b2 = net.b["b1"], net.b["b2"]
        net.ip(net.ns_b, "addr", "add", "198.18.2.130/24", "dev", "eth0")
        net.ip(net.ns_b, "rule", "add", "from", "198.18.2.130", "table", "5")
        net.ip(net.ns_b, "route", "add", "default", "via", "198.18.2.254", "table", "5")
        lab.wait_for(lambda: show_ha(b1)["peer"]["channel"] and
                     show_ha(b2)["peer"]["channel"], 20, "the sync channel up")
        assert "master" in b1.ctl("ha", "master", "a")["message"]
        assert "master" in b2.ctl("ha", "master", "b")["message"]
        lab.wait_for(lambda: child_of(net.a, "to-b") and child_of(b1, "to-a") and
                     child_of(net.a, "to-b2") and child_of(b2, "to-a2"), 60,
                     "to-b with B1 (group a) and to-b2 with B2 (group b)")
        # each node runs IKE for its own group's tunnel only
        assert child_of(b1, "to-a2") is None and child_of(b2, "to-a") is None
        h1, h2 = show_ha(b1), show_ha(b2)
        assert (group(h1, "a")["role"], group(h1, "b")["role"]) == ("master", "backup"), h1
        assert (group(h2, "a")["role"], group(h2, "b")["role"]) == ("backup", "master"), h2
        held = {(v["address"], v["held"]) for v in h1["virtual_addresses"]}
        assert held == {("198.19.0.2", True), ("198.18.2.1", True),
                        ("198.19.0.5", False), ("198.18.2.254", False)}, h1
        for dst in ("198.18.2.2", "198.18.2.130"):
            ping(net, dst, count=2)          # ARP on the host links
            r = ping(net, dst)
            assert " 0% packet loss" in r.stdout, (dst, r.stdout)
        # each holds the other's CHILD_SA, in sync and silent
        lab.wait_for(lambda: b1.sa_ids() == b2.sa_ids() and len(b1.sa_ids()) == 4, 20,
                     "both nodes hold both CHILD_SAs")
        c1, c2 = child_of(b1, "to-a"), child_of(b2, "to-a2")
        for gw, spi in ((b2, c1["spi_out"]), (b1, c2["spi_out"])):
            out = [s for s in gw.ctl("show", "sa")["sas"] if s["spi"] == spi][0]
            assert out["packets"] == 0, (gw.name, out)
        ca = child_of(net.a, "to-b")
        ike_b1 = [s for s in ike(b1)["sas"] if s["name"] == "to-a"][0]

        cap, pcap = net.capture("a-br", "peer")
        for dst in ("198.18.2.2", "198.18.2.130"):
            r = ping(net, dst)
            assert " 0% packet loss" in r.stdout, (dst, r.stdout)
        b1.dpvpnd.kill9()
        b1.dataplane.kill9()
        r = b2.ctl("ha", "master", "a")
        assert "master" in r["message"] and "rekeyed" not in r["message"], r
        h2 = show_ha(b2)
        assert group(h2, "a")["role"] == group(h2, "b")["role"] == "master", h2
        for dst in ("198.18.2.2", "198.18.2.130"):
            r = ping(net, dst, count=10)
            assert " 0% packet loss" in r.stdout, (dst, r.stdout, b2.dpvpnd.output())
        c = child_of(b2, "to-a")
        assert (c["spi_in"], c["spi_out"]) == (ca["spi_out"], ca["spi_in"]), (ca, c)
        i2 = [s for s in ike(b2)["sas"] if s["name"] == "to-a"][0]
        assert (i2["spi_i"], i2["spi_r"]) == (ike_b1["spi_i"], ike_b1["spi_r"])
        assert child_of(b2, "to-a2") == c2, (c2, child_of(b2, "to-a2"))
        # B2 rekeys group a's tunnel it took over (message IDs followed)
        b2.ctl("rekey", "to-a")
        lab.wait_for(lambda: (child_of(b2, "to-a") or {}).get("spi_in") not in
                     (None, c["spi_in"]), 20, "to-a rekeyed by B2")
        r = ping(net, "198.18.2.2")
        assert " 0% packet loss" in r.stdout, r.stdout
        lab.Lab.stop_capture(cap)
        assert ike_sa_inits(pcap) == 0
        for src in ("198.19.0.2", "198.19.0.5"):
            seqs = esp_seqs(pcap, src)
            assert len(seqs) >= 10 and len(seqs) == len(set(seqs)), (src, seqs)


def test_split_brain_the_higher_node_carries_on_the_other_yields(pskdir):
    """B1 is master and the tunnel up; B2 is told master too (as keepalived
    does when VRRP between them is cut).  Both see it over the sync channel:
    B1 (equal priority, first name) carries on, rekeys the CHILD_SA and
    announces its addresses again; B2 yields (role "yielded"), takes B1's
    state, holds no address.  Traffic goes on, no (SPI, sequence number)
    twice.  Once B2 is told backup the split is over; B1 dies and B2,
    master again, takes over as usual."""
    psk = psk_file(pskdir, "lab.psk")
    with Pair(psk) as net:
        b1, b2 = net.b["b1"], net.b["b2"]
        b1_master_b2_in_sync(net)
        net.ping(count=2)
        c1 = child_of(b1, "to-a")
        cap, pcap = net.capture("a-br", "peer")
        r = b2.ctl("ha", "master")
        assert "the peer carries it" in r["message"], r
        lab.wait_for(lambda: show_ha(b1)["split_brains"] == 1 and
                     show_ha(b2)["role"] == "yielded", 10, "both see the split brain")
        assert show_ha(b1)["role"] == "master"
        assert not any(v["held"] for v in show_ha(b2)["virtual_addresses"])
        assert "split brain" in b1.dpvpnd.output()
        lab.wait_for(lambda: (child_of(b1, "to-a") or {}).get("spi_in") not in
                     (None, c1["spi_in"]), 20, "B1 rekeyed the CHILD_SA")
        lab.wait_for(lambda: show_ha(b2)["sas"] == 2 and show_ha(b2)["sync"] == "in sync" and
                     b2.sa_ids() == b1.sa_ids(), 20, "B2 holds B1's new CHILD_SA")
        r = net.ping(count=10)
        assert " 0% packet loss" in r.stdout, r.stdout
        r = lab.sh(lab.DPVPNCTL, "-s", b2.ctl_sock, "show", "ike", check=False)
        assert r.returncode != 0 and "HA backup" in r.stderr, r   # no IKE when yielded
        # keepalived ends the split: B2 backup
        b2.ctl("ha", "backup")
        lab.wait_for(lambda: not show_ha(b1)["groups"][0]["split_brain"], 10,
                     "the split brain over")
        assert show_ha(b2)["role"] == "backup"
        ca = child_of(net.a, "to-b")
        b1.dpvpnd.kill9()
        b1.dataplane.kill9()
        r = b2.ctl("ha", "master")
        assert "master" in r["message"], r
        r = net.ping(count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        c2 = child_of(b2, "to-a")
        assert (c2["spi_in"], c2["spi_out"]) == (ca["spi_out"], ca["spi_in"]), (ca, c2)
        lab.Lab.stop_capture(cap)
        assert ike_sa_inits(pcap) == 0
        seqs = esp_seqs(pcap, "198.19.0.2")
        assert len(seqs) >= 10 and len(seqs) == len(set(seqs)), seqs


def test_failback_with_preemption(pskdir):
    """keepalived without nopreempt: B1 (priority 150) master, its dataplane
    killed, B2 takes over; once B1's dataplane is back B1 takes master back
    (preemption) and B2 is backup again: the same IKE SA throughout, no
    IKE_SA_INIT, no (SPI, sequence number) twice, traffic on."""
    from test_ha import keepalived_pair_up
    psk = psk_file(pskdir, "lab.psk")
    with Pair(psk, keepalived=True, preempt=True) as net:
        b1, b2 = net.b["b1"], net.b["b2"]
        keepalived_pair_up(net)
        ike_b1 = [s for s in ike(b1)["sas"] if s["name"] == "to-a"][0]
        cap, pcap = net.capture("a-br", "peer")
        b1.dataplane.kill9()
        lab.wait_for(lambda: show_ha(b2)["role"] == "master", 10, "B2 master")
        r = net.ping(count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        if os.path.exists(b1.dp_sock):
            os.unlink(b1.dp_sock)
        b1.start_dataplane(log_suffix="-2")
        lab.wait_for(lambda: show_ha(b1)["role"] == "master" and
                     show_ha(b2)["role"] == "backup", 30,
                     "B1 master again (preemption), B2 backup")
        lab.wait_for(lambda: show_ha(b2)["sync"] == "in sync" and show_ha(b2)["sas"] == 2,
                     20, "B2 in sync with B1 again")
        net.ping(count=2)
        r = net.ping(count=10)
        assert " 0% packet loss" in r.stdout, (r.stdout, b1.dpvpnd.output())
        i1 = [s for s in ike(b1)["sas"] if s["name"] == "to-a"][0]
        assert (i1["spi_i"], i1["spi_r"]) == (ike_b1["spi_i"], ike_b1["spi_r"]), (ike_b1, i1)
        lab.Lab.stop_capture(cap)
        assert ike_sa_inits(pcap) == 0
        seqs = esp_seqs(pcap, "198.19.0.2")
        assert len(seqs) >= 10 and len(seqs) == len(set(seqs)), seqs
