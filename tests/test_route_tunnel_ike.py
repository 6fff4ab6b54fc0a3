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
  tunnel-down or sa-gone.
"""
import os
import secrets
import shutil
import tempfile

import pytest

import lab

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


@pytest.fixture(scope="module")
def ilab():
    d = tempfile.mkdtemp(prefix="dpvpn-ike-")
    os.chmod(d, 0o700)
    psk = os.path.join(d, "lab.psk")
    fd = os.open(psk, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(24) + "\n")
    a = tunnel("198.19.0.1", "198.19.0.2", psk, "start = yes\n",
               ("198.18.2.0/24", "2001:db8:18:2::/64"))
    b = tunnel("198.19.0.2", "198.19.0.1", psk, "start = no\n",
               ("198.18.1.0/24", "2001:db8:18:1::/64"))
    try:
        with lab.Lab(ipv6=True, replace_a=((policy_tunnels("lab6-a.conf"), a),),
                     replace_b=((policy_tunnels("lab6-b.conf"), b),)) as lb:
            lab.wait_for(lambda: child(lb.a) and child(lb.b), 20, "the CHILD_SA up")
            yield lb
    finally:
        shutil.rmtree(d, ignore_errors=True)


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
    psk = os.path.join(d, "lab.psk")
    fd = os.open(psk, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(24) + "\n")
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
