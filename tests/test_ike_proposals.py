# SPDX-License-Identifier: BSD-3-Clause
"""IKE and ESP proposals and PFS against strongSwan ([ikepki] issue 16,
requirements 2 and 7): a small proposal matrix (AES-CBC with HMAC-SHA2 and
MODP-2048 or ECP-384, AES-GCM with PRF-SHA512 and Curve25519), both sides on
their default proposals, and CHILD_SA rekeys with PFS under a ping flood
with nothing lost.

    host S     strongSwan gw (netns)          peer gw (netns)           host D
               charon                         dpvpn (dpvpnd + dataplane)
    eth0 ==veth== sw-in      sw-out ==veth== pe-out        pe-in ==veth== eth0
                             198.19.0.1      198.19.0.2

(tests/helpers/swan.py builds the namespaces and charon's swanctl.conf; its IKE
proposal is swan.IKE_PROPOSAL, patched per test here.)"""
import os
import re
import time

import pytest

import lab
import swan
from test_ike_swan import IKE_TUNNEL, PEER_CONF

pytestmark = [pytest.mark.ikepki, pytest.mark.ike, pytest.mark.strongswan]

# IANA transform IDs, as `dpvpnctl show ike` reports them
ENCR = {"aes128": (12, 128), "aes256": (12, 256), "aes128gcm16": (20, 128),
        "aes256gcm16": (20, 256)}
INTEG = {"sha256": 12, "sha384": 13, "sha512": 14}
PRF = {"prfsha256": 5, "prfsha384": 6, "prfsha512": 7}
DH = {"modp2048": 14, "ecp256": 19, "ecp384": 20, "x25519": 31, "curve25519": 31}


def expected(ike):
    """What one single-algorithm IKE proposal negotiates, as show ike has it."""
    words = ike.split("-")
    enc = next(ENCR[w] for w in words if w in ENCR)
    integ = next((INTEG[w] for w in words if w in INTEG), 0)
    prf = next((PRF[w] for w in words if w in PRF), None)
    if prf is None:     # strongSwan's rule: the PRF of the integrity algorithm
        prf = {12: 5, 13: 6, 14: 7}[integ]
    dh = next(DH[w] for w in words if w in DH)
    return {"encr": enc[0], "encr_bits": enc[1], "integ": integ, "prf": prf, "dh": dh}


def gateway(sl, extra, start="no", cipher=True):
    """dpvpnd on the peer side, with the tunnel to charon plus extra lines
    (cipher=False: no cipher key, the ESP proposals are esp-proposals' or the
    default)."""
    pe = sl.ns_pe
    for dev in ("pe-in", "pe-out"):
        sl.ip(pe, "addr", "flush", "dev", dev)
    sl.ns(pe, "sysctl", "-qw", "net.ipv4.ip_forward=0")
    psk = os.path.join(sl.workdir, "swan.psk")
    fd = os.open(psk, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(swan.PSK)
    tunnel = IKE_TUNNEL.format(out=swan.PEER_OUT, swan_out=swan.SWAN_OUT,
                               peer_net=swan.PEER_NET, swan_net=swan.SWAN_NET,
                               cipher="aes128-gcm", psk=psk)
    tunnel = tunnel.replace("start = no", f"start = {start}") + extra
    if not cipher:
        tunnel = tunnel.replace("cipher = aes128-gcm\n", "")
    path = os.path.join(sl.workdir, "peer.conf")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(PEER_CONF.format(gw_in=swan.PEER_GW_IN, out=swan.PEER_OUT) + tunnel)
    return lab.Gateway("gw-peer", path,
                       ["net_af_packet0,iface=pe-in",
                        "net_af_packet1,iface=pe-out,qdisc_bypass=0"],
                       sl.workdir, ["-l", "0-1", "--main-lcore", "0"], pe)


def live(sl):
    """The IKE SA that carries the CHILD_SA: show ike also lists SAs being
    replaced ("rekeyed") and a peer's redundant one of a crossed rekey, kept
    until its Delete (doc/ike.md), in any order."""
    sas = [a for a in sl.gw.ctl("show", "ike")["sas"]
           if a["state"] == "established" and a["child"]]
    return max(sas, key=lambda a: a["ike_rekeys"]) if sas else NONE_UP


NONE_UP = {"state": "none", "child": None, "ike_rekeys": -1, "child_rekeys": -1}


def up(sl):
    return live(sl) is not NONE_UP


def settled(sl):
    """charon has one CHILD_SA, installed, and no task under way on it: its
    Delete of a rekeyed one is answered (until then charon 5.9 answers an
    IKE SA rekey with TEMPORARY_FAILURE, "a child is half-open")."""
    kids = swan.parse_list_sas(sl.swan.swanctl("--list-sas"))
    return len(kids) == 1 and all(v[0] == "INSTALLED" for v in kids.values())


def ike_rekey_when_settled(sl, n):
    """dpvpnd rekeys the IKE SA once the last exchange is over on both sides,
    and it is the n-th rekey; the logs of both ends if it does not come."""
    lab.wait_for(lambda: settled(sl), 15, "charon's CHILD_SA settled")
    assert "rekeying the IKE SA" in sl.gw.ctl_text("rekey-ike", "to-swan")
    try:
        lab.wait_for(lambda: up(sl) and live(sl)["ike_rekeys"] >= n,
                     15, "dpvpnd's IKE SA rekey")
    except TimeoutError as e:
        raise AssertionError(f"{e}\n{sl.gw.ctl('show', 'ike')}\ndpvpnd:\n"
                             f"{sl.gw.dpvpnd.output()[-3000:]}\ncharon:\n"
                             f"{sl.swan.log_text()[-5000:]}") from e


def pings_both_ways(sl):
    for side in ("s", "d"):
        sl.ping(side, count=2)
        r = sl.ping(side, count=4)
        assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr


def charon_initiates(sl):
    out = sl.swan.swanctl("--initiate", "--child", "net", "--timeout", "20", timeout=30,
                          check=False)
    assert "initiate completed successfully" in out, \
        out + sl.swan.log_text()[-4000:] + sl.gw.dpvpnd.output()[-3000:]


def bring_up(sl, who):
    """Both ends started, the CHILD_SA up: who ("dpvpnd": start = yes, or
    "charon": swanctl --initiate) initiates."""
    if who == "dpvpnd":
        sl.swan.start()
        sl.gw.start()
        lab.wait_for(lambda: up(sl), 20, "dpvpnd's IKE SA with charon")
    else:
        sl.gw.start()
        sl.swan.start()
        charon_initiates(sl)


@pytest.mark.parametrize("ike,esp,who", [
    ("aes128-sha256-modp2048", "aes128-sha256", "charon"),
    ("aes256-sha384-ecp384", "aes256gcm16", "charon"),
    ("aes256gcm16-prfsha512-x25519", "aes128gcm16", "charon"),
    ("aes256-sha512-x25519", "aes256-sha256", "charon"),
    ("aes128-sha256-modp2048", "aes128-sha256", "dpvpnd"),
    ("aes256-sha384-ecp384", "aes256gcm16", "dpvpnd"),
])
def test_proposal_matrix(monkeypatch, ike, esp, who):
    """One side initiates with one IKE and one ESP proposal, the other has the
    same (charon's proposals / esp_proposals, dpvpnd's ike-proposals /
    esp-proposals): the IKE SA has exactly those algorithms (the SK payload
    with AES-CBC and HMAC-SHA2 where asked), the CHILD_SA carries pings both
    ways, and a rekey of each kind from charon and an IKE SA rekey from dpvpnd
    go through."""
    why = swan.ensure_installed()
    if why:
        pytest.skip(f"strongSwan interop: {why}")
    monkeypatch.setattr(swan, "IKE_PROPOSAL", ike)
    with swan.SwanLab(esp) as sl:
        sl.gw = gateway(sl, f"ike-proposals = {ike}\nesp-proposals = {esp}\n",
                        start="yes" if who == "dpvpnd" else "no")
        bring_up(sl, who)
        st = live(sl)
        got = {k: st[k] for k in ("encr", "encr_bits", "integ", "prf", "dh")}
        assert got == expected(ike), (got, st)
        pings_both_ways(sl)
        sl.swan.swanctl("--rekey", "--ike", "dpsw", timeout=30)
        lab.wait_for(lambda: up(sl) and live(sl)["ike_rekeys"] >= 1,
                     15, "charon's IKE SA rekey")
        sl.swan.swanctl("--rekey", "--child", "net", timeout=30)
        lab.wait_for(lambda: live(sl)["child_rekeys"] >= 1, 15,
                     "charon's CHILD_SA rekey")
        # ours: the IKE SA rekey carries a KE of the group in use, under the new keys
        ike_rekey_when_settled(sl, 2)
        st = live(sl)
        assert {k: st[k] for k in got} == got, st
        r = sl.ping("s", count=3)
        assert " 0% packet loss" in r.stdout, r.stdout
        d = sl.gw.ctl("show", "counters")["drops"]
        assert d["bad-icv"] == 0, d
        print(f"test_ike_proposals: {who} initiating, IKE {ike}, ESP {esp}: {got}, pings, "
              f"IKE SA and CHILD_SA rekeys")


# strongSwan 5.9's default as both pick it: AES-CBC-128, HMAC-SHA2-256-128,
# PRF-SHA256, Curve25519 (the first of each kind in both default lists)
DEFAULT_PICK = {"encr": 12, "encr_bits": 128, "integ": 12, "prf": 5, "dh": 31}


@pytest.mark.parametrize("who", ["dpvpnd", "charon"])
def test_defaults_meet(monkeypatch, who):
    """Both sides on their default proposals: dpvpnd's (strongSwan 5.9's, less
    what dpvpn lacks; no cipher key, no ike-proposals or esp-proposals),
    charon's `proposals = default` and `esp_proposals = default`.  Either
    side initiates; they agree at once (no INVALID_KE_PAYLOAD: both put
    Curve25519 first) on the first algorithm of each kind, and the CHILD_SA
    carries pings both ways.  charon's default IKE proposal has 38
    transforms: it was refused as malformed while dpvpn took at most 32."""
    why = swan.ensure_installed()
    if why:
        pytest.skip(f"strongSwan interop: {why}")
    monkeypatch.setattr(swan, "IKE_PROPOSAL", "default")
    with swan.SwanLab("default") as sl:
        sl.gw = gateway(sl, "", start="yes" if who == "dpvpnd" else "no", cipher=False)
        bring_up(sl, who)
        ike = sl.gw.ctl("show", "ike")
        st = ike["sas"][0]
        got = {k: st[k] for k in ("encr", "encr_bits", "integ", "prf", "dh")}
        sel = re.findall(r"selected proposal: (.*)", sl.swan.log_text())
        print(f"test_ike_proposals: defaults, {who} initiating: show ike {got}; charon "
              f"selected {sel}")
        assert got == DEFAULT_PICK, (got, st)
        assert st["role"] == ("initiator" if who == "dpvpnd" else "responder"), st
        assert ike["stats"]["rejected"]["invalid-ke"] == 0
        assert ike["stats"]["rejected"]["malformed"] == 0, ike["stats"]
        pings_both_ways(sl)


# charon's kernel-libipsec has no ESN ("failed to create SAD entry" where it
# is negotiated): charon is the peer for the negotiation, not for ESN's
# dataplane (tests/test_ike_lab.py has two dpvpnds on ESN; tests/test_esn.py
# the dataplane against scapy).
@pytest.mark.parametrize("swan_esp,ours,who,ok", [
    ("aes128gcm16-noesn-esn", "aes128gcm16-esn-noesn", "charon", True),
    ("aes128gcm16-noesn-esn", "aes128gcm16-esn-noesn", "dpvpnd", True),
    ("aes128gcm16-noesn", "aes128gcm16-esn", "charon", False),
])
def test_esn_negotiated(monkeypatch, swan_esp, ours, who, ok):
    """ESN in charon's esp_proposals and dpvpnd's esp-proposals (esn, noesn,
    or both, strongSwan's keywords): dpvpnd as responder takes the first the
    initiator offers that it accepts, as initiator the one charon picks
    (its own order: prefer_configured_proposals); the dataplane's SAs carry
    no ESN (`show sa`) and pings cross; a proposal with ESN only meets
    NO_PROPOSAL_CHOSEN from a peer without it, counted."""
    why = swan.ensure_installed()
    if why:
        pytest.skip(f"strongSwan interop: {why}")
    with swan.SwanLab(swan_esp) as sl:
        sl.gw = gateway(sl, f"esp-proposals = {ours}\n",
                        start="yes" if who == "dpvpnd" else "no", cipher=False)
        if not ok:
            sl.gw.start()
            sl.swan.start()
            out = sl.swan.swanctl("--initiate", "--child", "net", "--timeout", "20",
                                  timeout=30, check=False)
            assert "initiate completed successfully" not in out, out
            assert "NO_PROPOSAL_CHOSEN" in sl.swan.log_text(), sl.swan.log_text()[-3000:]
            rej = sl.gw.ctl("show", "ike")["stats"]["rejected"]
            assert rej["no-proposal"] >= 1, rej
            assert not sl.gw.ctl("show", "sa")["sas"]
            return
        bring_up(sl, who)
        sas = sl.gw.ctl("show", "sa")["sas"]
        assert sas and all(s["esn"] == 0 for s in sas), sas
        pings_both_ways(sl)
        print(f"test_ike_proposals: ESN: charon {swan_esp}, dpvpnd {ours}, {who} "
              f"initiating: no ESN, pings")


def flood_rekeys(sl, n_each):
    """CHILD_SA rekeys from each side in turn (dpvpnd first) under a ping flood
    S -> D; returns (sent, lost) of the flood."""
    flood = sl.bg("ping-flood", sl.ns_s, "ping", "-q", "-i", "0.01", "-c", "2000",
                  "-w", "40", swan.HOST_D)
    time.sleep(0.5)
    done = 0
    for i in range(n_each):
        end = time.monotonic() + 10
        while True:     # busy while the last rekey's old SA waits out its grace
            r = lab.sh(lab.DPVPNCTL, "-s", sl.gw.ctl_sock, "rekey", "to-swan", check=False)
            if r.returncode == 0 or time.monotonic() > end or "under way" not in r.stderr:
                break
            time.sleep(0.2)
        assert "rekeying" in r.stdout, (r.stdout, r.stderr)
        done += 1
        lab.wait_for(lambda: live(sl)["child_rekeys"] >= done, 15,
                     "dpvpnd's PFS rekey")
        time.sleep(2.5)     # the old CHILD_SA's grace period, before the next one
        sl.swan.swanctl("--rekey", "--child", "net", timeout=30)
        done += 1
        lab.wait_for(lambda: live(sl)["child_rekeys"] >= done, 15,
                     "charon's PFS rekey")
    lab.wait_for(lambda: flood.p.poll() is not None, 45, "ping flood")
    m = re.search(r"(\d+) packets transmitted, (\d+) received", flood.output())
    assert m, flood.output()
    return int(m.group(1)), int(m.group(1)) - int(m.group(2))


def test_pfs_rekeys_under_traffic(monkeypatch):
    """PFS both ways: charon's esp_proposals aes128gcm16-modp2048, dpvpnd's
    esp-proposals aes128gcm16-x25519-modp2048.  charon's rekeys carry a
    MODP-2048 KE; dpvpnd's first one (the CHILD_SA of IKE_AUTH has no group)
    offers x25519, charon answers INVALID_KE_PAYLOAD (MODP_2048) and dpvpnd
    rekeys again with it, then keeps the group in use.  Four
    rekeys under a ping flood: not one packet lost, no bad ICV, and each
    rekeyed CHILD_SA has group 14."""
    why = swan.ensure_installed()
    if why:
        pytest.skip(f"strongSwan interop: {why}")
    monkeypatch.setattr(swan, "IKE_PROPOSAL", "aes128-sha256-modp2048")
    with swan.SwanLab("aes128gcm16-modp2048") as sl:
        sl.gw = gateway(sl, "ike-proposals = aes128-sha256-modp2048\n"
                            "esp-proposals = aes128gcm16-x25519-modp2048\n")
        sl.gw.start()
        sl.swan.start()
        charon_initiates(sl)
        assert live(sl)["child"]["dh"] == 0   # IKE_AUTH's: no PFS
        pings_both_ways(sl)
        sent, lost = flood_rekeys(sl, 2)
        st = live(sl)
        assert st["child"]["dh"] == 14, st
        log = sl.swan.log_text()
        assert re.search(r"ESP:AES_GCM_16_128/MODP_2048", log), log[-4000:]
        # dpvpnd's first rekey offered x25519: charon's INVALID_KE_PAYLOAD, counted
        rejected = sl.gw.ctl("show", "ike")["stats"]["rejected"]
        assert rejected["invalid-ke"] == 1, rejected
        d = sl.gw.ctl("show", "counters")["drops"]
        assert d["bad-icv"] == 0 and d["replay"] == 0, d
        print(f"test_ike_proposals: PFS (MODP-2048) CHILD_SA rekeys, 2 charon's and 2 "
              f"dpvpnd's (after INVALID_KE_PAYLOAD), under a ping flood: {sent} sent, "
              f"{lost} lost")
        assert sent > 500 and lost == 0
