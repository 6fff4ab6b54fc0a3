# SPDX-License-Identifier: BSD-3-Clause
"""A route-based tunnel keyed by IKEv2 ([deploy] issue 17 requirement 2,
deploy/NEXT-DESIGN.md B.6 and B.7 4): one CHILD_SA for both families.

    host A ==== [inside gw A outside] ======== [outside gw B inside] ==== host B
    198.18.1.2, 2001:db8:18:1::2     198.19.0.1 -- 198.19.0.2     198.18.2.2, 2001:db8:18:2::2

Both gateways are dpvpnd (PSK): [tunnel t1] mode = route, keying = ike (A
initiates).  Each proposes TSi = TSr = {0.0.0.0/0, ::/0} (two selectors per
payload) and installs the CHILD_SA's SAs as a route tunnel's (either inner
family); routes for the other side's IPv4 and IPv6 networks lead into t1.

- IPv4 and IPv6 pings through the one SA pair, both gateways' show ike say
  the CHILD_SA's selectors are 0.0.0.0/0 and ::/0;
- a CHILD_SA rekey moves the tunnel interface to the new outbound SA (one
  TUNIF_SET, no policy): pings pass on the new SPIs, nothing is dropped
  tunnel-down or sa-gone;
- with twins (split lab, host-interface and an inside /30 each side, as an
  AWS tunnel for BGP): the inside addresses answer once the CHILD_SA is up,
  and through a CHILD_SA rekey and an IKE SA rekey the twins' links do not
  change at all (`ip monitor link`), so a BGP session over them would not
  notice.
"""
import contextlib
import os
import shutil
import tempfile
import time

import pytest

import lab
from test_ike_lab import psk_file

# slow: out of the sanitizer pass (CI's budget); it passes under ASan (see the
# commit that added it)
pytestmark = [pytest.mark.deploy, pytest.mark.slow]


def tunnel(local, remote, psk, more, nets):
    return (f"[tunnel t1]\nmode = route\nkeying = ike\npsk-file = {psk}\nlocal = {local}\n"
            f"remote = {remote}\ncipher = aes128-gcm\nreplay-window = 1024\n{more}"
            "\n[routes]\n" + "".join(f"route = {n} via tunnel t1\n" for n in nets))


def policy_tunnels(conf):
    with open(f"{lab.CONFIGS}/{conf}") as f:
        text = f.read()
    return text[text.index("[tunnel "):]


@contextlib.contextmanager
def ike_route_lab(more_a, more_b, nets_a, nets_b, ipv6=False, split=False):
    """gw A and B with t1 (mode = route, keying = ike, a fresh PSK, A
    initiating) in place of lab*-{a,b}.conf's tunnels; yields the lab once
    the CHILD_SA is up on both."""
    d = tempfile.mkdtemp(prefix="dpvpn-ike-")
    os.chmod(d, 0o700)
    psk = psk_file(d, "lab.psk")
    a = tunnel("198.19.0.1", "198.19.0.2", psk, "start = yes\n" + more_a, nets_a)
    b = tunnel("198.19.0.2", "198.19.0.1", psk, "start = no\n" + more_b, nets_b)
    conf = "lab6-{}.conf" if ipv6 else "lab-{}.conf"
    try:
        with lab.Lab(ipv6=ipv6, split=split,
                     replace_a=((policy_tunnels(conf.format("a")), a),),
                     replace_b=((policy_tunnels(conf.format("b")), b),)) as lb:
            lab.wait_for(lambda: child(lb.a) and child(lb.b), 20, "the CHILD_SA up")
            yield lb
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def ilab():
    with ike_route_lab("", "", ("198.18.2.0/24", "2001:db8:18:2::/64"),
                       ("198.18.1.0/24", "2001:db8:18:1::/64"), ipv6=True) as lb:
        yield lb


def child(gw):
    for sa in gw.ctl("show", "ike")["sas"]:
        if sa["name"] == "t1" and sa["state"] == "established" and sa["child"]:
            return sa["child"]
    return None


def pings(lb, dst, count=3):
    r = lb.ping(count=count, dst=dst)
    return r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout


def test_both_families_through_one_child_sa(ilab):
    for gw in (ilab.a, ilab.b):
        sa = next(s for s in gw.ctl("show", "ike")["sas"] if s["name"] == "t1")
        kids = sa["children"]
        assert len(kids) == 1, kids
        assert sorted(kids[0]["local_ts"]) == ["0.0.0.0/0", "::/0"], kids
        assert sorted(kids[0]["remote_ts"]) == ["0.0.0.0/0", "::/0"], kids
    ilab.ping(count=1)          # the first may wait for ARP / ND on a host link
    ilab.ping(count=1, dst="2001:db8:18:2::2")
    for dst in ("198.18.2.2", "2001:db8:18:2::2"):
        ok, out = pings(ilab, dst)
        assert ok, out
    out = [s for s in ilab.a.ctl("show", "sa")["sas"] if s["name"] == "t1" and
           s["dir"] == "out"]
    assert len(out) == 1 and out[0]["packets"] >= 6, out


def test_rekey_moves_the_tunnel_interface(ilab):
    a, b = ilab.a, ilab.b
    old = child(a)
    before = {k: a.ctl("show", "counters")["drops"][k] for k in ("tunnel-down", "sa-gone")}
    assert "rekeying" in a.ctl_text("rekey", "t1")
    lab.wait_for(lambda: (child(a) or old)["spi_out"] != old["spi_out"] and
                 len([s for s in a.ctl("show", "sa")["sas"] if s["dir"] == "out"]) == 1,
                 15, "the CHILD_SA rekeyed and the old outbound SA gone")
    new = child(a)
    for dst in ("198.18.2.2", "2001:db8:18:2::2"):
        ok, out = pings(ilab, dst)
        assert ok, out
    sas = {s["spi"]: s for s in a.ctl("show", "sa")["sas"] if s["dir"] == "out"}
    assert list(sas) == [new["spi_out"]] and sas[new["spi_out"]]["packets"] >= 6, sas
    after = {k: a.ctl("show", "counters")["drops"][k] for k in ("tunnel-down", "sa-gone")}
    assert after == before, (before, after)
    assert b.ctl("show", "counters")["drops"]["rpf"] == 0


def test_route_tunnel_to_a_policy_peer():
    """gw A route-based, gw B an ordinary policy tunnel (198.18.2.0/24 <->
    198.18.1.0/24), B responding: B narrows A's {0.0.0.0/0, ::/0} to its
    selectors, A installs the CHILD_SA as a route tunnel's held to them
    (show sa: remote_ts 198.18.2.0/24), pings pass; A's route sends there."""
    d = tempfile.mkdtemp(prefix="dpvpn-ike-")
    os.chmod(d, 0o700)
    psk = psk_file(d, "lab.psk")
    a = tunnel("198.19.0.1", "198.19.0.2", psk, "start = yes\n", ("198.18.2.0/24",))
    b = ("[tunnel t1]\nkeying = ike\npsk-file = " + psk + "\nlocal = 198.19.0.2\n"
         "remote = 198.19.0.1\nlocal-ts = 198.18.2.0/24\nremote-ts = 198.18.1.0/24\n"
         "cipher = aes128-gcm\nstart = no\n")
    try:
        with lab.Lab(replace_a=((policy_tunnels("lab-a.conf"), a),),
                     replace_b=((policy_tunnels("lab-b.conf"), b),)) as lb:
            lab.wait_for(lambda: child(lb.a) and child(lb.b), 20, "the CHILD_SA up")
            sas = [s for s in lb.a.ctl("show", "sa")["sas"] if s["name"] == "t1"]
            assert len(sas) == 2, sas
            out = next(s for s in sas if s["dir"] == "out")
            assert (out["local_ts"], out["remote_ts"]) == \
                ("198.18.1.0/24", "198.18.2.0/24"), out
            lb.ping(count=1)
            ok, text = pings(lb, "198.18.2.2")
            assert ok, text
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- IKE-keyed route tunnels with twins: what a BGP session rides on (AWS's shape) ----

IN_A, IN_B = "169.254.30.1", "169.254.30.2"


@pytest.fixture(scope="module")
def twin_lab():
    """Split lab (each gateway its own Linux host): t1 keyed by IKE, with a
    twin vti-t1 and an inside /30 on each side."""
    with ike_route_lab(f"host-interface = vti-t1\ninside-address = {IN_A}/30\n",
                       f"host-interface = vti-t1\ninside-address = {IN_B}/30\n",
                       ("198.18.2.0/24",), ("198.18.1.0/24",), split=True) as lb:
        yield lb


def ike_sa(gw):
    return next((s for s in gw.ctl("show", "ike")["sas"] if s["name"] == "t1" and
                 s["state"] == "established"), None)


def link_events(mon):
    """`ip monitor link` lines about vti-t1 so far."""
    return [l for l in mon.output().splitlines() if "vti-t1" in l]


def inside_ping(lb, ns, dst, count=3):
    r = lb.ns(ns, "ping", "-c", str(count), "-i", "0.2", "-W", "2", dst, check=False)
    return r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr


def test_ike_twin_up_with_the_child_sa_and_through_rekeys(twin_lab):
    """The twin comes up once the CHILD_SA is installed, carries the hosts'
    pings between the inside addresses (what BGP peers over), and stays up
    through a CHILD_SA rekey and an IKE SA rekey
    (`ip monitor link` sees no change of it on either host), so a session
    over it would not notice."""
    lb = twin_lab
    lab.wait_for(lambda: inside_ping(lb, lb.ns_gw, IN_B, count=1)[0], 10,
                 "the inside addresses to answer")
    mons = {ns: lb.bg(f"ip-monitor-{ns}", ns, "ip", "monitor", "link", "dev", "vti-t1")
            for ns in (lb.ns_gw, lb.ns_gwb)}
    time.sleep(0.5)             # subscribed before anything happens
    for cmd, key in (("rekey", "child_rekeys"), ("rekey-ike", "ike_rekeys")):
        was = ike_sa(lb.a)[key]
        assert "rekeying" in lb.a.ctl_text(cmd, "t1")
        lab.wait_for(lambda: (ike_sa(lb.a) or {key: was})[key] > was and
                     len(lb.a.ctl("show", "ike")["sas"]) == 1 and child(lb.a), 15,
                     f"{cmd} done and the old SA gone")
        for ns, dst in ((lb.ns_gw, IN_B), (lb.ns_gwb, IN_A)):
            ok, text = inside_ping(lb, ns, dst)
            assert ok, (cmd, text)
    ok, text = pings(lb, "198.18.2.2")
    assert ok, text
    assert {ns: link_events(m) for ns, m in mons.items()} == {ns: [] for ns in mons}
    assert lb.a.ctl("show", "counters")["drops"]["tunnel-down"] == 0
    # and the monitor does see a change: the tunnel taken down takes the twin down
    lb.a.ctl("tunnel", "t1", "down")
    lab.wait_for(lambda: any("DOWN" in l or "UP" not in l for l in link_events(mons[lb.ns_gw])),
                 10, "the twin's link to go down with the tunnel")
