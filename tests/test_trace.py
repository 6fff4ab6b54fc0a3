# SPDX-License-Identifier: BSD-3-Clause
"""dpvpnctl trace: N packets at a named point into a new pcapng file (root
only; the file is created 0600 and never over an existing one).  Read back
with scapy: outside TX holds ESP between the gateways, after decryption the
cleartext replies of host B (behind a made-up Ethernet header)."""
import os
import stat

import pytest
from scapy.all import ICMP, IP, rdpcap

import lab

pytestmark = pytest.mark.control


@pytest.fixture(scope="module")
def net():
    with lab.Lab() as n:
        n.ping(count=3)
        yield n


def trace(net, point, count, path, seconds=10):
    flood = net.bg(f"ping-{point}", net.ns_a, "ping", "-i", "0.01", "-w", "4", "-q",
                   "198.18.2.2")
    r = lab.sh(lab.DPVPNCTL, "-s", net.a.ctl_sock, "trace", point, str(count), path,
               str(seconds), check=False, timeout=30)
    flood.stop()
    return r


def test_outside_tx_is_esp(net, tmp_path):
    f = str(tmp_path / "out.pcapng")
    r = trace(net, "outside-tx", 20, f)
    assert r.returncode == 0 and "20 of 20 packets" in r.stdout, r.stdout + r.stderr
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o600
    pkts = rdpcap(f)
    assert len(pkts) == 20
    assert all(IP in p and p[IP].proto == 50 and p[IP].src == "198.19.0.1" for p in pkts)


def test_decrypted_is_cleartext(net, tmp_path):
    f = str(tmp_path / "dec.pcapng")
    r = trace(net, "decrypted", 10, f)
    assert r.returncode == 0, r.stderr
    pkts = rdpcap(f)
    assert len(pkts) == 10
    assert all(ICMP in p and p[IP].src == "198.18.2.2" and p[ICMP].type == 0 for p in pkts)


def test_never_over_an_existing_file(net, tmp_path):
    f = tmp_path / "exists.pcapng"
    f.write_text("keep me")
    r = trace(net, "inside-rx", 5, str(f), seconds=2)
    assert r.returncode != 0 and "File exists" in r.stderr
    assert f.read_text() == "keep me"


def test_bad_point(net, tmp_path):
    r = lab.sh(lab.DPVPNCTL, "-s", net.a.ctl_sock, "trace", "nowhere", "5",
               str(tmp_path / "x"), check=False)
    assert r.returncode != 0 and "expected off, inside-rx" in r.stderr
