# SPDX-License-Identifier: BSD-3-Clause
"""Both control sockets against hostile or clumsy clients, and key hygiene.

A gateway with two net_null ports, configured from configs/lab-a.conf by the
real dpvpnd; the test speaks to both sockets directly."""
import json
import os
import socket
import stat
import struct
import subprocess

import pytest

import lab

pytestmark = pytest.mark.tunnel

HDR = struct.Struct("=HHIIi")       # struct dpvpn_msg_hdr


def port_cfg(port, role, len4=24, addr6=bytes(20), mtu=0, host=b""):
    """struct dpvpn_port_cfg (84 bytes): id, role, IPv4 prefix 10.0.0.1/len4, addr6, mtu,
    extra4 (none), host_iface."""
    return struct.pack("=HBBBBH4s12x", port, role, 0, 4, len4, 0, bytes([10, 0, 0, 1])) + \
        addr6 + struct.pack("=HH", mtu, 0) + bytes(20) + struct.pack("16s", host)
MSG_HELLO, MSG_PORT_SET, MSG_SHOW_SA = 1, 2, 10
KEYS = ["0123456789abcdef0123456789abcdef01020304",
        "fedcba9876543210fedcba987654321005060708"]


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("ctl"))
    g = lab.Gateway("ctl", os.path.join(lab.CONFIGS, "lab-a.conf"),
                    ["net_null0", "net_null1"], d, ["-l", "0-1"])
    try:
        g.start()
        yield g
    finally:
        g.stop()


def seqpacket(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(path)
    return s


def dp_call(s, raw):
    s.send(raw)
    r = s.recv(1 << 17)
    typ, flags, seq, length, status = HDR.unpack_from(r)
    return typ, flags, seq, status, r[HDR.size:HDR.size + length]


def test_sockets_are_private(gw):
    for path in (gw.dp_sock, gw.ctl_sock):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path


@pytest.mark.parametrize("raw, field", [
    (b"\x01", b"hdr:"),                                         # shorter than a header
    (HDR.pack(MSG_HELLO, 0, 1, 4, 0), b"hdr.len"),              # len says 4, carries 0
    (HDR.pack(99, 0, 1, 0, 0), b"hdr.type"),                    # unknown type
    (HDR.pack(0, 0, 1, 0, 0), b"hdr.type"),
    (HDR.pack(MSG_HELLO, 1, 1, 0, 0), b"hdr.flags"),
    (HDR.pack(MSG_PORT_SET, 0, 1, 3, 0) + b"abc", b"hdr.len"),  # wrong size for the type
    (HDR.pack(MSG_PORT_SET, 0, 1, 84, 0) + port_cfg(7, 1), b"port.port_id"),
    (HDR.pack(MSG_PORT_SET, 0, 1, 84, 0) + port_cfg(0, 9), b"port.role"),
    (HDR.pack(MSG_PORT_SET, 0, 1, 84, 0) + port_cfg(0, 1, len4=33), b"port.addr4"),
    (HDR.pack(MSG_PORT_SET, 0, 1, 84, 0) + port_cfg(0, 1, mtu=9000), b"port.mtu"),
    (HDR.pack(MSG_PORT_SET, 0, 1, 84, 0) +
     port_cfg(0, 1, addr6=bytes([6, 64, 0, 0, 0xff]) + bytes(15)), b"port.addr6"),
    (HDR.pack(MSG_PORT_SET, 0, 1, 84, 0) + port_cfg(0, 1, host=b"a,iface=b"),
     b"port.host_iface"),                                       # devargs in a name
    (HDR.pack(MSG_PORT_SET, 0, 1, 84, 0) + port_cfg(0, 1, host=b"x" * 16),
     b"port.host_iface"),                                       # not NUL-terminated
    (HDR.pack(MSG_HELLO, 0, 1, 70000 - HDR.size, 0) + bytes(70000 - HDR.size), b"message:"),
])
def test_dataplane_rejects_bad_messages(gw, raw, field):
    with seqpacket(gw.dp_sock) as s:
        typ, flags, _, status, payload = dp_call(s, raw)
        assert flags == 1 and status < 0
        assert payload.startswith(field), payload
        # the connection and the process carry on
        typ, flags, seq, status, payload = dp_call(s, HDR.pack(MSG_HELLO, 0, 42, 0, 0))
        assert (typ, seq, status) == (MSG_HELLO, 42, 0)
    assert gw.dataplane.alive()


def test_dataplane_dump_is_paged(gw):
    with seqpacket(gw.dp_sock) as s:
        typ, _, _, status, payload = dp_call(s, HDR.pack(MSG_SHOW_SA, 0, 5, 4, 0) +
                                             struct.pack("=I", 1))
        total, count = struct.unpack_from("=II", payload)
        assert (status, total, count) == (0, 2, 1)


def ctl_call(s, raw):
    s.send(raw)
    return json.loads(s.recv(1 << 20))


@pytest.mark.parametrize("raw, words", [
    (b"not json", "JSON"),
    (b"[1,2]", "object"),
    (b'{"cmd": 5}', "cmd"),
    (b'{"cmd": "reboot"}', "cmd"),
    (b'{"cmd": "show"}', "what"),
    (b'{"cmd": "show", "what": "keys"}', "what"),
    (b'{"cmd": "status", "extra": 1}', "extra"),
    (b'{"cmd": "show", "what": "sa", "first": -1}', "first"),
    (b'{"cmd": "show", "what": "sa", "first": "0"}', "first"),
    (b'{"cmd": "show", "what": "counters", "first": 0}', "first"),
    (b"{" * 5000, "JSON"),
])
def test_dpvpnd_rejects_bad_requests(gw, raw, words):
    with seqpacket(gw.ctl_sock) as s:
        r = ctl_call(s, raw)
        assert r["ok"] is False and words.lower() in r["error"].lower(), r
        assert ctl_call(s, b'{"cmd":"status"}')["ok"] is True
    assert gw.dpvpnd.alive()


def test_dpvpnd_oversized_request(gw):
    with seqpacket(gw.ctl_sock) as s:
        r = ctl_call(s, b" " * 200000)
        assert r["ok"] is False
    assert gw.dpvpnd.alive()
    assert gw.ctl("status")["dataplane"]["started"] is True


def test_non_root_refused(gw):
    r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                        lab.DPVPNCTL, "-s", gw.ctl_sock, "status"],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode != 0 and "dpvpnctl:" in r.stderr


def test_no_key_bytes_anywhere(gw):
    outputs = [gw.dataplane.output(), gw.dpvpnd.output()]
    for what in (["status"], ["show", "sa"], ["show", "ports"], ["show", "counters"],
                 ["show", "policies"]):
        outputs.append(gw.ctl_text(*what))
        outputs.append(json.dumps(gw.ctl(*what)))
    blob = "\n".join(outputs).lower()
    for key in KEYS:
        for part in (key[:32], key[32:], key[:8], key[8:16], key[16:24], key[24:32]):
            assert part not in blob
    raw = "\n".join(outputs).encode("latin-1", "replace")
    for key in KEYS:
        assert bytes.fromhex(key[:16]) not in raw and bytes.fromhex(key[32:]) not in raw


MANY = """
[tunnel many{i}]
local = 198.19.0.1
remote = 198.19.0.2
local-ts = 198.18.1.0/24
remote-ts = 10.{hi}.{lo}.0/24
cipher = aes128-gcm
out-spi = {out:#x}
out-key = 0x{key}
in-spi = {inn:#x}
in-key = 0x{key}
"""


def test_show_many_sas(tmp_path):
    """3202 SAs and 1601 policies outgrow one reply of dpvpnd (1 MiB): the
    tables come in pages of CTL_PAGE entries and dpvpnctl asks for each
    (before, `show sa` answered "reply too large" from about 3000 SAs)."""
    n = 1600
    extra = "".join(MANY.format(i=i, hi=i >> 8, lo=i & 0xff, out=0x10000 + i, inn=0x20000 + i,
                                key="5a" * 20) for i in range(n))
    g = lab.Gateway("many", os.path.join(lab.CONFIGS, "lab-a.conf"),
                    ["net_null0", "net_null1"], str(tmp_path), ["-l", "0-1"],
                    extra_config=extra, dp_args=["--max-sa", str(2 * n + 16)])
    try:
        g.start(timeout=120)
        sas = g.ctl("show", "sa")
        spis = {(s["spi"], s["dir"]) for s in sas["sas"]}
        assert len(sas["sas"]) == len(spis) == sas["total"] == 2 * n + 2
        assert ("0x%08x" % (0x10000 + n - 1), "out") in spis
        pol = g.ctl("show", "policies")
        assert len(pol["policies"]) == pol["total"] == n + 1
        text = g.ctl_text("show", "sa")
        assert len([ln for ln in text.splitlines() if ln.startswith("many")]) == 2 * n
        # one page by hand
        with seqpacket(g.ctl_sock) as s:
            r = ctl_call(s, b'{"cmd":"show","what":"sa","first":3000}')
            assert r["ok"] and r["result"]["first"] == 3000
            assert r["result"]["total"] == 2 * n + 2 and len(r["result"]["sas"]) == 202
            r = ctl_call(s, b'{"cmd":"show","what":"sa","first":99999}')
            assert r["ok"] and r["result"]["sas"] == []
    finally:
        g.stop()
