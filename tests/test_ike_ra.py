# SPDX-License-Identifier: BSD-3-Clause
"""Remote access ([ikepki] issue 16, requirement 4): dpvpnd's `remote = %any`
tunnel answers a strongSwan road warrior (charon, kernel-libipsec,
`vips = 0.0.0.0`, certificate auth): the client gets an address from the
section's `pool` and pings host D behind dpvpnd from it; dpvpnd installs the
client's CHILD_SA as its own dataplane tunnel ("rw/VIP", remote = the client's
outer address, remote-ts = the lease) and removes it when the IKE SA ends.

    strongSwan road warrior (netns)          peer gw (netns)           host D
    charon, kernel-libipsec, VIP 10.77.0.x   dpvpnd + dataplane
                             sw-out ==veth== pe-out        pe-in ==veth== eth0
                             198.19.0.1      198.19.0.2

(tests/swan.py builds the namespaces; host S and charon #2 are not used.)
"""
import os

import pytest

import lab
import swan
import test_json_shape
from test_ike_pki import Pki, pem, write, need_swan

pytestmark = [pytest.mark.ike, pytest.mark.strongswan, pytest.mark.ikepki]

POOL = "10.77.0.0/24"

PEER_CONF = """; dpvpn.conf of tests/test_ike_ra.py
[port inside]
id = 0
role = inside
address = {gw_in}/24

[port outside]
id = 1
role = outside
address = {out}/24

[tunnel rw]
local = {out}
remote = %any
local-ts = {peer_net}
pool = {pool}
cipher = aes128-gcm
keying = ike
auth = pubkey
cert = {dir}/peer.pem
private-key = {dir}/peer.key
ca = {dir}/ca.pem
local-id = fqdn:peer.example.org
remote-id = fqdn:*.example.org
encap = udp
"""

SWANCTL_RW = """\
connections {{
    rw {{
        version = 2
        remote_addrs = {remote}
        vips = 0.0.0.0
        encap = yes
        mobike = no
        dpd_delay = 0s
        rekey_time = 0s
        reauth_time = 0s
        proposals = {ike}
        send_cert = always
        local {{
            auth = pubkey
            certs = swan.pem
            id = swan.example.org
        }}
        remote {{
            auth = pubkey
            id = peer.example.org
        }}
        children {{
            net {{
                mode = tunnel
                remote_ts = {remote_ts}
                esp_proposals = aes128gcm16
                rekey_time = 0s
                life_time = 0s
                dpd_action = none
                close_action = none
                start_action = none
            }}
        }}
    }}
}}
"""


def setup_lab(sl, pki):
    pe = sl.ns_pe
    for dev in ("pe-in", "pe-out"):
        sl.ip(pe, "addr", "flush", "dev", dev)
    sl.ns(pe, "sysctl", "-qw", "net.ipv4.ip_forward=0")
    pcert, pkey = pki.leaf("peer.example.org", "ecdsa")
    w = sl.workdir
    write(os.path.join(w, "peer.pem"), pem(pcert) + pem(pki.mid))
    write(os.path.join(w, "peer.key"), pem(pkey), 0o600)
    write(os.path.join(w, "ca.pem"), pem(pki.root))
    path = os.path.join(w, "peer.conf")
    write(path, PEER_CONF.format(gw_in=swan.PEER_GW_IN, out=swan.PEER_OUT,
                                 peer_net=swan.PEER_NET, pool=POOL, dir=w).encode(), 0o600)
    scert, skey = pki.leaf("swan.example.org", "ecdsa")
    d = os.path.join(sl.swan.dir, "swanctl")
    for sub in ("x509", "x509ca", "pkcs8"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    write(os.path.join(d, "x509", "swan.pem"), pem(scert))
    write(os.path.join(d, "x509ca", "root.pem"), pem(pki.root))
    write(os.path.join(d, "x509ca", "mid.pem"), pem(pki.mid))
    write(os.path.join(d, "pkcs8", "swan.key"), pem(skey), 0o600)
    write(os.path.join(d, "swanctl.conf"), SWANCTL_RW.format(
        remote=swan.PEER_OUT, ike=swan.IKE_PROPOSAL, remote_ts=swan.PEER_NET).encode(), 0o600)
    with open(sl.swan.conf) as f:
        conf = f.read()
    with open(sl.swan.conf, "w") as f:
        f.write(conf.replace("load = random nonce openssl pem pkcs1 x509 pubkey",
                             "load = random nonce openssl pem pkcs1 pkcs8 x509 pubkey")
                .replace("install_virtual_ip = no", "install_virtual_ip = yes"))
    sl.gw = lab.Gateway("gw-peer", path,
                        ["net_af_packet0,iface=pe-in",
                         "net_af_packet1,iface=pe-out,qdisc_bypass=0"],
                        w, ["-l", "0-1", "--main-lcore", "0"], pe)


def test_road_warrior_gets_address_and_pings():
    """charon asks for a virtual IP, gets the pool's first, pings host D
    from it through dpvpnd; `show ike` lists the client; the client's
    tunnel goes from the dataplane when charon terminates."""
    need_swan()
    pki = Pki()
    with swan.SwanLab("aes128gcm16") as sl:
        setup_lab(sl, pki)
        sl.gw.start()
        sl.swan.start()
        out = sl.swan.swanctl("--initiate", "--child", "net", "--timeout", "20",
                              timeout=30, check=False)
        log = sl.swan.log_text()
        assert "initiate completed successfully" in out, \
            out + log[-4000:] + sl.gw.dpvpnd.output()[-3000:]
        assert "installing new virtual IP 10.77.0.1" in log, log[-4000:]
        show = sl.gw.ctl("show", "ike")
        clients = show["clients"]
        assert len(clients) == 1, show
        c = clients[0]
        assert c["name"] == "rw/10.77.0.1" and c["conn"] == "rw", c
        assert c["vip"] == "10.77.0.1/32" and c["outer"].startswith(swan.SWAN_OUT + ":"), c
        names = {s["name"] for s in sl.gw.ctl("show", "sa")["sas"]}
        assert "rw/10.77.0.1" in names, names
        r = None
        for _ in range(2):      # the first may wait for ARP on dpvpn's ports
            r = sl.ns(sl.ns_sw, "ping", "-c", "3", "-i", "0.2", "-W", "2", "-I", "10.77.0.1",
                      swan.HOST_D, check=False, timeout=20)
        assert " 0% packet loss" in r.stdout, r.stdout + r.stderr
        c = sl.gw.ctl("show", "ike")["clients"][0]
        assert c["bytes_in"] >= 3 * 84 and c["bytes_out"] >= 3 * 84, c
        bad = []
        test_json_shape.walk(c, "show ike.clients[0]", bad)
        assert not bad, bad
        # the IKE SA ends: the client's SAs and its entry go
        sl.swan.swanctl("--terminate", "--ike", "rw", "--timeout", "10", timeout=20,
                        check=False)
        lab.wait_for(lambda: not sl.gw.ctl("show", "ike")["clients"], 15,
                     "dpvpnd's client gone")
        names = {s["name"] for s in sl.gw.ctl("show", "sa")["sas"]}
        assert not any(n.startswith("rw/") for n in names), names
        print(f"test_ike_ra: road warrior got 10.77.0.1, pinged D, removed at its end: {c}")
