# SPDX-License-Identifier: BSD-3-Clause
"""[ops] issue 27, requirements 2 to 5: what `show tunnels`, `show ike`, the
log and the metrics tell an operator.

One remote-access lab for the module (tests/test_ike_ra.py's): a strongSwan
road warrior (charon, kernel-libipsec, certificate fqdn:swan.example.org)
connects to dpvpnd's `remote = %any` tunnel "rw", gets 10.77.0.1 from the
pool and pings host D through it.

    strongSwan road warrior (netns)          peer gw (netns)           host D
    charon, kernel-libipsec, VIP 10.77.0.1   dpvpnd + dataplane
                             sw-out ==veth== pe-out        pe-in ==veth== eth0
                             198.19.0.1      198.19.0.2

The tests read dpvpnctl's tables and --json, dpvpnd's log and the metrics
endpoint; the last one ends the client and checks what goes with it.
"""
import os
import re
import socket
import subprocess
import urllib.request

import pytest

import lab
import swan
import test_ike_ra
import test_json_shape
from test_ike_pki import Pki, need_swan

pytestmark = pytest.mark.ops

VIP = "10.77.0.1"
CLIENT = f"rw/{VIP}"
IDENTITY = "fqdn:swan.example.org"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ra():
    """The road warrior connected and pinging; sl.gw.metrics_port set."""
    need_swan()
    pki = Pki()
    with swan.SwanLab("aes128gcm16") as sl:
        test_ike_ra.setup_lab(sl, pki)
        port = free_port()
        with open(sl.gw.config) as f:
            conf = f.read()
        with open(sl.gw.config, "w") as f:
            f.write(f"[control]\nmetrics = 127.0.0.1:{port}\n\n" + conf)
        sl.gw.metrics_port = port
        test_ike_ra.connect(sl, VIP)
        r = test_ike_ra.ping_from(sl, sl.ns_sw, VIP)
        assert " 0% packet loss" in r.stdout, r.stdout + r.stderr
        yield sl


def tunnel(show, name):
    found = [t for t in show["tunnels"] if t["name"] == name]
    assert found, [t["name"] for t in show["tunnels"]]
    return found[0]


def block(text, name):
    """show tunnels' block of tunnel name."""
    m = re.search(rf"^tunnel: {re.escape(name)}\n((?:  .*\n?)*)", text, re.M)
    assert m, text
    return m.group(1)


# ---- requirement 2: remote-access clients shown as what they are ----

def test_ra_connection_up_with_its_clients(ra):
    """The %any connection is up with 1 client (not "down (ike): ... CHILD_SA
    not installed"), the client listed under it with identity, outer address
    and port, lease, SAs, bytes and since, in the table and the JSON."""
    show = ra.gw.ctl("show", "tunnels")
    t = tunnel(show, "rw")
    assert t["state"] == "up" and t["reason"] is None, t
    assert len(t["clients"]) == 1, t
    c = t["clients"][0]
    assert c["identity"] == IDENTITY and c["vip"] == f"{VIP}/32", c
    assert c["outer"] == f"{swan.SWAN_OUT}:4500", c
    assert c["bytes_in"] >= 3 * 84 and c["bytes_out"] >= 3 * 84, c
    assert c["since_s"] >= 0 and c["spi_in"].startswith("0x"), c
    bad = []
    test_json_shape.walk(show, "show tunnels", bad)
    assert not bad, bad
    text = ra.gw.ctl_text("-w", "show", "tunnels")
    b = block(text, "rw")
    assert "state: up, 1 client\n" in b, b
    assert IDENTITY in b and f"{swan.SWAN_OUT}:4500" in b and f"{VIP}/32" in b, b
    assert "CHILD_SA not installed" not in text, text


def test_ra_client_tunnel_listed(ra):
    """The client's own tunnel rw/VIP is a tunnel of show tunnels: up, its
    SAs and traffic, who holds the lease."""
    show = ra.gw.ctl("show", "tunnels")
    t = tunnel(show, CLIENT)
    assert t["state"] == "up" and t["keying"] == "ike", t
    assert t["remote"] == swan.SWAN_OUT and len(t["sas"]) == 2, t
    assert t["client"]["identity"] == IDENTITY, t
    assert t["in"]["packets"] >= 3 and t["out"]["packets"] >= 3, t
    b = block(ra.gw.ctl_text("show", "tunnels"), CLIENT)
    assert "state: up\n" in b, b
    assert f"client: {IDENTITY} at {swan.SWAN_OUT}:4500, lease {VIP}/32" in b, b
    assert t["remote_ts"] == f"{VIP}/32" and f"<-> {VIP}/32" in b, b


def test_show_ike_table_lists_clients(ra):
    """show ike's table has the clients' section dpvpnctl(8) promises."""
    text = ra.gw.ctl_text("-w", "show", "ike")
    assert "remote-access clients:" in text, text
    line = [ln for ln in text.splitlines() if ln.startswith(CLIENT)]
    assert line and IDENTITY in line[0] and f"{VIP}/32" in line[0], text


def test_log_names_client_up(ra):
    """One line per client up: identity, outer address and port, lease."""
    log = ra.gw.dpvpnd.output()
    want = (f"tunnel rw: client {IDENTITY} at {swan.SWAN_OUT}:4500 up, lease {VIP}/32 "
            f"(tunnel {CLIENT})")
    assert sum(want in ln for ln in log.splitlines()) == 1, log[-3000:]


# ---- requirement 3: negotiated algorithms readable ----

def test_algorithms_named(ra):
    """show ike: a PROPOSAL column in strongSwan's syntax; JSON with names
    and numbers; show tunnels: the ESP and IKE proposals, not "negotiated"."""
    show = ra.gw.ctl("show", "ike")
    sa = show["sas"][0]
    assert sa["proposal"] == swan.IKE_PROPOSAL, sa
    a = sa["algorithms"]
    assert a["encr"] == {"id": 20, "bits": 128, "name": "aes128gcm16"}, a
    assert a["prf"] == {"id": 5, "name": "prfsha256"}, a
    assert a["dh"] == {"id": 19, "name": "ecp256"}, a
    assert sa["encr"] == 20 and sa["prf"] == 5 and sa["dh"] == 19, sa
    assert sa["children"][0]["proposal"] == "aes128gcm16", sa
    assert show["clients"][0]["proposal"] == "aes128gcm16", show["clients"]
    bad = []
    test_json_shape.walk({"algorithms": a, "proposal": sa["proposal"],
                          "children": sa["children"], "clients": show["clients"]},
                         "show ike.sas[0]", bad)
    assert not bad, bad
    text = ra.gw.ctl_text("-w", "show", "ike")
    assert "PROPOSAL" in text and swan.IKE_PROPOSAL in text, text
    t = tunnel(ra.gw.ctl("show", "tunnels"), CLIENT)
    assert t["esp"]["proposal"] == "aes128gcm16", t
    assert t["ike"]["proposal"] == swan.IKE_PROPOSAL, t
    assert t["cipher"] == "aes128-gcm", t
    b = block(ra.gw.ctl_text("show", "tunnels"), CLIENT)
    assert f"ESP aes128gcm16, IKE {swan.IKE_PROPOSAL}" in b, b
    assert "negotiated" not in b, b


# ---- requirement 4: messages that end ----

def test_show_tunnel_singular_suggests(ra):
    """A typo of a command: one line naming the command meant, not 40 lines
    of usage."""
    r = lab.sh(lab.DPVPNCTL, "-s", ra.gw.ctl_sock, "show", "tunnel", check=False)
    assert r.returncode == 2, r
    assert r.stderr.strip() == ("dpvpnctl: unknown command 'show tunnel'; did you mean "
                                "'show tunnels'?"), r.stderr
    assert r.stdout == "", r.stdout


def check_config(tmp_path, text):
    path = tmp_path / "dpvpn.conf"
    path.write_text(text)
    path.chmod(0o600)
    return lab.sh(lab.DPVPND, "-n", "-c", str(path), check=False)


STATIC = """[port inside]
id = 0
role = inside
address = 198.18.1.1/24

[port outside]
id = 1
role = outside
address = {outside}

[tunnel t]
local = 198.19.0.1
remote = 198.19.0.2
local-ts = 198.18.1.0/24
remote-ts = 198.18.2.0/24
cipher = aes128-gcm
out-spi = 0x1001
in-spi = 0x2001
out-key = 00112233445566778899aabbccddeeff00112233
in-key = 00112233445566778899aabbccddeeff00112234
"""


def test_config_unknown_key_hint(tmp_path):
    """rekey-time (strongSwan's) is refused naming dpvpn's keys for it."""
    r = check_config(tmp_path, STATIC.format(outside="198.19.0.1/24") + "rekey-time = 1h\n")
    assert r.returncode != 0, r
    assert ("rekey-time: unknown key; did you mean soft-seconds (the CHILD_SA's rekey) or "
            "ike-lifetime (the IKE SA's)?") in r.stderr, r.stderr


def test_bad_port_address_no_knock_on(tmp_path):
    """A bad outside address is one error, not also the tunnel's local."""
    r = check_config(tmp_path, STATIC.format(outside="198.19.0.300/24"))
    assert r.returncode != 0, r
    assert "got '198.19.0.300/24'" in r.stderr, r.stderr
    assert "is not the address of an outside port" not in r.stderr, r.stderr


def test_show_trace_after_a_trace(ra, tmp_path):
    """After a trace, show trace names the point it ran at and its counts,
    not "no trace running at off"."""
    text = ra.gw.ctl_text("show", "trace")
    assert text.strip() == "no trace running (none since the dataplane started)", text
    pcap = str(tmp_path / "t.pcapng")
    ping = subprocess.Popen(["ip", "netns", "exec", ra.ns_sw, "ping", "-c", "10", "-i",
                                 "0.2", "-I", VIP, swan.HOST_D],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        out = ra.gw.ctl_text("trace", "outside-tx", "2", pcap, "5")
    finally:
        ping.wait(timeout=10)
    assert "2 of 2 packets at outside-tx" in out, out
    text = ra.gw.ctl_text("show", "trace")
    assert text.strip() == ("no trace running; the last at outside-tx: 2 of 2 packets "
                            "written, 0 lost"), text
    st = ra.gw.ctl("show", "trace")
    assert st["point"] == "off" and st["last_point"] == "outside-tx", st
    bad = []
    test_json_shape.walk(st, "show trace", bad)
    assert not bad, bad



# ---- requirement 5: metrics an operator can alert on ----

def scrape(sl):
    url = f"http://127.0.0.1:{sl.gw.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def sample(text, family, **labels):
    """The value of family{labels} (labels in any order), or None."""
    for line in text.splitlines():
        m = re.fullmatch(rf"{family}\{{(.*)\}} (\S+)", line)
        if m and dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1))) == labels:
            return float(m.group(2))
    return None


def test_metrics_tunnel_series(ra):
    """Per-tunnel gauges: up, state with its reason, IKE established, clients;
    counters by (tunnel, direction); each family documented with HELP/TYPE in
    the scrape and in doc/operations.md."""
    text = scrape(ra)
    assert sample(text, "dpvpn_tunnel_up", tunnel="rw") == 1, text
    assert sample(text, "dpvpn_tunnel_up", tunnel=CLIENT) == 1, text
    assert sample(text, "dpvpn_tunnel_state", tunnel=CLIENT, state="up", reason="") == 1
    assert sample(text, "dpvpn_tunnel_clients", tunnel="rw") == 1, text
    assert sample(text, "dpvpn_tunnel_ike_established", tunnel=CLIENT) == 1, text
    assert sample(text, "dpvpn_tunnel_ike_state", tunnel=CLIENT, state="established") == 1
    assert sample(text, "dpvpn_tunnel_packets_total", tunnel=CLIENT, direction="in") >= 3
    assert sample(text, "dpvpn_tunnel_bytes_total", tunnel=CLIENT, direction="out") >= 3 * 84
    assert sample(text, "dpvpn_tunnel_drops_total", tunnel=CLIENT, direction="in") == 0
    assert sample(text, "dpvpn_tunnel_last_packet_age_seconds", tunnel=CLIENT,
                  direction="in") >= 0, text
    with open(os.path.join(lab.ROOT, "doc", "operations.md")) as f:
        doc = f.read()
    families = re.findall(r"^# TYPE (dpvpn_tunnel_\w+) (\w+)$", text, re.M)
    assert len(families) >= 10, families
    for name, kind in families:
        assert f"`{name}`" in doc, f"{name} not in doc/operations.md"


def test_metrics_stable_through_rekey(ra):
    """The per-tunnel counters keep their labels and only grow when the
    CHILD_SA is rekeyed (the per-SA series change their spi label)."""
    before = scrape(ra)
    v0 = sample(before, "dpvpn_tunnel_packets_total", tunnel=CLIENT, direction="in")
    r0 = sample(before, "dpvpn_tunnel_rekeys_total", tunnel=CLIENT)
    assert v0 >= 3 and r0 is not None, before
    old_in = ra.gw.ctl("show", "ike")["clients"][0]["spi_in"]
    ra.swan.swanctl("--rekey", "--child", "net", timeout=20, check=False)
    lab.wait_for(lambda: ra.gw.ctl("show", "ike")["clients"][0]["spi_in"] != old_in, 15,
                 "the client's CHILD_SA rekeyed")
    lab.wait_for(lambda: sum(s["name"] == CLIENT for s in ra.gw.ctl("show", "sa")["sas"]) == 2,
                 8, "the replaced SAs removed")
    r = test_ike_ra.ping_from(ra, ra.ns_sw, VIP)
    assert " 0% packet loss" in r.stdout, r.stdout + r.stderr
    after = scrape(ra)
    v1 = sample(after, "dpvpn_tunnel_packets_total", tunnel=CLIENT, direction="in")
    assert v1 >= v0 + 3, (v0, v1)
    assert sample(after, "dpvpn_tunnel_rekeys_total", tunnel=CLIENT) == r0 + 1, after
    assert f'spi="{old_in}"' in before and f'spi="{old_in}"' not in after

# ---- last: the client goes (requirements 2 and 4) ----

def test_zz_reload_then_refused_identity(ra):
    """A normal reload of the changed %any tunnel: the client's tunnel goes
    with one log line (identity, address, lease), and charon's answer to the
    reload's Delete is no `refused: bad-spi`.  The client then connects with
    an identity the new remote-id refuses: the reason is whole, everywhere,
    and names the identity it presented, not "type 2"."""
    with open(ra.gw.config) as f:
        conf = f.read()
    with open(ra.gw.config, "w") as f:
        f.write(conf.replace("remote-id = fqdn:*.example.org", "remote-id = fqdn:*.example.net"))
    ra.gw.ctl("reload")
    lab.wait_for(lambda: not ra.gw.ctl("show", "ike")["clients"], 15, "the client gone")
    lab.wait_for(lambda: ra.gw.ctl("show", "ike")["stats"]["after_end"] >= 1, 10,
                 "charon's answer to the Delete")
    show = ra.gw.ctl("show", "ike")
    assert show["stats"]["rejected"]["bad-spi"] == 0, show["stats"]
    assert "bad-spi" not in ra.gw.ctl_text("show", "ike"), ra.gw.ctl_text("show", "ike")
    log = ra.gw.dpvpnd.output()
    down = [ln for ln in log.splitlines() if f"client {IDENTITY} at {swan.SWAN_OUT}:4500 down, "
            f"lease {VIP}/32 released" in ln]
    assert len(down) == 1, log[-3000:]
    out = ra.swan.swanctl("--initiate", "--child", "net", "--timeout", "15", timeout=25,
                          check=False)
    assert "initiate completed successfully" not in out, out
    want = (f"the ID {IDENTITY} is not the remote-id (or its pattern) of this connection; "
            "subject")
    lab.wait_for(lambda: want in (tunnel(ra.gw.ctl("show", "tunnels"), "rw")
                                  .get("last_ike_end") or ""), 10, "the refusal shown")
    why = tunnel(ra.gw.ctl("show", "tunnels"), "rw")["last_ike_end"]
    assert "(type" not in why and re.search(r"serial [0-9A-F:]+$", why), why
    text = ra.gw.ctl_text("-w", "show", "tunnels")
    assert why in text, text
    assert [ln for ln in ra.gw.dpvpnd.output().splitlines()
            if "IKE SA ended" in ln and ln.endswith(why)], ra.gw.dpvpnd.output()[-3000:]
    text = scrape(ra)
    assert sample(text, "dpvpn_tunnel_clients", tunnel="rw") == 0, text
    assert sample(text, "dpvpn_tunnel_up", tunnel=CLIENT) is None, text
    # taken down by the operator: up 0, the reason a label of the state series
    ra.gw.ctl("tunnel", "rw", "down")
    text = scrape(ra)
    assert sample(text, "dpvpn_tunnel_up", tunnel="rw") == 0, text
    assert sample(text, "dpvpn_tunnel_state", tunnel="rw", state="down",
                  reason="operator") == 1, text
