# SPDX-License-Identifier: BSD-3-Clause
"""Two CHILD_SAs of one IKE SA against strongSwan's charon ([ikepki] issue 16,
requirement 3 and the PFS part of 2): dpvpnd's tunnel to-swan owns the IKE
SA, its tunnel kid-b (`ike-sa = to-swan`) is a second CHILD_SA on it, other
subnets, AES-256-GCM with PFS over ECP-256 (esp-proposals
aes256gcm16-ecp256): a KE payload in its CREATE_CHILD_SA both ways.

    host S     strongSwan gw (netns)          dpvpn gw (netns)          host D
    198.18.1.2 charon #1                      dpvpn-dataplane + dpvpnd  198.18.2.2
    10.61.0.2  10.61.0.1 (sw-in)                                        10.71.0.2 (alias)
    10.62.0.2  10.62.0.1 (sw-in)
    eth0 ==veth== sw-in      sw-out ==veth== pe-out        pe-in ==veth== eth0
                             198.19.0.1      198.19.0.2

    to-swan: 198.18.2.0/24 <-> 198.18.1.0/24, aes128gcm16 (charon's child "net")
    kid-b:   10.71.0.0/24  <-> 10.61.0.0/24 and 10.62.0.0/24 (a list: two TS in
             TSr), aes256gcm16-ecp256 (charon's child "b")

(tests/helpers/swan.py builds the namespaces; charon #2 is never started.)  dpvpnd
initiates both (start = yes): IKE_AUTH carries to-swan's, then
CREATE_CHILD_SA kid-b's.  Then, in order, on the one IKE SA:
- pings S -> D through each CHILD_SA; both ends hold the same two pairs;
- `dpvpnctl rekey kid-b`: kid-b's SPIs change, to-swan's stay, both carry;
- kid-b's section changed and reloaded: its CHILD_SA made again, the IKE SA
  and to-swan's kept;
- `swanctl --terminate --child b`: kid-b's CHILD_SA goes in dpvpnd too,
  the IKE SA and to-swan stay and carry;
- `swanctl --initiate --child b`: charon's CREATE_CHILD_SA, dpvpnd the
  responder picks kid-b by the selectors; it carries again;
- `swanctl --terminate --ike dpsw`: both dpvpnd tunnels are told why the
  IKE SA ended and make it again (start = yes);
- both dpvpnd tunnels terminated (held), charon initiates the IKE SA with
  child b in IKE_AUTH (dpvpnd gives it to kid-b), then net by
  CREATE_CHILD_SA (to-swan): both carry, dpvpnd the responder.
"""
import os
import re

import pytest

import lab
import swan
from test_ike_swan import IKE_TUNNEL, PEER_CONF

pytestmark = [pytest.mark.ikepki, pytest.mark.strongswan]

S_B, S_B2, D_B = "10.61.0.2", "10.62.0.2", "10.71.0.2"  # host S's two and D's, of kid-b

KID_B = """
[route to-d-b]
dst = 10.71.0.0/24
port = inside
via = {host_d}

[tunnel kid-b]
keying = ike
ike-sa = to-swan
local-ts = 10.71.0.0/24
remote-ts = 10.61.0.0/24, 10.62.0.0/24
esp-proposals = aes256gcm16-ecp256
start = yes
"""

RE_CHILD = re.compile(r"^  (\S+): #\d+, reqid \d+, (\S+), \S+, ESP:(\S+)\n(?:    .*\n)*?"
                      r"    in  ([0-9a-f]{8}),.*\n    out ([0-9a-f]{8}),", re.M)


@pytest.fixture(scope="module")
def sl():
    why = swan.ensure_installed()
    if why:
        pytest.skip(f"strongSwan interop: {why}")
    with swan.SwanLab("aes128gcm16") as s:
        pe = s.ns_pe
        for dev in ("pe-in", "pe-out"):
            s.ip(pe, "addr", "flush", "dev", dev)
        s.ns(pe, "sysctl", "-qw", "net.ipv4.ip_forward=0")
        # charon's kernel-libipsec routes a CHILD_SA only with an address of its
        # own in the local selector: 10.61.0.1 on sw-in, host S on that link
        for net in (61, 62):
            s.ip(s.ns_sw, "addr", "add", f"10.{net}.0.1/24", "dev", "sw-in")
            s.ip(s.ns_s, "addr", "add", f"10.{net}.0.2/24", "dev", "eth0")
        s.ip(s.ns_d, "addr", "add", f"{D_B}/32", "dev", "eth0")
        psk = os.path.join(s.workdir, "swan.psk")
        fd = os.open(psk, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(swan.PSK)
        # charon's second CHILD_SA of the IKE SA, b: kid-b's mirror
        s.swan.swanctl_conf["connections"]["dpsw"]["children"]["b"] = swan.child(
            "10.61.0.0/24,10.62.0.0/24", "10.71.0.0/24", "aes256gcm16-ecp256")
        s.swan.write_config()
        s.swan.start()
        path = os.path.join(s.workdir, "peer.conf")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(PEER_CONF.format(gw_in=swan.PEER_GW_IN, out=swan.PEER_OUT) +
                    IKE_TUNNEL.format(out=swan.PEER_OUT, swan_out=swan.SWAN_OUT,
                                      peer_net=swan.PEER_NET, swan_net=swan.SWAN_NET,
                                      cipher="aes128-gcm", psk=psk)
                    .replace("start = no", "start = yes") +
                    KID_B.format(host_d=swan.HOST_D))
        s.gw = lab.Gateway("gw-peer", path,
                           ["net_af_packet0,iface=pe-in",
                            "net_af_packet1,iface=pe-out,qdisc_bypass=0"],
                           s.workdir, ["-l", "0-1", "--main-lcore", "0"], pe)
        s.gw.start()
        try:
            lab.wait_for(lambda: both_up(s) is not None, 30, "two CHILD_SAs on both ends")
        except TimeoutError:
            print(s.gw.ctl("show", "ike"), s.swan.swanctl("--list-sas"),
                  s.swan.log_text()[-5000:], s.gw.dpvpnd.output()[-4000:])
            raise
        yield s


def ike_sas(sl):
    return [a for a in sl.gw.ctl("show", "ike")["sas"]
            if a["name"] == "to-swan" and a["state"] != "rekeyed"]


def both_up(sl, need=("to-swan", "kid-b")):
    """{tunnel: (spi_in, spi_out)} when dpvpnd's one IKE SA holds exactly the
    CHILD_SAs of need, up, and charon holds the same pairs installed."""
    sas = ike_sas(sl)
    if len(sas) != 1 or sas[0]["state"] != "established":
        return None
    ours = {c["name"]: (int(c["spi_in"], 16), int(c["spi_out"], 16))
            for c in sas[0]["children"] if c["up"]}
    if set(ours) != set(need):
        return None
    names = {"net": "to-swan", "b": "kid-b"}
    theirs = {names[m.group(1)]: (int(m.group(5), 16), int(m.group(4), 16))
              for m in RE_CHILD.finditer(sl.swan.swanctl("--list-sas"))
              if m.group(2) == "INSTALLED"}
    return ours if theirs == ours else None


def ping(sl, src, dst, count=3):
    r = sl.ns(sl.ns_s, "ping", "-c", str(count), "-i", "0.2", "-W", "2", "-I", src, dst,
              check=False, timeout=20)
    return r.returncode == 0 and f"{count} received" in r.stdout, r.stdout


def carries(sl, names=("to-swan", "kid-b")):
    pairs = {"to-swan": [(swan.HOST_S, swan.HOST_D)], "kid-b": [(S_B, D_B), (S_B2, D_B)]}
    for n in names:
        for src, dst in pairs[n]:
            ok, out = ping(sl, src, dst)
            assert ok, (n, src, out, sl.gw.ctl("show", "ike")["sas"])


def test_two_children_of_one_ike_sa_carry(sl):
    sas = ike_sas(sl)
    assert len(sas) == 1 and sas[0]["role"] == "initiator", sas
    kids = {c["name"]: c for c in sas[0]["children"]}
    assert kids["kid-b"]["dh"] == 19 and kids["to-swan"]["dh"] == 0, kids   # PFS: ECP-256
    assert (kids["kid-b"]["local_ts"], kids["kid-b"]["remote_ts"]) == \
        (["10.71.0.0/24"], ["10.61.0.0/24", "10.62.0.0/24"]), kids      # a list: TSr of two
    carries(sl)
    t = {x["name"]: x for x in sl.gw.ctl("show", "tunnels")["tunnels"]}
    assert t["kid-b"]["state"] == "up" and t["to-swan"]["state"] == "up", t


def test_one_child_rekeys_alone(sl):
    before = both_up(sl)
    out = lab.sh(lab.DPVPNCTL, "-s", sl.gw.ctl_sock, "rekey", "kid-b", check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    lab.wait_for(lambda: (both_up(sl) or before)["kid-b"] != before["kid-b"], 15,
                 "kid-b rekeyed on both ends")
    after = both_up(sl)
    assert after["to-swan"] == before["to-swan"], (before, after)
    kids = {c["name"]: c for c in ike_sas(sl)[0]["children"]}
    assert kids["kid-b"]["rekeys"] == 1 and kids["to-swan"]["rekeys"] == 0, kids
    carries(sl)


def test_reload_changes_one_child_keeps_the_ike_sa(sl):
    """kid-b's section changed (mtu): a reload deletes and makes again that
    CHILD_SA only; the IKE SA and to-swan's CHILD_SA stay as they are."""
    before, spi_i = both_up(sl), ike_sas(sl)[0]["spi_i"]
    with open(sl.gw.config, "a") as f:
        f.write("mtu = 1400\n")
    r = lab.sh(lab.DPVPNCTL, "-s", sl.gw.ctl_sock, "reload", check=False)
    assert r.returncode == 0 and "1 changed" in r.stdout, r.stdout + r.stderr
    lab.wait_for(lambda: (both_up(sl) or before)["kid-b"] != before["kid-b"], 15,
                 "kid-b made again on both ends")
    after = both_up(sl)
    assert after["to-swan"] == before["to-swan"], (before, after)
    assert [a["spi_i"] for a in ike_sas(sl)] == [spi_i]
    carries(sl)


def test_charon_closes_one_child_the_other_carries(sl):
    sl.swan.swanctl("--terminate", "--child", "b", "--timeout", "10")
    lab.wait_for(lambda: both_up(sl, need=("to-swan",)) is not None, 15,
                 "kid-b gone on both ends, to-swan kept")
    carries(sl, ("to-swan",))
    ok, _ = ping(sl, S_B, D_B, count=1)
    assert not ok


def test_charon_creates_the_child_dpvpnd_picks_it(sl):
    out = sl.swan.swanctl("--initiate", "--child", "b", "--timeout", "15", timeout=25,
                          check=False)
    assert "initiate completed successfully" in out, out + sl.swan.log_text()[-3000:]
    lab.wait_for(lambda: both_up(sl) is not None, 15, "kid-b again on both ends")
    assert len(ike_sas(sl)) == 1
    carries(sl)


def test_charon_ends_the_ike_sa_both_children_told_and_back(sl):
    """charon deletes the IKE SA: dpvpnd tells both its tunnels on it why
    (to-swan, whose IKE SA it was, and kid-b, riding it by ike-sa), and
    both, start = yes, make it again on their own."""
    spi_i = ike_sas(sl)[0]["spi_i"]
    out = sl.swan.swanctl("--terminate", "--ike", "dpsw", "--timeout", "10", check=False)
    assert "terminate completed successfully" in out, out
    lab.wait_for(lambda: ike_sas(sl) and ike_sas(sl)[0]["spi_i"] != spi_i and
                 both_up(sl) is not None, 25, "both CHILD_SAs again on a new IKE SA")
    t = {x["name"]: x for x in sl.gw.ctl("show", "tunnels")["tunnels"]}
    for name in ("to-swan", "kid-b"):
        assert t[name]["state"] == "up" and t[name]["last_ike_end"], t[name]
    carries(sl)


def test_charon_initiates_kid_b_first(sl):
    """charon makes the IKE SA (dpvpnd's ends held) with child b in its
    IKE_AUTH: dpvpnd, the responder, gives it to kid-b by the selectors;
    then net by CREATE_CHILD_SA, given to to-swan."""
    for name in ("kid-b", "to-swan"):
        r = lab.sh(lab.DPVPNCTL, "-s", sl.gw.ctl_sock, "terminate", name, check=False)
        assert r.returncode == 0, r.stdout + r.stderr
    lab.wait_for(lambda: not ike_sas(sl), 10, "dpvpnd's IKE SA gone")
    for child in ("b", "net"):
        out = sl.swan.swanctl("--initiate", "--child", child, "--timeout", "15", timeout=25,
                              check=False)
        assert "initiate completed successfully" in out, out + sl.swan.log_text()[-3000:]
    lab.wait_for(lambda: both_up(sl) is not None, 15, "both again, charon the initiator")
    sas = ike_sas(sl)
    assert len(sas) == 1 and sas[0]["role"] == "responder", sas
    assert sas[0]["children"][0]["name"] == "kid-b", sas    # IKE_AUTH's
    carries(sl)
