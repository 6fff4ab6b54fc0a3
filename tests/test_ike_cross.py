# SPDX-License-Identifier: BSD-3-Clause
"""Crossing rekeys with strongSwan's charon ([ikepki] issue 16, requirement 3):
dpvpnd and charon rekey the CHILD_SA (then the IKE SA) at the same moment,
a few times, with a ping flood S -> D running; RFC 7296 2.8.1 and 2.8.2 say
both exchanges complete and the one with the lowest nonce is deleted by its
initiator.  Afterwards both ends hold one CHILD_SA (one IKE SA) with the same
SPIs, and no ping was lost.

    host S     strongSwan gw (netns)          dpvpn gw (netns)          host D
               charon #1                      dpvpn-dataplane + dpvpnd
    eth0 ==veth== sw-in      sw-out ==veth== pe-out        pe-in ==veth== eth0
                             198.19.0.1      198.19.0.2

(tests/helpers/swan.py builds the namespaces; charon initiates, dpvpnd answers.)
charon sends its CREATE_CHILD_SA requests 60 ms late (send_delay), so that
they cross dpvpnd's, started 0 to 30 ms after swanctl; the test counts the
crossings (`show ike` rekey_collisions) and needs most rounds to cross."""
import os
import re
import subprocess
import time

import pytest

import lab
import swan
from test_ike_swan import IKE_TUNNEL, PEER_CONF

pytestmark = [pytest.mark.ikepki, pytest.mark.ike, pytest.mark.strongswan]

DELAYS = (0.0, 0.005, 0.01, 0.015, 0.02, 0.03)    # dpvpnctl after swanctl, s
GRACE_MS = 300          # dpvpnd's old CHILD_SA outlives its rekey this long
# charon holds its CREATE_CHILD_SA requests this long before sending them
# (strongswan.conf send_delay, meant for such tests): dpvpnd's request, sent
# meanwhile, reaches charon while its own is under way, and charon's reaches
# dpvpnd after dpvpnd sent its own: the rekeys cross
SEND_DELAY_MS = 60
SEND_DELAY = {"send_delay": SEND_DELAY_MS, "send_delay_type": 36,
              "send_delay_request": "yes", "send_delay_response": "no"}
RE_IKE = re.compile(r"^dpsw: #\d+, (\S+), IKEv2, ([0-9a-f]{16})_i\*? ([0-9a-f]{16})_r", re.M)


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
        psk = os.path.join(s.workdir, "swan.psk")
        fd = os.open(psk, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(swan.PSK)
        path = os.path.join(s.workdir, "peer.conf")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(PEER_CONF.format(gw_in=swan.PEER_GW_IN, out=swan.PEER_OUT) +
                    IKE_TUNNEL.format(out=swan.PEER_OUT, swan_out=swan.SWAN_OUT,
                                      peer_net=swan.PEER_NET, swan_net=swan.SWAN_NET,
                                      cipher="aes128-gcm", psk=psk))
        s.gw = lab.Gateway("gw-peer", path,
                           ["net_af_packet0,iface=pe-in",
                            "net_af_packet1,iface=pe-out,qdisc_bypass=0"],
                           s.workdir, ["-l", "0-1", "--main-lcore", "0"], pe)
        old = os.environ.get("DPVPND_REKEY_GRACE_MS")
        os.environ["DPVPND_REKEY_GRACE_MS"] = str(GRACE_MS)
        try:
            s.gw.start()
        finally:
            if old is None:
                del os.environ["DPVPND_REKEY_GRACE_MS"]
            else:
                os.environ["DPVPND_REKEY_GRACE_MS"] = old
        s.swan.strongswan["charon"].update(SEND_DELAY)      # see SEND_DELAY_MS
        s.swan.write_config()
        s.swan.start()
        out = s.swan.swanctl("--initiate", "--child", "net", "--timeout", "20", timeout=30,
                             check=False)
        assert "initiate completed successfully" in out, out + s.swan.log_text()[-4000:]
        for side in ("s", "d"):
            s.ping(side, count=2)
        yield s


def ike(sl):
    sas = sl.gw.ctl("show", "ike")["sas"]
    return [a for a in sas if a["name"] == "to-swan"]


def both(sl, swan_args, ctl_args, delay):
    """swanctl ARGS and, delay s later, dpvpnctl ARGS: both answers."""
    env = dict(os.environ, STRONGSWAN_CONF=sl.swan.conf,
               SWANCTL_DIR=os.path.join(sl.swan.dir, "swanctl"))
    a = subprocess.Popen([swan.SWANCTL, *swan_args, "--uri", sl.swan.vici], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(delay)
    b = subprocess.Popen([lab.DPVPNCTL, "-s", sl.gw.ctl_sock, *ctl_args],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return a.communicate(timeout=30)[0], b.communicate(timeout=10)[0]


def one_child(sl):
    """Both ends settled on one CHILD_SA, the same SPIs (charon: in, out)."""
    sas = ike(sl)
    if len(sas) != 1 or sas[0]["state"] != "established" or not sas[0]["child"]:
        return None
    kids = [v for v in swan.parse_list_sas(sl.swan.swanctl("--list-sas")).values()
            if v[0] == "INSTALLED"]
    ours = [a for a in sl.gw.ctl("show", "sa")["sas"] if a.get("name") == "to-swan"]
    c = sas[0]["child"]
    if len(kids) == 1 and len(ours) == 2 and \
            (kids[0][3], kids[0][4]) == (int(c["spi_out"], 16), int(c["spi_in"], 16)):
        return c
    return None


def one_ike(sl):
    """Both ends settled on one IKE SA with the same SPIs.  A redundant one of
    charon's that dpvpnd keeps in state rekeyed, waiting for charon's Delete,
    is not counted: when charon aborts its rekey ("peer did not notice IKE_SA
    rekey collision") that Delete never comes and it ends, silently, after 30 s."""
    sas = [a for a in ike(sl) if a["state"] != "rekeyed"]
    theirs = RE_IKE.findall(sl.swan.swanctl("--list-sas"))
    if len(sas) == 1 and sas[0]["state"] == "established" and len(theirs) == 1 and \
            theirs[0] == ("ESTABLISHED", sas[0]["spi_i"], sas[0]["spi_r"]):
        return sas[0]
    return None


def flood_ok(flood):
    """Echo requests sent, and how many of them got no reply.  The flood is
    stopped by SIGINT, and ping counts the request it sent last as lost when
    its reply is still on the way: that one is not counted, any other is, by
    its icmp_seq (a CI run once failed so, 1 of 1440 "lost", no drop anywhere)."""
    lab.wait_for(lambda: flood.p.poll() is not None, 60, "ping flood")
    out = flood.output()
    m = re.search(r"(\d+) packets transmitted, (\d+) received", out)
    assert m and int(m.group(1)) > 100, out[-2000:]
    sent = int(m.group(1))
    answered = {int(n) for n in re.findall(r"icmp_seq=(\d+) ttl=", out)}
    assert len(answered) == int(m.group(2)), out[-2000:]   # no duplicate replies
    lost = len(set(range(1, sent)) - answered)
    if sent - len(answered) != lost:
        print(f"ping: {sent - len(answered)} lost, {sent - len(answered) - lost} of them the "
              "last request, its reply on the way at SIGINT")
    return sent, lost


def rounds(sl, swan_args, ctl_args, settled, what, crossed):
    """len(DELAYS) rounds, and more (the delays again, at most as many) until
    crossed() says half of len(DELAYS) crossed: on a loaded machine the two
    requests overlap less often (seen: 1 or 2 of 6)."""
    flood = sl.bg(f"flood-{what}", sl.ns_s, "ping", "-n", "-i", "0.01", "-c", "100000",
                  "-w", str(4 * len(DELAYS) + 20), swan.HOST_D)
    time.sleep(0.5)
    done = []
    for i, d in enumerate(DELAYS + DELAYS):
        if i >= len(DELAYS) and crossed() >= len(DELAYS) // 2:
            break
        outs = both(sl, swan_args, ctl_args, d)
        try:
            lab.wait_for(lambda: settled(sl), 15, f"one {what} on both ends after {outs}")
        except TimeoutError:
            print("dpvpnd:", ike(sl), "\ncharon:", sl.swan.swanctl("--list-sas"),
                  sl.swan.log_text()[-6000:], sl.gw.dpvpnd.output()[-3000:])
            raise
        time.sleep(GRACE_MS / 1000 + 0.3)   # the old SA's grace: the next is not refused
        got = []
        lab.wait_for(lambda: got.append(settled(sl)) or got[-1] is not None, 15,
                     f"one {what} on both ends, still, after {outs}")
        done.append(got[-1])
    os.kill(flood.p.pid, 2)
    sent, lost = flood_ok(flood)
    d = sl.gw.ctl("show", "counters")["drops"]
    assert d["bad-icv"] == 0 and d["replay"] == 0, d
    if lost:        # where: dpvpn's drops, and charon's side of it
        print("dpvpn drops:", {k: v for k, v in d.items() if v},
              "\ncharon:", sl.swan.log_text()[-8000:])
    return done, sent, lost


def test_crossing_child_sa_rekeys(sl):
    before = ike(sl)[0]
    done, sent, lost = rounds(sl, ("--rekey", "--child", "net"), ("rekey", "to-swan"),
                              one_child, "CHILD_SA",
                              lambda: ike(sl)[0]["rekey_collisions"]["total"] -
                              before["rekey_collisions"]["total"])
    after = ike(sl)[0]
    n = after["rekey_collisions"]["total"] - before["rekey_collisions"]["total"]
    print(f"test_ike_cross: {len(done)} rounds of CHILD_SA rekeys by charon and dpvpnd "
          f"at once: {after['child_rekeys'] - before['child_rekeys']} rekeys, {n} crossed "
          f"({after['rekey_collisions']}); ping flood {sent} sent, {lost} lost")
    assert len({c["spi_in"] for c in done}) == len(done)     # each round a new one
    assert lost == 0, sl.gw.dpvpnd.output()[-3000:]
    assert n >= len(DELAYS) // 2, "few rounds crossed: " + sl.gw.dpvpnd.output()[-3000:]


def test_crossing_ike_sa_rekeys(sl):
    before = one_ike(sl)
    done, sent, lost = rounds(sl, ("--rekey", "--ike", "dpsw"), ("rekey-ike", "to-swan"),
                              one_ike, "IKE SA",
                              lambda: (one_ike(sl) or before)["rekey_collisions"]["total"] -
                              before["rekey_collisions"]["total"])
    after = one_ike(sl)
    n = after["rekey_collisions"]["total"] - before["rekey_collisions"]["total"]
    print(f"test_ike_cross: {len(done)} rounds of IKE SA rekeys by charon and dpvpnd at "
          f"once: generation {after['ike_rekeys']}, {n} crossed "
          f"({after['rekey_collisions']}); ping flood {sent} sent, {lost} lost")
    assert after["child"] == before["child"]       # the CHILD_SA carried on
    assert len({s["spi_i"] for s in done}) == len(done)
    assert lost == 0, sl.gw.dpvpnd.output()[-3000:]
    assert n >= len(DELAYS) // 2, "few rounds crossed: " + sl.gw.dpvpnd.output()[-3000:]
