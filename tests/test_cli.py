# SPDX-License-Identifier: BSD-3-Clause
"""Issue 13, dpvpnctl's output: show lcores' BUSY, clear for every counter
shown, show tunnels (state and why, peer, cipher, SAs, traffic, last packet
each way), tables within 100 columns (-w: all columns), human units (-n: raw
numbers, --json: raw always), show counters' non-zero reasons (--all: all),
dpvpnctl help.

    host A ==veth== [gw A] ==veth== [gw B] ==veth== host B      the lab (lab.py)

Gateway A's config gets three more tunnels that no peer answers: to-c
(static keys, installed), one whose name takes all 31 characters (static,
installed) and ike-gone (keying = ike, its peer 198.19.0.9 absent: IKE
never establishes).
"""
import os
import re
import secrets
import shutil
import tempfile
import time

import pytest

import lab

pytestmark = pytest.mark.operator

LONG = "a-tunnel-name-of-31-characters-"
assert len(LONG) == 31
WIDTH = 100

EXTRA = """
[tunnel to-c]
local = 198.19.0.1
remote = 198.19.0.3
local-ts = 198.18.1.0/24
remote-ts = 198.18.3.0/24
cipher = aes256-gcm
out-spi = 0x00003001
out-key = 0x{k1}
in-spi = 0x00003002
in-key = 0x{k2}

[tunnel {long}]
local = 198.19.0.1
remote = 198.19.0.4
local-ts = 198.18.1.0/24
remote-ts = 198.18.4.0/24
cipher = chacha20-poly1305
out-spi = 0x00004001
out-key = 0x{k3}
in-spi = 0x00004002
in-key = 0x{k4}

[tunnel ike-gone]
local = 198.19.0.1
remote = 198.19.0.9
local-ts = 198.18.1.0/24
remote-ts = 198.18.9.0/24
cipher = aes128-gcm
keying = ike
psk-file = {psk}
"""


@pytest.fixture(scope="module")
def net():
    d = tempfile.mkdtemp(prefix="dpvpn-cli-")
    os.chmod(d, 0o700)
    psk = os.path.join(d, "gone.psk")
    fd = os.open(psk, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(24) + "\n")
    extra = EXTRA.format(k1=secrets.token_hex(36), k2=secrets.token_hex(36),
                         k3=secrets.token_hex(36), k4=secrets.token_hex(36), long=LONG,
                         psk=psk)
    try:
        with lab.Lab(extra_a=extra) as n:
            assert n.ping(count=3).returncode == 0
            yield n
    finally:
        shutil.rmtree(d, ignore_errors=True)


def ctl(net, *args, check=True):
    r = lab.sh(lab.DPVPNCTL, "-s", net.a.ctl_sock, *args, check=False, timeout=30)
    if check:
        assert r.returncode == 0, f"dpvpnctl {' '.join(args)}: {r.stderr}"
    return r


def text(net, *args):
    return ctl(net, *args).stdout


def table(out, first_title):
    """Rows of the table whose header starts with first_title, as dicts.

    Columns are cut at the header's title offsets: text is left-aligned
    under its title, numbers right-aligned within the column."""
    lines = out.splitlines()
    h = next(i for i, ln in enumerate(lines) if ln.startswith(first_title + " "))
    header = lines[h]
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    titles = header.split()
    rows = []
    for ln in lines[h + 1:]:
        if not ln.strip() or ln.startswith("("):
            break
        cells = [ln[s:(starts[i + 1] if i + 1 < len(starts) else None)].strip()
                 for i, s in enumerate(starts)]
        rows.append(dict(zip(titles, cells)))
    return rows


def tunnels(net):
    return {t["name"]: t for t in net.a.ctl("show", "tunnels")["tunnels"]}


def block(out, name):
    """The lines of `show tunnels` text about tunnel name."""
    m = re.search(r"^tunnel: " + re.escape(name) + r"\n((?:  .*\n?)*)", out, re.M)
    assert m, out
    return m.group(1)


def test_lcores_busy_is_a_number(net):
    """BUSY printed '-' (the table printer had no case for JSON reals)."""
    rows = table(text(net, "show", "lcores"), "LCORE")
    assert rows and all(re.fullmatch(r"\d+(\.\d)?%", r["BUSY"]) for r in rows), rows
    raw = table(text(net, "-n", "show", "lcores"), "LCORE")
    assert all(0 <= float(r["BUSY"]) <= 1 for r in raw), raw
    js = net.a.ctl("show", "lcores")["lcores"]
    assert all(isinstance(l["busy"], float) for l in js)


def sa_of(net, name, d):
    return next(s for s in net.a.ctl("show", "sa")["sas"] if s["name"] == name and s["dir"] == d)


def test_clear_starts_every_counter_from_0(net):
    """clear reset only show counters; SAs, ports and lcores kept counting
    from the start (the man page promised all shown counters)."""
    assert net.ping(count=2).returncode == 0
    assert sa_of(net, "to-b", "out")["packets"] >= 2
    assert "counters cleared" in text(net, "clear")
    sas = {(s["name"], s["dir"]): s for s in net.a.ctl("show", "sa")["sas"]}
    for d in ("in", "out"):
        s = sas[("to-b", d)]
        assert (s["packets"], s["bytes"], sum(s["drops"].values())) == (0, 0, 0), s
    c = net.a.ctl("show", "counters")
    assert c["encrypted"] == c["decrypted"] == 0, c
    assert c["rx_packets"] < 20, c          # ARP and IKE to the absent peers at most
    ports = net.a.ctl("show", "ports")["ports"]
    assert all(p["rx_packets"] < 20 and p["tx_packets"] < 20 for p in ports), ports
    lc = net.a.ctl("show", "lcores")["lcores"]
    assert all(l["encrypted"] == l["decrypted"] == 0 for l in lc), lc
    # and then they count again
    assert net.ping(count=3).returncode == 0
    assert sa_of(net, "to-b", "out")["packets"] == 3
    assert sa_of(net, "to-b", "in")["packets"] == 3
    assert sa_of(net, "to-b", "out")["bytes"] == 3 * 84       # ICMP echo, 84-byte IPv4
    assert net.a.ctl("show", "counters")["encrypted"] == 3
    inside = next(p for p in net.a.ctl("show", "ports")["ports"] if p["role"] == "inside")
    assert 3 <= inside["rx_packets"] < 20, inside
    assert sum(l["encrypted"] for l in net.a.ctl("show", "lcores")["lcores"]) == 3
    t = tunnels(net)["to-b"]
    assert (t["out"]["packets"], t["in"]["packets"]) == (3, 3), t


def test_show_tunnels_up_and_why_down(net):
    t = tunnels(net)
    assert set(t) >= {"to-b", "to-c", LONG, "ike-gone"}, t.keys()
    b = t["to-b"]
    assert (b["state"], b["reason"], b["detail"]) == ("up", None, None), b
    assert (b["remote"], b["local"], b["cipher"], b["keying"]) == \
        ("198.19.0.2", "198.19.0.1", "aes128-gcm", "static"), b
    assert sorted((s["spi"], s["dir"]) for s in b["sas"]) == \
        [("0x00001001", "out"), ("0x00002001", "in")], b
    assert (b["local_ts"], b["remote_ts"]) == ("198.18.1.0/24", "198.18.2.0/24")
    assert t["to-c"]["state"] == "up" and t["to-c"]["cipher"] == "aes256-gcm"
    g = t["ike-gone"]
    assert (g["state"], g["reason"], g["keying"]) == ("down", "ike", "ike"), g
    assert "IKE" in g["detail"] and g["sas"] == [], g
    assert g["ike_state"] in ("init-sent", "none"), g     # none: between two attempts

    text(net, "tunnel", "to-c", "down")
    try:
        c = tunnels(net)["to-c"]
        assert (c["state"], c["reason"]) == ("down", "operator"), c
        assert c["remote"] == "198.19.0.3" and c["sas"] == [], c
        out = text(net, "show", "tunnels")
        assert re.search(r"state: down \(operator\)", block(out, "to-c")), out
        assert re.search(r"state: down \(ike\): IKE", block(out, "ike-gone")), out
        assert re.search(r"state: up$", block(out, "to-b"), re.M), out
        assert "peer: 198.19.0.2" in block(out, "to-b")
    finally:
        text(net, "tunnel", "to-c", "up")
    assert tunnels(net)["to-c"]["state"] == "up"
    # an IKE tunnel the operator terminated is down by the operator too (an IKE
    # SA must be there to terminate: between two attempts there is none)
    lab.wait_for(lambda: ctl(net, "terminate", "ike-gone", check=False).returncode == 0, 40,
                 "an IKE SA of ike-gone to terminate", interval=0.5)
    try:
        g = tunnels(net)["ike-gone"]
        assert (g["state"], g["reason"]) == ("down", "operator"), g
        assert "dpvpnctl terminate ike-gone" in g["detail"], g
    finally:
        text(net, "initiate", "ike-gone")
    assert tunnels(net)["ike-gone"]["reason"] == "ike"


def test_show_tunnels_sa_deleted(net):
    """A static tunnel whose outbound SA an operator deleted (sa del)."""
    text(net, "sa", "del", "0x00003001", "out")
    try:
        c = tunnels(net)["to-c"]
        assert (c["state"], c["reason"]) == ("down", "no-sa"), c
        assert "outbound SA" in c["detail"] and c["sas"] == [{"spi": "0x00003002",
                                                              "dir": "in"}], c
    finally:
        text(net, "tunnel", "to-c", "down")
        text(net, "tunnel", "to-c", "up")
    assert tunnels(net)["to-c"]["state"] == "up"


def test_show_tunnels_refused_by_the_config(net):
    """A tunnel added to the file by a reload that the config refused."""
    with open(net.a.config) as f:
        good = f.read()
    bad = good + ("\n[tunnel late]\nlocal = 198.19.0.1\nremote = 198.19.0.5\n"
                  "local-ts = 198.18.1.0/24\nremote-ts = 198.18.5.0/24\ncipher = aes128-gcm\n"
                  "out-spi = 0x5001\nout-key = 0x1234\nin-spi = 0x5002\n"
                  f"in-key = 0x{secrets.token_hex(20)}\n")
    with open(net.a.config, "w") as f:
        f.write(bad)
    try:
        r = ctl(net, "reload", check=False)
        assert r.returncode != 0 and "refused" in r.stderr, r
        js = net.a.ctl("show", "tunnels")
        late = next(t for t in js["tunnels"] if t["name"] == "late")
        assert (late["state"], late["reason"]) == ("down", "refused"), late
        assert re.search(r"dpvpn\.conf:\d+: \[tunnel late\] out-key", late["detail"]), late
        assert late["remote"] == "198.19.0.5", late
        assert js["config_refused"]["errors"] >= 1, js["config_refused"]
        b = next(t for t in js["tunnels"] if t["name"] == "to-b")
        assert b["state"] == "up", b            # the running config is kept
        out = text(net, "show", "tunnels")
        assert "state: down (refused): " in block(out, "late"), out
    finally:
        with open(net.a.config, "w") as f:
            f.write(good)
    ctl(net, "reload")
    js = net.a.ctl("show", "tunnels")
    assert "late" not in {t["name"] for t in js["tunnels"]} and js["config_refused"] is None


def test_last_packet_age_moves(net):
    assert net.ping(count=1).returncode == 0
    b = tunnels(net)["to-b"]
    assert b["in"]["last_packet_ms"] < 3000 and b["out"]["last_packet_ms"] < 3000, b
    assert tunnels(net)["to-c"]["in"]["last_packet_ms"] is None     # never a packet
    time.sleep(1.5)
    later = tunnels(net)["to-b"]
    for d in ("in", "out"):
        assert later[d]["last_packet_ms"] >= b[d]["last_packet_ms"] + 1000, (b, later)
    assert sa_of(net, "to-b", "out")["last_packet_ms"] >= 1000
    assert net.ping(count=1).returncode == 0
    again = tunnels(net)["to-b"]
    for d in ("in", "out"):
        assert again[d]["last_packet_ms"] < later[d]["last_packet_ms"], (later, again)
    out = block(text(net, "show", "tunnels"), "to-b")
    assert re.search(r"^  in: .*last packet \d+(\.\d)? s ago$", out, re.M), out
    assert re.search(r"^  out: .*last packet \d+(\.\d)? s ago$", out, re.M), out
    assert "no packet yet" in block(text(net, "show", "tunnels"), "to-c")


SHOWS = [["status"], ["show", "sa"], ["show", "ports"], ["show", "counters"],
         ["show", "counters", "--all"], ["show", "policies"], ["show", "routes"],
         ["show", "neighbours"], ["show", "lcores"], ["show", "ike"], ["show", "tunnels"],
         ["show", "trace"], ["monitor", "1"], ["help"]]


@pytest.mark.parametrize("numeric", [False, True])
def test_default_tables_fit_100_columns(net, numeric):
    """show sa had 21 columns (about 190 wide); show ike and the drop table
    were wider than 100 too.  The 31-character tunnel name, whose cipher
    name is the longest, is cut ('~') where the row would not fit."""
    opts = ["-n"] if numeric else []
    for what in SHOWS:
        out = text(net, *opts, *what)
        wide = [ln for ln in out.splitlines() if len(ln) > WIDTH]
        assert not wide, f"{' '.join(what)}:\n" + "\n".join(wide)
    sa = text(net, "show", "sa")
    assert LONG not in sa and re.search(r"^a-tunnel-name-of\S*~ ", sa, re.M), sa
    assert re.search(r"^to-b\s+out\s+0x00001001\s", sa, re.M), sa


def test_wide_shows_all_columns(net):
    sa = text(net, "-w", "show", "sa")
    header = sa.splitlines()[0].split()
    for title in ("NAME", "DIR", "SPI", "CIPHER", "LOCAL", "REMOTE", "ENCAP", "ESN", "LIFE",
                  "MTU", "LOCAL-TS", "REMOTE-TS", "WINDOW", "DF", "SEQ", "PACKETS", "BYTES",
                  "REPLAY", "BAD-ICV", "POLICY", "OTHER", "LAST-PKT"):
        assert title in header, header
    assert re.search(r"^" + LONG + r" ", sa, re.M), sa            # whole, not cut
    assert len(table(text(net, "show", "sa"), "NAME")[0]) < len(header)
    ports = text(net, "--wide", "show", "ports").splitlines()[0].split()
    for title in ("ADDRESS", "ADDRESS6", "EXTRA", "MAC", "RX-ERR", "TX-ERR", "CONFIG", "IFACE"):
        assert title in ports, ports
    row = next(r for r in table(text(net, "show", "ports"), "ID") if r["ID"] == "0")
    assert (row["CONFIG"], row["IFACE"], row["NAME"]) == ("inside", "gwa-in", "net_af_packet0")


def test_human_units_raw_numbers_and_json(net):
    assert net.ping(count=3, size=1000).returncode == 0
    js = sa_of(net, "to-b", "out")
    assert js["bytes"] > 3000 and isinstance(js["bytes"], int)
    human = next(r for r in table(text(net, "show", "sa"), "NAME")
                 if r["NAME"] == "to-b" and r["DIR"] == "out")
    assert re.fullmatch(r"\d+(\.\d+)? KiB", human["BYTES"]), human
    raw = next(r for r in table(text(net, "-n", "show", "sa"), "NAME")
               if r["NAME"] == "to-b" and r["DIR"] == "out")
    assert raw["BYTES"] == str(js["bytes"]) and raw["PACKETS"] == str(js["packets"]), raw
    b = block(text(net, "show", "tunnels"), "to-b")
    assert re.search(r"^  out: \d+(\.\d+)? KiB, \d+ packets?, ", b, re.M), b
    b = block(text(net, "-n", "show", "tunnels"), "to-b")
    assert re.search(r"^  out: \d+ bytes, \d+ packets?, last packet \d+ ms ago$", b, re.M), b
    mon = text(net, "monitor", "1")
    assert re.search(r"^to-b\s+out\s+0x00001001\s+\d+(\.\d+)? k?pps\s+\d+(\.\d+)? [kMG]?bit/s",
                     mon, re.M), mon


def test_counters_nonzero_reasons_unless_all(net):
    """show counters listed all 42 reasons, most of them at 0."""
    net.ping(count=1, dst="198.18.7.2")         # no policy for it: a no-policy drop
    before = net.a.ctl("show", "counters")["drops"]
    out = text(net, "show", "counters")
    after = net.a.ctl("show", "counters")["drops"]
    shown = {r["REASON"]: r for r in table(out, "REASON")}
    assert before["no-policy"] > 0 and "no-policy" in shown, out
    assert {k for k, v in before.items() if v} <= set(shown), out
    assert set(shown) <= {k for k, v in after.items() if v}, out
    assert "reasons at 0 not shown (--all lists them)" in out, out
    every = {r["REASON"] for r in table(text(net, "show", "counters", "--all"), "REASON")}
    assert every == set(after), every ^ set(after)


def test_help_prints_the_usage():
    r = lab.sh(lab.DPVPNCTL, "help", check=False)
    assert r.returncode == 0 and "show sa | tunnels" in r.stdout and "-w, --wide" in r.stdout, r
    assert max(len(ln) for ln in r.stdout.splitlines()) <= WIDTH


def test_reply_read_after_a_reset(tmp_path):
    """dpvpnd refusing a client replies and closes; when the client's request
    arrived in between, unread, Linux reports the reset to the client before
    the reply it queued first (seen in CI as "receive: Connection reset by
    peer" instead of "permission denied").  A stand-in dpvpnd does exactly
    that: dpvpnctl must still print the reply."""
    import json
    import select
    import socket
    import threading
    path = str(tmp_path / "d.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    srv.bind(path)
    srv.listen(1)

    def refuse():
        c, _ = srv.accept()
        c.send(json.dumps({"error": "permission denied: uid 65534 is not root"}).encode())
        select.select([c], [], [], 5)       # the request is there, unread
        c.close()

    t = threading.Thread(target=refuse)
    t.start()
    try:
        r = lab.sh(lab.DPVPNCTL, "-s", path, "status", check=False)
    finally:
        t.join(10)
        srv.close()
    assert r.returncode == 1, r
    assert "permission denied: uid 65534" in r.stderr, r.stderr
