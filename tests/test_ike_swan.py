# SPDX-License-Identifier: BSD-3-Clause
"""The IKE punt path with a live IKE peer ([ike] issue, requirement 2):
strongSwan's charon initiates towards a dpvpn gateway; its IKE_SA_INIT
request must reach the IKE channel (a test client of the control protocol,
as dpvpnd will be) exactly as charon sent it, and an answer written to the
channel must reach charon, which must act on it.

    host S     strongSwan gw (netns)          peer gw (netns)           host D
               charon #1                      dpvpn only: port 1 outside
    eth0 ==veth== sw-in      sw-out ==veth== pe-out        pe-in ==veth== eth0
                             198.19.0.1      198.19.0.2

(tests/helpers/swan.py builds the namespaces; charon #2 is never started.)  The
answer is IKE_SA_INIT's error response NO_PROPOSAL_CHOSEN, built by scapy:
charon logs that it received it and gives up, which proves the reply path
through the dataplane (addresses, ports, checksums, ARP) to a real peer."""
import json
import os
import re
import time

import pytest

import lab
import swan
from test_ike_punt import Channel

pytestmark = [pytest.mark.ike, pytest.mark.strongswan]

PEER_CONF = """; dpvpn.conf of tests/test_ike_swan.py: ports only, no tunnel
[port inside]
id = 0
role = inside
address = {gw_in}/24

[port outside]
id = 1
role = outside
address = {out}/24
"""


@pytest.fixture(scope="module")
def swanlab():
    why = swan.ensure_installed()
    if why:
        pytest.skip(f"strongSwan interop: {why}")
    with swan.SwanLab() as sl:
        pe = sl.ns_pe
        for dev in ("pe-in", "pe-out"):         # the dataplane owns these addresses
            sl.ip(pe, "addr", "flush", "dev", dev)
        sl.ns(pe, "sysctl", "-qw", "net.ipv4.ip_forward=0")
        path = os.path.join(sl.workdir, "peer.conf")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(PEER_CONF.format(gw_in=swan.PEER_GW_IN, out=swan.PEER_OUT))
        sl.gw = lab.Gateway("gw-peer", path,
                            ["net_af_packet0,iface=pe-in",
                             "net_af_packet1,iface=pe-out,qdisc_bypass=0"],
                            sl.workdir, ["-l", "0-1", "--main-lcore", "0"], pe)
        sl.gw.start()
        sl.swan.start()
        yield sl


def test_charon_ike_sa_init_reaches_the_channel_and_its_answer_reaches_charon(swanlab):
    from scapy.contrib.ikev2 import IKEv2, IKEv2_payload_Notify
    sl = swanlab
    ch = Channel(sl.gw.dp_sock)
    try:
        ch.open()
        init = sl.bg("swanctl-initiate", None, "env", f"STRONGSWAN_CONF={sl.swan.conf}",
                     f"SWANCTL_DIR={os.path.join(sl.swan.dir, 'swanctl')}", swan.SWANCTL,
                     "--initiate", "--child", "net", "--timeout", "25", "--uri", sl.swan.vici)
        p = ch.wait_push(timeout=15)
        assert (p["local"], p["lport"], p["remote"], p["rport"], p["port"]) == \
            (swan.PEER_OUT, 500, swan.SWAN_OUT, 500, 1), p
        if os.environ.get("DPVPN_SAVE_IKE"):      # a real peer's message, e.g. a fuzz seed
            with open(os.environ["DPVPN_SAVE_IKE"], "wb") as f:
                f.write(p["data"])
        req = IKEv2(p["data"])
        assert req.exch_type == 34 and req.id == 0, req.summary()
        assert req.init_SPI != bytes(8) and req.resp_SPI == bytes(8)
        assert len(p["data"]) == req.length
        # what charon logged sending is what arrived: its size
        sent = re.findall(r"sending packet: from \S+ to \S+ \((\d+) bytes\)", sl.swan.log_text())
        assert str(len(p["data"]) + 0) in sent, (len(p["data"]), sent)
        answer = bytes(IKEv2(init_SPI=req.init_SPI, resp_SPI=bytes(8), next_payload=41,
                             exch_type=34, flags="Response", id=0) /
                       IKEv2_payload_Notify(next_payload=0, proto=0, type=14))
        got = ""
        for _ in range(4):      # the first may meet an unresolved neighbour (counted)
            status, err = ch.tx(swan.PEER_OUT, 500, swan.SWAN_OUT, p["rport"], answer)
            assert status == 0, err
            end = time.monotonic() + 3
            while time.monotonic() < end and "NO_PROPOSAL_CHOSEN" not in got:
                got = sl.swan.log_text()
                time.sleep(0.2)
            if "NO_PROPOSAL_CHOSEN" in got:
                break
        assert re.search(r"received NO_PROPOSAL_CHOSEN notify error", got), got[-3000:]
        print("test_ike_swan: charon: " + " | ".join(
            l.strip() for l in got.splitlines() if "NO_PROPOSAL" in l or "sending packet" in l))
        init.stop()
    finally:
        ch.close()
    c = sl.gw.ctl("show", "counters")
    assert c["ike_in"] >= 1 and c["ike_out"] >= 1, c
    total, gone = lab.counters_balance(c)
    assert total == gone, c


IKE_TUNNEL = """
[tunnel to-swan]
local = {out}
remote = {swan_out}
local-ts = {peer_net}
remote-ts = {swan_net}
cipher = {cipher}
keying = ike
psk-file = {psk}
start = no
encap = udp
"""


# The CBC case is `long` (CI's budget): test_ike_proposals' matrix has CBC +
# HMAC-SHA2 CHILD_SAs with rekeys of both kinds against charon, and
# test_pfs_rekeys_under_traffic the rekeys under a ping flood.
@pytest.mark.parametrize("esp,cipher", [
    ("aes128gcm16", "aes128-gcm"),
    pytest.param("aes256-sha256", "aes256-cbc-sha256", marks=pytest.mark.long)])
def test_charon_negotiates_with_dpvpnd(esp, cipher):
    """strongSwan's charon initiates IKEv2 (PSK, aes128gcm16-prfsha256-ecp256,
    UDP encapsulation as its kernel-libipsec needs) towards dpvpnd, which
    answers through the IKE channel and installs the CHILD_SA; then pings
    both ways through charon <-> dpvpn, and a rekey from each side."""
    why = swan.ensure_installed()
    if why:
        pytest.skip(f"strongSwan interop: {why}")
    with swan.SwanLab(esp) as sl:
        pe = sl.ns_pe
        for dev in ("pe-in", "pe-out"):
            sl.ip(pe, "addr", "flush", "dev", dev)
        sl.ns(pe, "sysctl", "-qw", "net.ipv4.ip_forward=0")
        psk = os.path.join(sl.workdir, "swan.psk")
        fd = os.open(psk, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(swan.PSK)
        path = os.path.join(sl.workdir, "peer.conf")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(PEER_CONF.format(gw_in=swan.PEER_GW_IN, out=swan.PEER_OUT) +
                    IKE_TUNNEL.format(out=swan.PEER_OUT, swan_out=swan.SWAN_OUT,
                                      peer_net=swan.PEER_NET, swan_net=swan.SWAN_NET,
                                      cipher=cipher, psk=psk))
        sl.gw = lab.Gateway("gw-peer", path,
                            ["net_af_packet0,iface=pe-in",
                             "net_af_packet1,iface=pe-out,qdisc_bypass=0"],
                            sl.workdir, ["-l", "0-1", "--main-lcore", "0"], pe)
        sl.gw.start()
        sl.swan.start()
        out = sl.swan.swanctl("--initiate", "--child", "net", "--timeout", "20", timeout=30,
                              check=False)
        assert "initiate completed successfully" in out, \
            out + sl.swan.log_text()[-4000:] + sl.gw.dpvpnd.output()[-3000:]
        st = sl.gw.ctl("show", "ike")["sas"]
        assert st and st[0]["state"] == "established" and st[0]["child"], st
        assert st[0]["udp_encap"] and st[0]["remote"].endswith(":4500"), st
        for side in ("s", "d"):
            sl.ping(side, count=2)
            r = sl.ping(side, count=5)
            assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr
        # forced rekeys from each side under traffic: a ping flood S -> D throughout
        flood = sl.bg("ping-flood", sl.ns_s, "ping", "-q", "-i", "0.01", "-c", "1400",
                      "-w", "30", swan.HOST_D)
        time.sleep(0.5)
        sl.swan.swanctl("--rekey", "--child", "net", timeout=30)
        lab.wait_for(lambda: sl.gw.ctl("show", "ike")["sas"][0]["child_rekeys"] >= 1, 15,
                     "charon's rekey")
        r = sl.ping("s", count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        assert "rekeying" in sl.gw.ctl_text("rekey", "to-swan")
        lab.wait_for(lambda: sl.gw.ctl("show", "ike")["sas"][0]["child_rekeys"] >= 2, 15,
                     "dpvpnd's rekey")
        r = sl.ping("d", count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        # IKE SA rekeys: charon's, then ours; the CHILD_SA carries on
        child = sl.gw.ctl("show", "ike")["sas"][0]["child"]
        sl.swan.swanctl("--rekey", "--ike", "dpsw", timeout=30)

        def rekeyed(n):
            sas = sl.gw.ctl("show", "ike")["sas"]
            return len(sas) == 1 and sas[0]["state"] == "established" and \
                sas[0]["ike_rekeys"] >= n
        lab.wait_for(lambda: rekeyed(1), 15, "charon's IKE SA rekey")
        assert "rekeying the IKE SA" in sl.gw.ctl_text("rekey-ike", "to-swan")
        lab.wait_for(lambda: rekeyed(2), 15, "dpvpnd's IKE SA rekey")
        assert sl.gw.ctl("show", "ike")["sas"][0]["child"] == child
        r = sl.ping("s", count=3)
        assert " 0% packet loss" in r.stdout, r.stdout
        # (busy while our last CHILD_SA rekey's old SA waits out its 2 s grace)
        end = time.monotonic() + 10
        while True:
            r = lab.sh(lab.DPVPNCTL, "-s", sl.gw.ctl_sock, "rekey", "to-swan", check=False)
            if r.returncode == 0 or time.monotonic() > end or "under way" not in r.stderr:
                break
            time.sleep(0.2)
        assert "rekeying" in r.stdout, (r.stdout, r.stderr)
        lab.wait_for(lambda: sl.gw.ctl("show", "ike")["sas"][0]["child_rekeys"] >= 3, 15,
                     "a CHILD_SA rekey over the rekeyed IKE SA")
        r = sl.ping("d", count=3)
        assert " 0% packet loss" in r.stdout, r.stdout
        lab.wait_for(lambda: flood.p.poll() is not None, 30, "ping flood")
        m = re.search(r"(\d+) packets transmitted, (\d+) received", flood.output())
        assert m and int(m.group(1)) > 500, flood.output()
        lost = int(m.group(1)) - int(m.group(2))
        d = sl.gw.ctl("show", "counters")["drops"]
        assert d["bad-icv"] == 0 and d["replay"] == 0, d
        print(f"test_ike_swan: charon <-> dpvpnd, ESP {esp}: up, pings both ways, 3 CHILD_SA "
              f"rekeys and 2 IKE SA rekeys under a ping flood: {m.group(1)} sent, {lost} lost")
        assert lost == 0, flood.output()


def test_dpvpnd_initiates_to_charon_then_finds_it_gone(monkeypatch):
    """dpvpnd as the initiator (start = yes), charon the responder: the
    tunnel comes up with UDP encapsulation, iperf3 runs both ways; no byte of
    the CHILD_SA's keys (charon logs them, chd = 4) is left in dpvpnd's log,
    its state file, any show output or its memory; then charon is killed
    (it sends nothing) and dpvpnd's liveness check finds the peer gone and
    removes the SAs (dpd = 2, retransmissions shortened for the test)."""
    from test_secrets import Scanner, process_memory
    why = swan.ensure_installed()
    if why:
        pytest.skip(f"strongSwan interop: {why}")
    monkeypatch.setenv("DPVPND_IKE_RETRANS_MS", "200")
    monkeypatch.setenv("DPVPND_IKE_RETRANS_TRIES", "3")
    with swan.SwanLab("aes128gcm16") as sl:
        pe = sl.ns_pe
        for dev in ("pe-in", "pe-out"):
            sl.ip(pe, "addr", "flush", "dev", dev)
        sl.ns(pe, "sysctl", "-qw", "net.ipv4.ip_forward=0")
        psk = os.path.join(sl.workdir, "swan.psk")
        fd = os.open(psk, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(swan.PSK)
        path = os.path.join(sl.workdir, "peer.conf")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        tunnel = IKE_TUNNEL.format(out=swan.PEER_OUT, swan_out=swan.SWAN_OUT,
                                   peer_net=swan.PEER_NET, swan_net=swan.SWAN_NET,
                                   cipher="aes128-gcm", psk=psk)
        with os.fdopen(fd, "w") as f:
            f.write(PEER_CONF.format(gw_in=swan.PEER_GW_IN, out=swan.PEER_OUT) +
                    tunnel.replace("start = no", "start = yes\ndpd = 2"))
        sl.swan.start()
        sl.gw = lab.Gateway("gw-peer", path,
                            ["net_af_packet0,iface=pe-in",
                             "net_af_packet1,iface=pe-out,qdisc_bypass=0"],
                            sl.workdir, ["-l", "0-1", "--main-lcore", "0"], pe)
        sl.gw.start()

        def up():
            sas = sl.gw.ctl("show", "ike")["sas"]
            return sas and sas[0]["state"] == "established" and sas[0]["child"]
        lab.wait_for(up, 20, "dpvpnd's IKE SA with charon")
        st = sl.gw.ctl("show", "ike")["sas"][0]
        assert st["role"] == "initiator" and st["udp_encap"], st
        for side in ("s", "d"):
            sl.ping(side, count=2)
            r = sl.ping(side, count=3)
            assert " 0% packet loss" in r.stdout, r.stdout
        rates = []
        for side in ("s", "d"):
            rep = sl.iperf(side, seconds=2)
            rates.append(rep["end"]["sum_received"]["bits_per_second"] / 1e6)
        child = swan.parse_child(sl.swan.log_text())
        keys = [(" ".join(k), v) for k, v in child["keys"].items() if v]
        assert len(keys) == 2, child["keys"].keys()         # GCM: one key each way
        s = Scanner()
        s.add("dpvpnd log", sl.gw.dpvpnd.output())
        for what in ("sa", "ike", "counters"):
            s.add(f"show {what}", json.dumps(sl.gw.ctl("show", what)))
        state = sl.gw.config + ".state"
        if os.path.exists(state):
            s.add_file("state file", state)
        assert s.scan(keys) == []
        # (under ASan, dpvpnd's writable mappings are its shadow memory, terabytes:
        # the normal pass scans its memory, as test_secrets does)
        if not os.environ.get("DPVPN_SANITIZER_LOGS"):
            for name, data in process_memory(sl.gw.dpvpnd.p.pid):
                s.add(f"dpvpnd {name}", data, unescape=False)
            assert s.scan(keys, memory=True) == []
        print(f"test_ike_swan: dpvpnd initiated; iperf3 S->D {rates[0]:.0f}, D->S "
              f"{rates[1]:.0f} Mbit/s (charon's userspace ESP); no child key in dpvpnd")
        sl.swan.kill()
        t0 = time.monotonic()
        lab.wait_for(lambda: not any(s["name"] == "to-swan"
                                     for s in sl.gw.ctl("show", "sa")["sas"]), 20,
                     "dpvpnd finding charon gone")
        assert "IKE SA ended" in sl.gw.dpvpnd.output()
        print(f"test_ike_swan: charon killed; dpvpnd removed the SAs {time.monotonic() - t0:.1f} s"
              f" later (dpd 2 s, 3 tries from 200 ms)")
