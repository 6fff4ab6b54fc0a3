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

(tests/helpers/swan.py builds the namespaces; host S and charon #2 are not used.)
"""
import os
import re
import time

import pytest

import lab
import swan
import test_json_shape
from test_ike_pki import Pki, pem, write, need_swan

pytestmark = [pytest.mark.ike, pytest.mark.strongswan, pytest.mark.ikepki]

POOL = "10.77.0.0/24"

# The remote-access tunnel (tests/test_ha_swan.py has it too, on the HA pair)
RW_TUNNEL = """
[tunnel rw]
local = {out}
remote = %any
local-ts = {peer_net}
pool = {pool}
dns = 198.18.1.53
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

PEER_CONF = """; dpvpn.conf of tests/test_ike_ra.py
[port inside]
id = 0
role = inside
address = {gw_in}/24

[port outside]
id = 1
role = outside
address = {out}/24

[route rw2]
dst = 198.19.1.0/24
port = outside
via = 198.19.0.1
""" + RW_TUNNEL

def client_files(ch, pki, cn):
    """charon ch as a road warrior with a certificate for cn: it asks for a
    virtual IP (vips = 0.0.0.0) and installs the one it gets."""
    scert, skey = pki.leaf(cn, "ecdsa")
    ch.add_credentials(pem(scert), pem(skey),
                       {"root.pem": pem(pki.root), "mid.pem": pem(pki.mid)})
    ch.strongswan["charon"]["install_virtual_ip"] = "yes"
    ch.swanctl_conf = swan.swanctl_conf(
        "rw", cn, "peer.example.org", {"net": swan.child(remote_ts=swan.PEER_NET)},
        remote_addrs=swan.PEER_OUT, vips="0.0.0.0", cert="swan.pem")
    ch.write_config()


def setup_lab(sl, pki, pool=POOL):
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
                                 peer_net=swan.PEER_NET, pool=pool, dir=w).encode(), 0o600)
    client_files(sl.swan, pki, "swan.example.org")
    sl.gw = lab.Gateway("gw-peer", path,
                        ["net_af_packet0,iface=pe-in",
                         "net_af_packet1,iface=pe-out,qdisc_bypass=0"],
                        w, ["-l", "0-1", "--main-lcore", "0"], pe)


def connect(sl, vip):
    """dpvpnd and the road warrior started, the road warrior connected and
    given vip; charon's log."""
    sl.gw.start()
    sl.swan.start()
    out = sl.swan.swanctl("--initiate", "--child", "net", "--timeout", "20",
                          timeout=30, check=False)
    log = sl.swan.log_text()
    assert "initiate completed successfully" in out, \
        out + log[-4000:] + sl.gw.dpvpnd.output()[-3000:]
    assert f"installing new virtual IP {vip}" in log, log[-4000:]
    return log


def test_road_warrior_gets_address_and_pings():
    """charon asks for a virtual IP, gets the pool's first, pings host D
    from it through dpvpnd; `show ike` lists the client; the client's
    tunnel goes from the dataplane when charon terminates."""
    need_swan()
    pki = Pki()
    with swan.SwanLab("aes128gcm16") as sl:
        setup_lab(sl, pki)
        connect(sl, "10.77.0.1")
        # the DNS server of the section's `dns` reached charon, whose resolve
        # plugin wrote it into its own /etc/resolv.conf (tests/helpers/swan.py's bind
        # mount), not the host's: conftest's _host_untouched checks the host's
        with open(os.path.join(sl.swan.dir, "resolv.conf")) as f:
            assert "nameserver 198.18.1.53" in f.read(), sl.swan.log_text()[-3000:]
        with open("/etc/resolv.conf") as f:     # charon takes it back when it
            assert "198.18.1.53" not in f.read()    # stops, unless killed -9
        show = sl.gw.ctl("show", "ike")
        clients = show["clients"]
        assert len(clients) == 1, show
        c = clients[0]
        assert c["name"] == "rw/10.77.0.1" and c["conn"] == "rw", c
        assert c["identity"] == "fqdn:swan.example.org", c
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
        # charon rekeys its CHILD_SA: the client's tunnel moves to the new pair
        old_in = c["spi_in"]
        sl.swan.swanctl("--rekey", "--child", "net", timeout=20, check=False)
        lab.wait_for(lambda: sl.gw.ctl("show", "ike")["clients"][0]["rekeys"] == 1, 15,
                     "the client's CHILD_SA rekeyed")
        c = sl.gw.ctl("show", "ike")["clients"][0]
        assert c["spi_in"] != old_in and c["name"] == "rw/10.77.0.1", c
        r = ping_from(sl, sl.ns_sw, "10.77.0.1")
        assert " 0% packet loss" in r.stdout, r.stdout + r.stderr
        # the old pair goes (its inbound SA after dpvpnd's 2 s grace period)
        lab.wait_for(lambda: sum(s["name"] == "rw/10.77.0.1"
                                 for s in sl.gw.ctl("show", "sa")["sas"]) == 2, 8,
                     "the replaced client SAs removed")
        # the IKE SA ends: the client's SAs and its entry go
        sl.swan.swanctl("--terminate", "--ike", "rw", "--timeout", "10", timeout=20,
                        check=False)
        lab.wait_for(lambda: not sl.gw.ctl("show", "ike")["clients"], 15,
                     "dpvpnd's client gone")
        names = {s["name"] for s in sl.gw.ctl("show", "sa")["sas"]}
        assert not any(n.startswith("rw/") for n in names), names
        print(f"test_ike_ra: road warrior got 10.77.0.1, pinged D, removed at its end: {c}")


def second_client(sl, pki):
    """charon-c2 (identity c2.example.org) in a netns of its own behind the
    road warrior's, routed by it; returns the netns (sl cleans up both)."""
    c2 = f"{swan.NS_PREFIX}{sl.tag}-c2"
    lab.sh("ip", "netns", "add", c2)
    sl.namespaces.append(c2)
    sl.ip(c2, "link", "set", "lo", "up")
    sl.ip(sl.ns_sw, "link", "add", "sw-c2", "type", "veth", "peer", "name", "eth0",
          "netns", c2)
    sl.ip(sl.ns_sw, "addr", "add", "198.19.1.1/24", "dev", "sw-c2")
    sl.ip(sl.ns_sw, "link", "set", "sw-c2", "up")
    sl.ip(c2, "addr", "add", "198.19.1.2/24", "dev", "eth0")
    sl.ip(c2, "link", "set", "eth0", "up")
    sl.ip(c2, "route", "add", "default", "via", "198.19.1.1")
    sl.peer = swan.Charon("charon-c2", c2, sl.workdir, "198.19.1.2", swan.PEER_OUT,
                          swan.SWAN_NET, swan.PEER_NET, "aes128gcm16")
    client_files(sl.peer, pki, "c2.example.org")
    return c2


def connect_both(sl, c2):
    """Both road warriors (sl.swan, and sl.peer in netns c2) connected:
    {netns: its virtual IP}."""
    got = {}
    for ch, ns in ((sl.swan, sl.ns_sw), (sl.peer, c2)):
        ch.start()
        out = ch.swanctl("--initiate", "--child", "net", "--timeout", "20", timeout=30,
                         check=False)
        assert "initiate completed successfully" in out, \
            out + ch.log_text()[-4000:] + sl.gw.dpvpnd.output()[-3000:]
        vips = re.findall(r"installing new virtual IP (\S+)", ch.log_text())
        assert vips, ch.log_text()[-3000:]
        got[ns] = vips[-1]
    return got


def ping_from(sl, ns, vip):
    r = None
    for _ in range(2):      # the first may wait for ARP on dpvpn's ports
        r = sl.ns(ns, "ping", "-c", "3", "-i", "0.2", "-W", "2", "-I", vip, swan.HOST_D,
                  check=False, timeout=20)
    return r


def test_two_road_warriors_then_reload():
    """Two charons (two namespaces, two identities) at once get distinct
    addresses and both ping D; a reload that changes the section takes both
    clients' tunnels out of the dataplane."""
    need_swan()
    pki = Pki()
    with swan.SwanLab("aes128gcm16") as sl:
        setup_lab(sl, pki)
        c2 = second_client(sl, pki)
        sl.gw.start()
        got = connect_both(sl, c2)
        assert sorted(got.values()) == ["10.77.0.1", "10.77.0.2"], got
        for ns, vip in got.items():
            r = ping_from(sl, ns, vip)
            assert " 0% packet loss" in r.stdout, r.stdout + r.stderr
        clients = sl.gw.ctl("show", "ike")["clients"]
        assert sorted(c["vip"] for c in clients) == ["10.77.0.1/32", "10.77.0.2/32"], clients
        assert sorted(c["identity"] for c in clients) == \
            ["fqdn:c2.example.org", "fqdn:swan.example.org"], clients
        assert sorted(c["outer"].split(":")[0] for c in clients) == \
            ["198.19.0.1", "198.19.1.2"], clients
        # a reload that changes the section: both clients' tunnels go
        with open(sl.gw.config) as f:
            conf = f.read()
        with open(sl.gw.config, "w") as f:
            f.write(conf.replace("pool = 10.77.0.0/24", "pool = 10.78.0.0/24"))
        sl.gw.ctl("reload")
        lab.wait_for(lambda: not sl.gw.ctl("show", "ike")["clients"], 15,
                     "clients gone after reload")
        names = {s["name"] for s in sl.gw.ctl("show", "sa")["sas"]}
        assert not any(n.startswith("rw/") for n in names), names
        print(f"test_ike_ra: two road warriors got {got}, pinged D; gone at reload")


def test_pool_exhausted():
    """A /32 pool: the first client gets its address, the second (another
    identity) is refused with INTERNAL_ADDRESS_FAILURE, counted in show ike,
    and nothing of it reaches the dataplane."""
    need_swan()
    pki = Pki()
    with swan.SwanLab("aes128gcm16") as sl:
        setup_lab(sl, pki, pool="10.77.0.9/32")
        c2 = second_client(sl, pki)
        sl.gw.start()
        sl.swan.start()
        out = sl.swan.swanctl("--initiate", "--child", "net", "--timeout", "20", timeout=30,
                              check=False)
        assert "initiate completed successfully" in out, out + sl.swan.log_text()[-3000:]
        sl.peer.start()
        out = sl.peer.swanctl("--initiate", "--child", "net", "--timeout", "20", timeout=30,
                              check=False)
        assert "initiate completed successfully" not in out, out
        log = sl.peer.log_text()
        assert "INTERNAL_ADDRESS_FAILURE" in log, log[-3000:]
        show = sl.gw.ctl("show", "ike")
        assert show["stats"]["pool_exhausted"] == 1, show["stats"]
        assert [c["vip"] for c in show["clients"]] == ["10.77.0.9/32"], show["clients"]
        r = ping_from(sl, sl.ns_sw, "10.77.0.9")
        assert " 0% packet loss" in r.stdout, r.stdout + r.stderr
        bad = []
        test_json_shape.walk({k: show["stats"][k] for k in ("pool_exhausted", "cp_missing")},
                             "show ike.stats", bad)
        assert not bad, bad
        print(f"test_ike_ra: /32 pool: second client refused ({c2}), counted")


POOL6 = "fd00:77::/112"
D6 = "fd00:d::2"


def test_road_warrior_ipv6_address():
    """IPv6 too (requirement 4): a section whose local-ts is IPv6 leases
    from its IPv6 pool; charon asks with `vips = ::`, gets fd00:77::1
    (INTERNAL_IP6_ADDRESS), and pings host D's IPv6 address from it, over
    an IPv4 outer path (6in4); `show ike` lists the /128."""
    need_swan()
    pki = Pki()
    with swan.SwanLab("aes128gcm16") as sl:
        setup_lab(sl, pki, pool=POOL6)
        # host D and dpvpnd's inside port get IPv6 (the lab turns it off)
        sl.ns(sl.ns_d, "sysctl", "-qw", "net.ipv6.conf.eth0.disable_ipv6=0")
        sl.ip(sl.ns_d, "addr", "add", f"{D6}/64", "dev", "eth0", "nodad")
        sl.ip(sl.ns_d, "-6", "route", "add", "default", "via", "fd00:d::1")
        with open(sl.gw.config) as f:
            conf = f.read()
        conf = conf.replace(f"address = {swan.PEER_GW_IN}/24",
                            f"address = {swan.PEER_GW_IN}/24, fd00:d::1/64")
        conf = conf.replace(f"local-ts = {swan.PEER_NET}", "local-ts = fd00:d::/64")
        with open(sl.gw.config, "w") as f:
            f.write(conf)
        rw = sl.swan.swanctl_conf["connections"]["rw"]
        rw["vips"] = "::"
        rw["children"]["net"]["remote_ts"] = "fd00:d::/64"
        sl.swan.write_config()
        connect(sl, "fd00:77::1")
        clients = sl.gw.ctl("show", "ike")["clients"]
        assert [c["vip"] for c in clients] == ["fd00:77::1/128"], clients
        assert clients[0]["name"] == "rw/fd00:77::1", clients
        r = None
        for _ in range(3):      # the first may wait for neighbour discovery
            r = sl.ns(sl.ns_sw, "ping", "-6", "-c", "3", "-i", "0.2", "-W", "2",
                      "-I", "fd00:77::1", D6, check=False, timeout=20)
            if " 0% packet loss" in r.stdout:
                break
        assert " 0% packet loss" in r.stdout, \
            r.stdout + r.stderr + str(sl.gw.ctl("show", "counters"))
        c = sl.gw.ctl("show", "ike")["clients"][0]
        assert c["bytes_in"] >= 3 * 104 and c["bytes_out"] >= 3 * 104, c
        print(f"test_ike_ra: IPv6 road warrior got fd00:77::1, pinged {D6}: {c}")


def test_client_rekeyed_by_lifetime_and_by_name():
    """A client's CHILD_SA is rekeyed when its dataplane SA reaches a soft
    lifetime (soft-packets on the section), and the operator reaches a
    client by its tunnel's name: `rekey rw/VIP` rekeys its CHILD_SA,
    `initiate` is refused (the client initiates), `terminate rw/VIP` ends
    its IKE SA (charon is told).  Before, only the section's name was known,
    shared by every client: the soft lifetime passed unheard (the SA ran on
    to its hard limit) and the commands said "no IKE tunnel"."""
    need_swan()
    pki = Pki()
    with swan.SwanLab("aes128gcm16") as sl:
        setup_lab(sl, pki)
        with open(sl.gw.config, "a") as f:
            f.write("soft-packets = 20\n")
        connect(sl, "10.77.0.1")
        name = "rw/10.77.0.1"
        r = None
        for _ in range(2):      # the first may wait for ARP on dpvpn's ports
            r = sl.ns(sl.ns_sw, "ping", "-c", "15", "-i", "0.05", "-W", "2", "-I",
                      "10.77.0.1", swan.HOST_D, check=False, timeout=20)
        lab.wait_for(lambda: sl.gw.ctl("show", "ike")["clients"][0]["rekeys"] >= 1, 15,
                     "the client's CHILD_SA rekeyed by its soft lifetime")
        assert "soft lifetime: rekeying" in sl.gw.dpvpnd.output(), sl.gw.dpvpnd.output()[-2000:]
        n = sl.gw.ctl("show", "ike")["clients"][0]["rekeys"]
        time.sleep(2.5)     # the replaced SA's grace period: a new rekey is not refused
        out = sl.gw.ctl_text("rekey", name)
        assert "rekeying" in out, out
        lab.wait_for(lambda: sl.gw.ctl("show", "ike")["clients"][0]["rekeys"] > n, 15,
                     "the client's CHILD_SA rekeyed by dpvpnctl rekey")
        r = lab.sh(lab.DPVPNCTL, "-s", sl.gw.ctl_sock, "initiate", name, check=False)
        assert r.returncode != 0 and "initiates and rekeys its IKE SA itself" in r.stderr, r
        r = ping_from(sl, sl.ns_sw, "10.77.0.1")
        assert " 0% packet loss" in r.stdout, r.stdout + r.stderr
        assert "terminating" in sl.gw.ctl_text("terminate", name)
        lab.wait_for(lambda: not sl.gw.ctl("show", "ike")["clients"], 15, "the client gone")
        lab.wait_for(lambda: "deleting IKE_SA" in sl.swan.log_text() or
                     "received DELETE for IKE_SA" in sl.swan.log_text(), 10,
                     "charon told")
        print(f"test_ike_ra: {name} rekeyed by soft-packets and by dpvpnctl rekey, "
              f"terminated by name")
