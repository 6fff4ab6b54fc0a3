#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""dpvpn-tester: dpvpn as the traffic generator and analyser that measures
another IPsec gateway, the device under test (DUT).  See doc/tester.md.

  tester port A (inside)  ==== DUT protected side     cleartext
  tester port B (outside) ==== DUT unprotected side   ESP, one tunnel each

The tester is dpvpn-dataplane --tester N plus the dpvpnd that keys its N
tunnels (their tester-side hosts 100.64.0.0 + i): its generator and sink run
on the dataplane's workers, its ESP is the dataplane's own.  DUT-encap
streams: cleartext out of A, the DUT encrypts, B decrypts and counts;
DUT-decap streams: encrypted out of B, the DUT decrypts, A counts.

This module: the configs (the tester's and, --emit-peer-config, the DUT's),
Tester (start, one trial over telemetry, per-tunnel counters), and the
throughput search (MLRsearch, RFC 9971: tester/mlrsearch.py) with a Markdown
and JSON report.
"""
import argparse
import dataclasses
import ipaddress
import json
import os
import platform
import secrets
import signal
import socket
import stat
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "helpers"))
sys.path.insert(0, os.path.join(ROOT, "perf"))
sys.path.insert(0, HERE)
import lab  # noqa: E402
import mlrsearch as mlr  # noqa: E402
import probe  # noqa: E402
import report as rep  # noqa: E402
# IMIX (7:4:1, as dpvpn-pktgen), the directions, the bytes a frame adds on
# the wire: one definition, report.py's (it reads documents without us)
from report import DIRS, ETH_WIRE_EXTRA, IMIX  # noqa: E402,F401

INNER = "100.64.0.0"            # tunnel i's tester-side host: INNER + i
ESP_CHECK_MAX = 1000            # tunnels up to which trial() snapshots the SAs by default
# the inbound SAs whose ESP sequence numbers cross-check a stream: "t" SAs
# decrypt what the DUT encrypted (e_), port C's "u" SAs (back to back) what B sent (d_)
SA_STREAM = {"t": "e", "u": "d"}
TUNNELS_PAGE = 16               # /dpvpn/tester/tunnels' page (tester.c's TUNNELS_PAGE)
KEY_BYTES = {"aes128-gcm": 20, "aes256-gcm": 36}   # key + 4-byte salt


class Plan:
    """Addresses, tunnels and keys of one tester / DUT pair.  Keys are drawn
    at random for each plan (never printed; the config files are 0600)."""

    def __init__(self, tunnels=1, cipher="aes128-gcm", clear_net="198.18.1.0/24",
                 outer_net="198.19.0.0/24", inner=INNER, replay_window=1024,
                 outer_addresses=None, nat_t_ports=None):
        """outer_addresses: a prefix (e.g. 198.19.128.0/17) whose addresses
        from its .1 on are the tester's side of tunnel 0, 1, ... (the
        tester's port B holds it as extra-addresses; the DUT routes it via
        the tester's own outer address): the DUT sees a peer per tunnel.
        None: every tunnel from the tester's one outer address.
        nat_t_ports: a UDP port; tunnel i is ESP in UDP (encap = udp) from
        the tester's port nat_t_ports + i to the DUT's 4500 (with IKE, IKE
        too: the DUT sees the tester as behind a NAT and learns the port)."""
        if cipher not in KEY_BYTES:
            raise ValueError(f"cipher: {cipher} is not one of {', '.join(KEY_BYTES)}")
        if not 1 <= tunnels <= 200000:
            raise ValueError(f"tunnels: {tunnels} is not 1..200000")
        self.tunnels, self.cipher, self.window = tunnels, cipher, replay_window
        cn, on = ipaddress.ip_network(clear_net), ipaddress.ip_network(outer_net)
        self.clear_net, self.outer_net = cn, on
        self.dut_clear, self.tester_clear = cn[1], cn[2]
        self.dut_outer, self.tester_outer = on[1], on[2]
        self.inner = ipaddress.ip_address(inner)
        self.outer_addresses = self._outer_pool(outer_addresses)
        self.nat_t_ports = self._port_pool(nat_t_ports)
        n = KEY_BYTES[cipher]
        # to_dut: tester -> DUT (the DUT decrypts); to_tester: DUT -> tester
        self.keys = [(secrets.token_bytes(n).hex(), secrets.token_bytes(n).hex())
                     for _ in range(tunnels)]
        self.psk_file = None        # static keys unless use_ike()
        self.ike_start = True       # False: the tester initiates on command (paced set-up)
        self.ike_initiator = "tester"   # "dut": the DUT's dpvpnd initiates (start = yes there)
        self.ike_dpd = None         # seconds between liveness checks, both sides; None: dpvpnd's
        self.encap_udp = False      # IKE tunnels: force UDP encapsulation (kernel-libipsec)
        self.ike_proposal = "aes128gcm16-prfsha256-x25519"
        self.ike_auth = "psk"       # "cert": use_pki()'s certificate per tunnel
        self.pki_dir = None
        # remote access (use_ra): each tunnel asks for its address (virtual-ip
        # = request); the DUT answers them all from one connection with a pool
        self.ike_ra = False

    def _outer_pool(self, prefix):
        if prefix is None:
            return None
        try:
            net = ipaddress.ip_network(prefix)
        except ValueError as e:
            raise ValueError(f"outer addresses: {e}") from None
        if net.version != 4 or net.prefixlen == 0:
            raise ValueError(f"outer addresses: {prefix} is not an IPv4 prefix of length 1..32")
        if net.num_addresses - 1 < self.tunnels:
            raise ValueError(f"outer addresses: {prefix} has {net.num_addresses - 1} addresses "
                             f"from its .1 on, not the {self.tunnels} the tunnels need")
        for what, a in (("the DUT's outer address", self.dut_outer),
                        ("the tester's outer address", self.tester_outer)):
            if net[1] <= a <= net[self.tunnels]:
                raise ValueError(f"outer addresses: {prefix}'s first {self.tunnels} hold {a}, "
                                 f"{what}")
        if net.overlaps(self.clear_net):
            raise ValueError(f"outer addresses: {prefix} overlaps the clear network "
                             f"{self.clear_net}")
        return net

    def _port_pool(self, base):
        if base is None:
            return None
        if not 1024 <= base or base + self.tunnels - 1 > 65535:
            raise ValueError(f"NAT-T ports: {base}..{base + self.tunnels - 1} is not within "
                             f"1024..65535")
        return base

    def tester_outer_of(self, i):
        """Tunnel i's outer address on the tester's side."""
        return self.outer_addresses[1 + i] if self.outer_addresses else self.tester_outer

    def nat_t_port(self, i):
        """Tunnel i's UDP port on the tester's side (None: plain ESP)."""
        return None if self.nat_t_ports is None else self.nat_t_ports + i

    def _shape(self):
        """What a saved plan must agree on besides keys."""
        return {"tunnels": self.tunnels, "cipher": self.cipher,
                "outer_addresses": str(self.outer_addresses) if self.outer_addresses else None,
                "nat_t_ports": self.nat_t_ports}

    def save(self, path):
        """The plan, keys included, to a private file (--emit-peer-config)."""
        private_file(path, json.dumps({**self._shape(), "keys": self.keys}))

    def load_keys(self, path):
        """The keys of a saved plan, if it is one for these tunnels, cipher
        and outer addresses / ports (what the DUT was configured with)."""
        with open(path) as f:
            saved = json.load(f)
        if saved["tunnels"] != self.tunnels or saved["cipher"] != self.cipher:
            raise ValueError(f"{path}: a plan for {saved['tunnels']} tunnels of "
                             f"{saved['cipher']}, not {self.tunnels} of {self.cipher}")
        for k in ("outer_addresses", "nat_t_ports"):
            if saved.get(k) != self._shape()[k]:
                raise ValueError(f"{path}: a plan with {k} {saved.get(k)}, not "
                                 f"{self._shape()[k]}")
        self.keys = [tuple(k) for k in saved["keys"]]

    def host(self, i):
        return self.inner + i

    def spis(self, i):
        """(tester -> DUT, DUT -> tester)"""
        return 0x20000000 + i, 0x10000000 + i

    def _ports(self, clear, outer, extra=None):
        return (f"[port inside]\nid = 0\nrole = inside\naddress = {clear}/{self.clear_net.prefixlen}\n\n"
                f"[port outside]\nid = 1\nrole = outside\n"
                f"address = {outer}/{self.outer_net.prefixlen}\n"
                + (f"extra-addresses = {extra}\n" if extra else "") + "\n")

    def _encap(self, i, side, static):
        """Tunnel i's ESP-in-UDP lines (nat_t_ports).  With IKE the tester
        talks IKE from its port too (to the DUT's 4500, as from behind a
        NAT) and the DUT learns the port from it: nothing on its side."""
        port = self.nat_t_port(i)
        if port is None:
            return ""
        if self.psk_file and not static:
            if side != "tester":
                return ""
            return ("" if self.encap_udp else "encap = udp\n") + f"local-port = {port}\n"
        return f"encap = udp\n{'local' if side == 'tester' else 'remote'}-port = {port}\n"

    def tunnel(self, name, i, side, local, remote, static=False):
        """Tunnel i's [tunnel] section as side ("tester" or "dut") has it:
        selectors, SPIs and keys mirrored; IKE lines instead of keys when
        the plan uses IKE (unless static)."""
        to_dut, to_tester = self.spis(i)
        k_dut, k_tester = self.keys[i]
        mine = side == "tester"
        out_spi, out_key, in_spi, in_key = ((to_dut, k_dut, to_tester, k_tester) if mine else
                                            (to_tester, k_tester, to_dut, k_dut))
        ra = self.ike_ra and self.psk_file and not static   # narrowed to the lease
        host = "0.0.0.0/0" if ra and mine else f"{self.host(i)}/32"
        lts, rts = (host, self.clear_net) if mine else (self.clear_net, host)
        keying = (self.ike_lines(i, side) if self.psk_file and not static else
                  f"out-spi = {out_spi:#x}\nout-key = 0x{out_key}\n"
                  f"in-spi = {in_spi:#x}\nin-key = 0x{in_key}\n")
        return (f"[tunnel {name}]\nlocal = {local}\nremote = {remote}\n"
                f"local-ts = {lts}\nremote-ts = {rts}\ncipher = {self.cipher}\n{keying}"
                f"{self._encap(i, side, static)}replay-window = {self.window}\n\n")

    def tester_config(self):
        parts = [self._ports(self.tester_clear, self.tester_outer, self.outer_addresses),
                 f"[route tester-hosts]\ndst = {self.inner}/10\nport = inside\n"
                 f"via = {self.dut_clear}\n\n"]
        parts += [self.tunnel(f"t{i}", i, "tester", self.tester_outer_of(i), self.dut_outer)
                  for i in range(self.tunnels)]
        return "".join(parts)

    def use_ike(self, psk_file, reuse=False):
        """Key every tunnel by IKEv2 with a PSK (a new random one written to
        psk_file, 0600; reuse: the one there already, if there is one: an
        earlier --emit-peer-config's) instead of static keys: the tester
        initiates each tunnel, the DUT responds; each side names itself by
        an FQDN per tunnel."""
        if not (reuse and os.path.exists(psk_file)):
            private_file(psk_file, secrets.token_hex(32) + "\n")
        self.psk_file = psk_file

    def use_pki(self, workdir):
        """Certificates instead of the PSK (auth = pubkey): one CA, the DUT's
        certificate (dut.dpvpn.test) and one per tunnel (t{i}.tester.dpvpn.test),
        ECDSA P-256 (an IKE_AUTH with its chain stays under 1280 bytes: no
        fragments).  Made once per tunnel count under workdir (make_pki)."""
        self.pki_dir = make_pki(workdir, self.tunnels)
        self.ike_auth = "cert"

    def use_ra(self):
        """Remote access: every tunnel of the tester is a client that asks
        for its address (virtual-ip = request, local-ts 0.0.0.0/0, narrowed
        to the lease); the DUT has one connection (remote = %any) with a pool
        (ra_pool) for them all.  IKE only (use_ike first)."""
        self.ike_ra = True

    def ra_pool(self):
        """The DUT's pool: 10.64.0.0 with room for every tunnel."""
        bits = max(8, (self.tunnels + 2).bit_length())
        return ipaddress.ip_network(f"10.64.0.0/{32 - bits}")

    def psk_text(self):
        with open(self.psk_file) as f:
            return f.read().strip()

    def ike_lines(self, i, side):
        other = "dut" if side == "tester" else "tester"
        if self.ike_auth == "cert":
            d = self.pki_dir
            me = f"t{i}" if side == "tester" else "dut"
            auth = (f"auth = pubkey\ncert = {d}/{me}.pem\nprivate-key = {d}/{me}.key\n"
                    f"ca = {d}/ca.pem\n")
        else:
            auth = f"psk-file = {self.psk_file}\n"
        ra = self.ike_ra and side == "tester"
        ids = (f"local-id = fqdn:t{i}.{side}.dpvpn.test\n"
               f"remote-id = fqdn:{'dut' if ra else f't{i}.{other}'}.dpvpn.test\n")
        return (f"keying = ike\n{auth}"
                f"ike-proposals = {self.ike_proposal}\n"
                + ("encap = udp\n" if self.encap_udp else "") + ids +
                ("virtual-ip = request\n" if ra else "") +
                (f"dpd = {self.ike_dpd}\n" if self.ike_dpd is not None else "") +
                f"start = {'yes' if side == self.ike_initiator and self.ike_start else 'no'}\n")

    def loop_config(self, loop_net="198.19.1.0/24"):
        """loop_net None: port C is in the outer network (its .3), on one link
        with B (--tester-loop's crossed rings: the calibration)."""
        if self.outer_addresses:
            raise ValueError("outer addresses per tunnel are for a DUT, not the back-to-back "
                             "loops")
        if loop_net is None:
            c = self.outer_net[3]
            # jumbo: a 1514-byte frame's ESP fits (IMIX), as on a lab's links
            return self._loop_tunnels(self.tester_config().replace(
                "role = outside\n", "role = outside\nmtu = 9000\n", 1).replace(
                "\n[route tester-hosts]", f"\n[port loop]\nid = 2\nrole = outside\n"
                f"mtu = 9000\naddress = {c}/{self.outer_net.prefixlen}\n\n"
                # both ports hold the network: C's own address is reached out of B
                f"[route loop]\ndst = {c}/32\nport = outside\nvia = {c}\n\n"
                f"[route tester-hosts]", 1)
                .replace(f"remote = {self.dut_outer}\n", f"remote = {c}\n"), c)
        return self._router_loop_config(loop_net)

    def _router_loop_config(self, loop_net):
        """Back-to-back, no DUT: a third port C (outside, loop_net's .2) holds
        the DUT's side of every tunnel, so what the tester encrypts on port B
        comes back on C and is decrypted there by the dataplane's own code.
        B reaches C's network via the outer network's .1 (a router between
        them: a Linux namespace, shaped or lossy as a test wants it).  Only
        DUT-decap streams make sense here (encrypted by B, decrypted by C)."""
        ln = ipaddress.ip_network(loop_net)
        c = ln[2]
        parts = [self.tester_config().replace(
            f"\n[route tester-hosts]", f"[port loop]\nid = 2\nrole = outside\n"
            f"address = {c}/{ln.prefixlen}\n\n[route loop]\ndst = {ln}\nport = outside\n"
            f"via = {self.dut_outer}\n\n[route tester-hosts]", 1)
            .replace(f"remote = {self.dut_outer}\n", f"remote = {c}\n")]
        return self._loop_tunnels(parts[0], c)

    def _loop_tunnels(self, head, c):
        """head plus the DUT's side of every tunnel, on port C (address c)."""
        parts = [head] + [self.tunnel(f"u{i}", i, "dut", c, self.tester_outer, static=True)
                          for i in range(self.tunnels)]
        return "".join(parts)

    def dut_config_dpvpn(self):
        """The DUT's side as a dpvpn.conf (--emit-peer-config dpvpn)."""
        parts = [self._ports(self.dut_clear, self.dut_outer)]
        if self.outer_addresses:    # one route for them all: one neighbour, not one each
            parts.append(f"[route tester-outer]\ndst = {self.outer_addresses}\nport = outside\n"
                         f"via = {self.tester_outer}\n\n")
        if self.ike_ra:
            parts.append(self.dut_ra_tunnel())
        else:
            parts += [self.tunnel(f"t{i}", i, "dut", self.dut_outer, self.tester_outer_of(i))
                      for i in range(self.tunnels)]
        return "".join(parts)

    def dut_ra_tunnel(self):
        """use_ra: the DUT's one remote-access connection (certificates: a
        PSK cannot tell clients apart, config_ra.c)."""
        if self.ike_auth != "cert":
            raise ValueError("remote access on a dpvpn DUT: certificates only (--ike-auth "
                             "cert); with a PSK it has a [tunnel] per client (no --ike-ra)")
        d = self.pki_dir
        return (f"[tunnel rw]\nlocal = {self.dut_outer}\nremote = %any\n"
                f"local-ts = {self.clear_net}\npool = {self.ra_pool()}\n"
                f"cipher = {self.cipher}\nkeying = ike\nauth = pubkey\n"
                f"cert = {d}/dut.pem\nprivate-key = {d}/dut.key\nca = {d}/ca.pem\n"
                f"local-id = fqdn:dut.dpvpn.test\nremote-id = fqdn:*.tester.dpvpn.test\n"
                f"ike-proposals = {self.ike_proposal}\n"
                + ("encap = udp\n" if self.encap_udp else "") +
                (f"dpd = {self.ike_dpd}\n" if self.ike_dpd is not None else "") +
                f"replay-window = {self.window}\n\n")

    def dut_config_xfrm(self, dev_clear="eth0", dev_outer="eth1"):
        """The DUT's side as `ip xfrm` commands (a Linux gateway, static SAs)."""
        lines = ["# dpvpn-tester: the DUT's side, static SAs (run as root on the DUT)",
                 f"ip addr add {self.dut_clear}/{self.clear_net.prefixlen} dev {dev_clear}",
                 f"ip addr add {self.dut_outer}/{self.outer_net.prefixlen} dev {dev_outer}",
                 "sysctl -w net.ipv4.ip_forward=1"]
        if self.outer_addresses:
            lines.append(f"ip route add {self.outer_addresses} via {self.tester_outer} "
                         f"dev {dev_outer}")
        if self.nat_t_ports is not None:
            lines.append("# ESP in UDP: inbound needs a UDP socket on 4500 with "
                         "UDP_ENCAP_ESPINUDP (an IKE daemon's)")
        for i in range(self.tunnels):
            to_dut, to_tester = self.spis(i)
            k_dut, k_tester = self.keys[i]
            peer, port = self.tester_outer_of(i), self.nat_t_port(i)
            for src, dst, spi, key, encap in (
                    (self.dut_outer, peer, to_tester, k_tester, (4500, port)),
                    (peer, self.dut_outer, to_dut, k_dut, (port, 4500))):
                lines.append(f"ip xfrm state add src {src} dst {dst} proto esp spi {spi:#x} "
                             f"reqid {i + 1} mode tunnel aead 'rfc4106(gcm(aes))' 0x{key} 128"
                             f" replay-window {min(self.window, 32)}"
                             + (f" encap espinudp {encap[0]} {encap[1]} 0.0.0.0"
                                if port is not None else ""))
            lines.append(f"ip xfrm policy add src {self.clear_net} dst {self.host(i)}/32 dir out "
                         f"tmpl src {self.dut_outer} dst {peer} proto esp "
                         f"reqid {i + 1} mode tunnel")
            for d in ("in", "fwd"):
                lines.append(f"ip xfrm policy add src {self.host(i)}/32 dst {self.clear_net} "
                             f"dir {d} tmpl src {peer} dst {self.dut_outer} "
                             f"proto esp reqid {i + 1} mode tunnel")
        return "\n".join(lines) + "\n"

    def dut_config_swanctl(self, psk=None):
        """The DUT's side as strongSwan's swanctl.conf: one connection per
        tunnel, told apart by identity, the tester initiating; IKEv2 with
        the plan's PSK (use_ike; psk: its text, else a placeholder), UDP
        encapsulation when the plan asks for it (kernel-libipsec needs it)."""
        esp = {"aes128-gcm": "aes128gcm16", "aes256-gcm": "aes256gcm16"}[self.cipher]
        out = ["# dpvpn-tester: the DUT's side for strongSwan (swanctl --load-all)"]
        if self.outer_addresses:
            out.append(f"# the tester's outer addresses: ip route add {self.outer_addresses} "
                       f"via {self.tester_outer}")
        out.append("connections {")
        for i in range(self.tunnels):
            out += [f"    t{i} {{", "        version = 2",
                    f"        local_addrs = {self.dut_outer}",
                    f"        remote_addrs = {self.tester_outer_of(i)}",
                    f"        encap = {'yes' if self.encap_udp else 'no'}",
                    "        mobike = no", "        dpd_delay = 0s",
                    f"        proposals = {self.ike_proposal}",
                    "        local {", "            auth = psk",
                    f"            id = @t{i}.dut.dpvpn.test", "        }",
                    "        remote {", "            auth = psk",
                    f"            id = @t{i}.tester.dpvpn.test", "        }",
                    "        children {", f"            t{i} {{",
                    "                mode = tunnel",
                    f"                local_ts = {self.clear_net}",
                    f"                remote_ts = {self.host(i)}/32",
                    f"                esp_proposals = {esp}",
                    "                start_action = none", "                dpd_action = none",
                    "            }", "        }", "    }"]
        out += ["}", "secrets {", "    ike-tester {",
                f"        secret = \"{psk or 'CHANGE-ME: the tester PSK file'}\"",
                "    }", "}"]
        return "\n".join(out) + "\n"


def make_pki(workdir, count):
    """workdir/pki-COUNT: ca.pem, dut.pem/.key and t{i}.pem/.key for i <
    count (ECDSA P-256, SHA-256, SAN the FQDN, two years), made once: a
    directory with its 'complete' marker is used again.  Returns its path."""
    import datetime
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    d = os.path.join(workdir, f"pki-{count}")
    if os.path.exists(os.path.join(d, "complete")):
        return d
    os.makedirs(d, mode=0o700, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)

    def cert(cn, key, issuer, ca=False):
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
        b = (x509.CertificateBuilder().subject_name(name)
             .issuer_name(issuer[0].subject if issuer else name)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(days=1))
             .not_valid_after(now + datetime.timedelta(days=730))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(cn)]),
                                critical=False)
        return b.sign(issuer[1] if issuer else key, hashes.SHA256())

    def save(stem, c, key):
        with open(os.path.join(d, stem + ".pem"), "wb") as f:
            f.write(c.public_bytes(serialization.Encoding.PEM))
        if key is not None:
            private_file(os.path.join(d, stem + ".key"), key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption()).decode())
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = cert("dpvpn tester CA", ca_key, None, ca=True)
    save("ca", ca, None)
    for stem, cn in [("dut", "dut.dpvpn.test")] + [(f"t{i}", f"t{i}.tester.dpvpn.test")
                                                   for i in range(count)]:
        key = ec.generate_private_key(ec.SECP256R1())
        save(stem, cert(cn, key, (ca, ca_key)), key)
    private_file(os.path.join(d, "complete"), "")
    return d


def private_file(path, text):
    """text to path, mode 0600 (keys inside): a file there already is
    made 0600 before it is written (O_CREAT's mode only applies to a new one)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def emit(text, output=None):
    """--emit-peer-config's text (keys inline) to output, mode 0600, or to
    stdout; stdout redirected to a regular file (`> dut.conf`, which the
    shell makes 0644 under the usual umask) is made 0600 first: dpvpnd
    refuses a config that group or others can read."""
    if output:
        private_file(output, text)
        return
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):   # (io.UnsupportedOperation: a
        fd = None                                   # captured stdout, no file)
    if fd is not None and stat.S_ISREG(os.fstat(fd).st_mode) and os.fstat(fd).st_mode & 0o077:
        os.fchmod(fd, 0o600)
    sys.stdout.write(text)


QUIET_S = 0.1      # a trial's drain ends after this long without a packet
BUSY_S = 5.0       # a trial asked for again while the workers are busy, this long


class Tester:
    """dpvpn-dataplane --tester N and its dpvpnd, on two vdevs (port A, port B)."""

    def __init__(self, plan, vdevs, workdir, lcores, netns=None, name="tester", mbufs=None,
                 loop=False):
        """vdevs: port A, port B (and with loop="router" port C:
        Plan.loop_config); loop="rings": port A alone, B and C crossed rings
        made by the dataplane (--tester-loop): the back-to-back calibration."""
        self.plan = plan
        os.makedirs(workdir, mode=0o700, exist_ok=True)
        cfg = os.path.join(workdir, f"{name}.conf")
        private_file(cfg, plan.loop_config(None) if loop == "rings" else
                     plan.loop_config() if loop else plan.tester_config())
        args = ["--idle-sleep-us", "0", "--tester", str(plan.tunnels),
                *(["--tester-loop", "--jumbo"] if loop == "rings" else []),
                "--tester-inner", str(plan.inner),
                "--max-sa", str((4 if loop else 2) * plan.tunnels + 16),
                # a load generator: its IKE is not to be rate-limited as a
                # gateway's is (1 000 a second would drop the liveness checks
                # of thousands of idle tunnels, which come due together; its
                # bucket, a millisecond of the rate, takes a peer's burst of
                # IKE_SA_INITs: a DUT that starts initiates 32 at a time)
                "--ike-rate", str(max(100000, 20 * plan.tunnels))]
        if mbufs:
            args += ["--mbufs", str(mbufs)]
        self.gw = lab.Gateway(name, cfg, vdevs, workdir, lcores, netns=netns, dp_args=args)
        self.tel = None
        # the ESP cross-check: SA snapshots around each trial (one dpvpnctl
        # show sa each; off by default for many tunnels, where that is slow)
        self.esp_check = plan.tunnels <= ESP_CHECK_MAX
        self.sa_window = None       # (before, after) the last trial

    def start(self, timeout=60):
        self.gw.start(timeout)
        self.tel = probe.Telemetry(self.gw.file_prefix)

    def start_racing(self, encap_pps, decap_pps, seconds, sizes, timeout=60, during=None):
        """Start the dataplane, then dpvpnd without waiting for it, and a
        trial the moment the dataplane forwards (dpvpnd's START; IKE
        initiates every tunnel right after): packets flow before tunnels are
        up, so each tunnel's first received packet times its set-up.
        Returns the stats once the trial and its drain are over."""
        self.gw.start_dataplane(timeout)
        self.tel = probe.Telemetry(self.gw.file_prefix)
        self.gw.start_dpvpnd(wait=False)
        end = time.monotonic() + timeout
        while True:
            try:
                # (no SA snapshots: dpvpnd is not up yet, its SAs are being made)
                return self.trial(encap_pps, decap_pps, seconds, sizes, during=during,
                                  esp_check=False)
            except RuntimeError as e:
                if "busy" not in str(e) or time.monotonic() > end:
                    raise
            time.sleep(0.002)

    def stop(self):
        if self.tel:
            self.tel.close()
            self.tel = None
        return self.gw.stop()

    def stats(self):
        return self.tel.cmd("/dpvpn/tester/stats")

    def tunnels(self, first=0, count=None):
        """Per-tunnel counters, {index: {...}}, paged (TUNNELS_PAGE a request).
        With the last trial's SA snapshots (esp_check), a stream whose ESP
        the tester decrypts also has {e,d}_esp_gap and {e,d}_icv_failures
        (report.esp_check; None where its SA changed in the trial)."""
        count = self.plan.tunnels - first if count is None else count
        out = {}
        for at in range(first, first + count, TUNNELS_PAGE):
            page = self.tel.cmd(f"/dpvpn/tester/tunnels,{at},"
                                f"{min(TUNNELS_PAGE, first + count - at)}")
            out.update({int(k): v for k, v in page.items()})
        if self.sa_window:
            for (prefix, i), c in rep.esp_check(*self.sa_window).items():
                if i in out:
                    out[i][f"{SA_STREAM[prefix]}_esp_gap"] = c["esp_gap"]
                    out[i][f"{SA_STREAM[prefix]}_icv_failures"] = c["icv_failures"]
        return out

    def sa_snapshot(self):
        """{(prefix, tunnel): {"spi", "seq", "packets", "icv"}} of the
        inbound SAs of the tester's tunnels (prefixes of SA_STREAM)."""
        out = {}
        for sa in self.gw.ctl("show", "sa")["sas"]:
            name, prefix = sa["name"], sa["name"][:1]
            if sa["dir"] == "in" and prefix in SA_STREAM and name[1:].isdigit():
                out[(prefix, int(name[1:]))] = {
                    "spi": sa["spi"], "seq": int(sa["seq"]), "packets": int(sa["packets"]),
                    "icv": int(sa["drops"]["bad-icv"])}
        return out

    def icv_failures(self):
        """{tunnel index: ICV failures on its inbound SA} (dpvpnctl show sa)."""
        out = {}
        for sa in self.gw.ctl("show", "sa")["sas"]:
            if sa["dir"] == "in" and sa["name"].startswith("t"):
                out[int(sa["name"][1:])] = sa["drops"]["bad-icv"]
        return out

    def esp_missing(self, prefix="t"):
        """{tunnel: ESP packets missing on its inbound SA}: the highest
        sequence number received minus the packets decrypted, i.e. what the
        far end encrypted that never got here (lost on the ESP leg), since
        the SA was made.  prefix: "t" (the tester's tunnels), "u" (port C's,
        back to back).  The cross-check of the sink's loss count."""
        out = {}
        for sa in self.gw.ctl("show", "sa")["sas"]:
            name = sa["name"]
            if sa["dir"] == "in" and name.startswith(prefix) and name[len(prefix):].isdigit():
                out[int(name[len(prefix):])] = int(sa["seq"]) - int(sa["packets"])
        return out

    def trial(self, encap_pps, decap_pps, seconds, sizes, drain=0.5, progress=None,
              during=None, esp_check=None):
        """One trial: both directions' loads (pps, 0 = off, 'max'), sizes a
        list of frame sizes cycled per packet.  Returns the stats after the
        TX window and the drain (until nothing more arrives, at most drain s).
        progress: a file that gets report.progress_line() each second.
        esp_check (default self.esp_check): the inbound SAs' counters read
        before and after, for tunnels()' ESP cross-check."""
        sz = ",".join(str(s) for s in sizes)
        check = self.esp_check if esp_check is None else esp_check
        before = self.sa_snapshot() if check else None
        self.sa_window = None
        cmd = f"/dpvpn/tester/start,{encap_pps},{decap_pps},{max(1, round(seconds * 1000))},{sz}"
        r = self.tel.cmd(cmd)
        # busy: the workers have not all taken up the last trial (or started)
        # yet, a few ms on a loaded machine: asked again for up to BUSY_S
        t_busy = time.monotonic()
        while "busy" in r.get("error", "") and time.monotonic() - t_busy < BUSY_S:
            time.sleep(0.01)
            r = self.tel.cmd(cmd)
        if "error" in r:
            raise RuntimeError(f"tester: {r['error']}")
        trial = r["trial"]
        opens = r.get("opens_in_ns", 10_000_000) / 1e9
        if during:      # (the TX window opens 10 ms after the start, more with many tunnels)
            during(time.monotonic() + opens)
        end = time.monotonic() + opens + seconds + 0.04
        prev, at = None, time.monotonic()
        while time.monotonic() < end:
            time.sleep(min(1.0 if progress else 0.1, max(0.0, end - time.monotonic())))
            if progress:
                now, t = self.stats(), time.monotonic()
                if now["trial"] == trial and t > at:
                    print(rep.progress_line(prev, now, t - at), file=progress, flush=True)
                prev, at = now, t
        # the drain: until all is in, nothing more came for QUIET_S (a worker
        # descheduled on a busy host holds packets for tens of ms), or drain s
        deadline, last, moved = time.monotonic() + drain, None, time.monotonic()
        while True:
            s = self.stats()
            if s["trial"] != trial:
                raise RuntimeError("tester: another trial started meanwhile")
            got, now = tuple(s[d]["received"] for d in DIRS), time.monotonic()
            done = all(s[d]["received"] + s[d]["duplicated"] >= s[d]["sent"] for d in DIRS)
            if got != last:
                last, moved = got, now
            if not s["running"] and (done or now - moved >= QUIET_S or now > deadline):
                if before is not None:
                    self.sa_window = (before, self.sa_snapshot())
                return s
            time.sleep(0.02)


def loss_of(s, dirs):
    """(packets due, received, loss ratio) of the directions: what a stall of
    the tester left unsent counts as lost (the DUT did not pass a load the
    tester did not offer)."""
    sent = sum(s[d]["sent"] + s[d].get("unsent", 0) for d in dirs)
    rx = sum(s[d]["received"] for d in dirs)
    return sent, rx, (sent - rx) / sent if sent else 0.0


def preset_config(preset, min_load, max_load, trial=None, duration_sum=None, **overrides):
    """A preset's Config; trial / duration_sum: every goal's trial duration
    and duration sum replaced (shorter searches in a lab)."""
    cfg = mlr.PRESETS[preset](min_load, max_load, **overrides)
    if trial is None and duration_sum is None:
        return cfg
    goals = tuple(dataclasses.replace(
        g, initial_trial_duration=trial or g.initial_trial_duration,
        final_trial_duration=trial or g.final_trial_duration,
        duration_sum=duration_sum or max(trial or 0, g.duration_sum)) for g in cfg.goals)
    return dataclasses.replace(cfg, goals=goals)


def search(tester, sizes, dirs, preset="csit", min_load=1e4, max_load=1e6, config=None,
           progress=None, **overrides):
    """NDR and PDR (RFC 9971) for one frame size (list) and the directions
    given (their loads equal: the load is the sum), with a preset or a
    mlrsearch.Config of its own.  Returns the SearchResult."""
    def measure(load, duration):
        per = load / len(dirs)
        s = tester.trial(per if "dut_encap" in dirs else 0, per if "dut_decap" in dirs else 0,
                         duration, sizes, progress=progress)
        sent, rx, loss = loss_of(s, dirs)
        window = s["window_ns"] / 1e9
        offered = sum(s[d]["sent"] for d in dirs)
        return mlr.TrialResult(intended_load=load, duration=duration, loss_ratio=max(0.0, loss),
                               offered_load=offered / window if window else 0.0,
                               extras={"sent": sent, "received": rx,
                                       **{d: s[d] for d in dirs},
                                       "late": s["late"], "behind": s["behind"],
                                       "no_mbuf": s["no_mbuf"]})
    config = config or preset_config(preset, min_load, max_load, **overrides)
    return mlr.search(config, measure)


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    return {"cpu": cpu, "cpus": os.cpu_count(), "kernel": platform.release(),
            "time": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}


def setup_rate(tester, tunnels, seconds=10.0, per_tunnel_pps=20, rate=None):
    """Tunnel set-up as traffic sees it (a tester not started yet): both
    directions at per_tunnel_pps on every tunnel from the moment the
    dataplane forwards; a tunnel is up when a packet has crossed it both
    ways.  rate None: dpvpnd initiates every tunnel at once (start = yes);
    a number: the plan has ike_start False and the tunnels are initiated
    here, rate a second (dpvpnctl initiate).  Returns the time from each
    tunnel's initiation to its first packet both ways, the tunnels that never
    carried one (failed), and the set-up rate (tunnels up / time until the
    last came up)."""
    load = per_tunnel_pps * tunnels
    started = {}
    if rate is None:
        s = tester.start_racing(load, load, seconds, [64])
    else:
        s = tester.start_racing(load, load, seconds, [64], during=lambda t0: initiate_paced(
            tester, tunnels, rate, t0, started))
    per = tester.tunnels()
    first = {i: max(t["e_first_ns"], t["d_first_ns"]) / 1e9 - started.get(i, 0.0)
             for i, t in per.items() if t["e_received"] and t["d_received"]}
    failed = sorted(set(per) - set(first))
    ordered = sorted(first.values())
    last = max(first[i] + started.get(i, 0.0) for i in first) if first else 0.0
    return {"tunnels": tunnels, "up": len(first), "failed": failed,
            "initiation": "all at once (start = yes)" if rate is None else f"{rate}/s",
            "first_packet_s": {"min": ordered[0] if ordered else None,
                               "p50": ordered[len(ordered) // 2] if ordered else None,
                               "max": ordered[-1] if ordered else None},
            "rate_per_s": len(first) / last if last else None,
            "lost_while_setting_up": {d: s[d]["lost"] for d in DIRS}}


def initiate_paced(tester, tunnels, rate, t0, started):
    """Initiate t0..tN-1 (dpvpnd's socket), rate a second from t0 (monotonic time of
    the trial's start); started[i]: when tunnel i was asked, from t0."""
    ctl = Ctl(tester.gw.ctl_sock)   # one process a tunnel fell behind 100/s on a busy host
    try:
        for i in range(tunnels):
            time.sleep(max(0.0, t0 + i / rate - time.monotonic()))
            started[i] = time.monotonic() - t0
            ctl.ike("initiate", f"t{i}")
    finally:
        ctl.close()


REKEY_GRACE_S = 2.0     # dpvpnd keeps a rekeyed CHILD_SA this long (ike_sa.h)


def child_rekeys(tester):
    """CHILD_SA rekeys done so far by the tester's IKE SAs (show ike)."""
    return sum(sa.get("child_rekeys", 0) for sa in tester.gw.ctl("show", "ike")["sas"])


def rekey_under_load(tester, load_pps, seconds, rekeys_per_s, sizes=(64,), dirs=DIRS,
                     settle=10.0):
    """CHILD_SA rekeys (asked of dpvpnd, round robin over the tunnels, at
    rekeys_per_s) during a trial at load_pps (the sum over dirs): the
    rekeys done (dpvpnd's count, waited for up to settle seconds after
    the trial: under load an exchange may take that long), those refused
    (one still under way), the loss per rekey, and the gap it makes in a
    tunnel's stream (its loss over its packet rate), from the tester's
    counters."""
    per_dir = load_pps / len(dirs)
    done, errors = [], []

    def rekeys(t0):
        ctl = Ctl(tester.gw.ctl_sock)
        try:
            for k in range(int(seconds * rekeys_per_s)):
                time.sleep(max(0.0, t0 + (k + 0.5) / rekeys_per_s - time.monotonic()))
                try:
                    ctl.ike("rekey", f"t{k % tester.plan.tunnels}")
                    done.append(True)
                except RuntimeError as e:
                    done.append(False)
                    errors.append(str(e))
        finally:
            ctl.close()
    before = child_rekeys(tester)
    s = tester.trial(per_dir if "dut_encap" in dirs else 0,
                     per_dir if "dut_decap" in dirs else 0, seconds, list(sizes), during=rekeys)
    lost = sum(s[d]["lost"] for d in dirs)
    asked = sum(done)
    end = time.monotonic() + settle     # the last ones may still be under way
    while (n := child_rekeys(tester) - before) < asked and time.monotonic() < end:
        time.sleep(0.1)
    per_tunnel_pps = load_pps / tester.plan.tunnels
    return {"load_pps": load_pps, "rekeys": n, "asked": len(done),
            "refused": len(done) - asked, "first_refusal": errors[0] if errors else None,
            "lost": lost, "lost_per_rekey": lost / n if n else None,
            "gap_us_per_rekey": (lost / n) / per_tunnel_pps * 1e6 if n else None,
            # measured: the longest wait between two packets of any stream
            "gap_max_us": max(s[d]["gap_max_ns"] for d in dirs) / 1e3,
            "stats": s}


def restart_under_load(tester, restart, load_pps, seconds, at=1.0, sizes=(64,), only=None):
    """A trial of `seconds` at load_pps each way, spread over every tunnel,
    and `at` seconds into it restart(), which restarts part of the DUT and
    returns once that part is back ([scale] issue 28 req. 3: a dpvpnd taking
    over its running dataplane, or the whole DUT).  Returns the loss both
    ways, the tunnels that lost a packet, the longest wait between two
    packets of any stream, how long restart() took, per tunnel whether it
    carried traffic both ways after the restart began and its outage (the
    longer of its two streams' longest gap: from its last packet before to
    its first after; p50/p99/max over the tunnels back), and the trial's
    stats.  only: the tunnels (indices) to count; the rest (not up before)
    are left out."""
    took = {}

    def during(t_open):
        time.sleep(max(0.0, t_open + at - time.monotonic()))
        t0 = time.monotonic()
        took["at_ns"] = (t0 - t_open) * 1e9
        restart()
        took["restart_s"] = round(time.monotonic() - t0, 3)
    s = tester.trial(load_pps, load_pps, seconds, list(sizes), during=during)
    per = {i: t for i, t in tester.tunnels().items() if only is None or i in only}
    lossy = sorted(i for i, t in per.items()
                   if t["e_received"] < t["e_sent"] or t["d_received"] < t["d_sent"])
    at_ns = took.get("at_ns", at * 1e9)
    back = {i: max(t["e_gap_max_ns"], t["d_gap_max_ns"]) / 1e9 for i, t in per.items()
            if min(t["e_last_ns"], t["d_last_ns"]) > at_ns}
    gaps = sorted(back.values())
    return {"load_pps": load_pps, "seconds": seconds, "restart_at_s": at,
            "restart_s": took.get("restart_s"),
            "back": len(back), "not_back": sorted(set(per) - set(back))[:10],
            "outage_s": {"p50": round(gaps[len(gaps) // 2], 3) if gaps else None,
                         "p99": round(gaps[int(0.99 * (len(gaps) - 1))], 3) if gaps else None,
                         "max": round(gaps[-1], 3) if gaps else None},
            "sent": {d: sum(t[f"{d[4]}_sent"] for t in per.values()) for d in DIRS},
            "lost": {d: sum(t[f"{d[4]}_sent"] - t[f"{d[4]}_received"] for t in per.values())
                     for d in DIRS},
            "tunnels": len(per), "tunnels_with_loss": len(lossy),
            "first_lossy": lossy[:10],
            "gap_max_ms": round(max(s[d]["gap_max_ns"] for d in DIRS) / 1e6, 3),
            "stats": s}


class Ctl:
    """dpvpnd's operator socket (control/ctl_proto.h: SOCK_SEQPACKET, one JSON
    object a datagram, one reply each), held open: the paced set-up asks for
    thousands of initiations a second, which one dpvpnctl process each
    (≈ 10 ms) could not."""

    def __init__(self, path, wait=5.0):
        """wait: seconds to wait for a dpvpnd still starting (its socket)."""
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.s.settimeout(10)
        end = time.monotonic() + wait
        while True:
            try:
                self.s.connect(path)
                return
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > end:
                    self.s.close()
                    raise
                time.sleep(0.05)

    def ask(self, **req):
        self.s.send(json.dumps(req).encode())
        r = json.loads(self.s.recv(1 << 20))
        if not r.get("ok"):
            raise RuntimeError(f"dpvpnd: {req}: {r.get('error')}")
        return r["result"]

    def ike(self, op, name):
        return self.ask(cmd="ike", op=op, name=name)

    def close(self):
        self.s.close()


def tunnels_up(tester):
    """Names of the tester's tunnels dpvpnd shows up."""
    return {t["name"] for t in tester.gw.ctl("show", "tunnels")["tunnels"]
            if t["state"] == "up"}


def terminate_all(tester, timeout=30.0, settle=1.0):
    """Every tunnel of the tester ended (IKE DELETE to the DUT), and proved
    down by a short trial through which nothing crosses: the next set-up
    trial starts from none; then settle seconds more, so that the DUT is
    done with the DELETEs (and a rate limit on its IKE has refilled)."""
    ctl = Ctl(tester.gw.ctl_sock)
    try:
        for i in range(tester.plan.tunnels):
            try:
                ctl.ike("terminate", f"t{i}")
            except RuntimeError:
                pass        # not established: nothing to end
    finally:
        ctl.close()
    end = time.monotonic() + timeout
    while True:
        s = tester.trial(1000, 1000, 0.2, [64])
        if all(s[d]["received"] == 0 for d in DIRS):
            time.sleep(settle)
            return
        if time.monotonic() > end:
            raise RuntimeError(f"tester: tunnels still carry traffic {timeout} s after "
                               f"terminate: {s}")
        time.sleep(0.5)


def setup_trial(tester, rate, count, deadline=3.0, per_tunnel_pps=20):
    """One set-up trial: tunnels t0..t(count-1), all down at the start,
    initiated at rate a second over dpvpnd's socket while traffic flows on
    every tunnel both ways (per_tunnel_pps, the sum); a tunnel is set up when
    a packet has crossed it both ways, and failed unless that happened within
    deadline seconds of its initiation.  Returns the trial's record."""
    load = per_tunnel_pps * tester.plan.tunnels / 2
    started = {}
    t0 = time.monotonic()
    tester.trial(load, load, count / rate + deadline, [64],
                 during=lambda at: initiate_paced(tester, count, rate, at, started))
    per = tester.tunnels(0, count)
    first = {}
    for i, t in per.items():
        if t["e_received"] and t["d_received"] and i in started:
            first[i] = max(t["e_first_ns"], t["d_first_ns"]) / 1e9 - started[i]
    ok = sorted(v for v in first.values() if v <= deadline)
    pace = (count - 1) / started[count - 1] if count > 1 and started[count - 1] else rate
    return {"rate": rate, "achieved_rate": round(pace, 1), "tunnels": count,
            "set_up": len(ok), "failed": count - len(ok),
            "failure_ratio": (count - len(ok)) / count,
            "first_packet_s": {"min": ok[0] if ok else None,
                               "p50": ok[len(ok) // 2] if ok else None,
                               "p99": ok[min(len(ok) - 1, len(ok) * 99 // 100)] if ok else None,
                               "max": ok[-1] if ok else None},
            "wall_s": round(time.monotonic() - t0, 2)}


def setup_rate_search(tester, count=None, min_rate=10.0, max_rate=1000.0, deadline=3.0,
                      failures=0.001, precision=0.10, progress=None, settle=1.0):
    """The highest set-up rate (tunnels a second) at which at most the
    failures ratio (RFC-style loss ratio, default 0.1 %) of count tunnels is
    not set up within deadline: bisection in log space between min_rate and
    max_rate until the upper bound is within precision of the lower, each
    trial from all tunnels down (terminate_all, settle).  Returns the lower bound
    (the rate found, None if even min_rate failed), the upper bound (None
    if max_rate passed) and every trial."""
    count = count or tester.plan.tunnels
    trials = []

    def measure(rate):
        terminate_all(tester, settle=settle)
        r = setup_trial(tester, rate, count, deadline)
        r["passed"] = r["failure_ratio"] <= failures
        trials.append(r)
        if progress:
            print(f"setup {rate:10.1f}/s (achieved {r['achieved_rate']}/s): "
                  f"{r['set_up']}/{count} up, {'pass' if r['passed'] else 'FAIL'}",
                  file=progress, flush=True)
        return r["passed"]
    lo = hi = None
    if measure(max_rate):
        lo = max_rate
    elif not measure(min_rate):
        hi = min_rate
    else:
        lo, hi = min_rate, max_rate
        while hi / lo > 1 + precision:
            mid = (lo * hi) ** 0.5
            if measure(mid):
                lo = mid
            else:
                hi = mid
    at = next((t for t in reversed(trials) if t["rate"] == lo), None)
    return {"tunnels": count, "deadline_s": deadline, "failure_ratio_max": failures,
            "rate_per_s": lo, "upper_bound_per_s": hi,
            "first_packet_s": at["first_packet_s"] if at else None, "trials": trials}


def capacity(tester, rate=100.0, deadline=5.0, hold=2.0):
    """How many tunnels the DUT holds at once: every tunnel of the tester
    initiated (rate a second; none up at the start), then, after hold more
    seconds, a trial on all of them: a tunnel is held when traffic crossed
    it both ways in that trial.  held == the tester's tunnel count means the
    DUT holds at least that many (the tester's limit, not the DUT's)."""
    n = tester.plan.tunnels
    terminate_all(tester)
    setup = setup_trial(tester, rate, n, deadline)
    time.sleep(hold)
    s = tester.trial(10 * n, 10 * n, 1.0, [64])
    per = tester.tunnels()
    held = sorted(i for i, t in per.items() if t["e_received"] and t["d_received"])
    return {"offered": n, "held": len(held), "at_least": len(held) == n,
            "setup": setup, "not_held": sorted(set(per) - set(held))[:32],
            "lost_in_check": {d: s[d]["lost"] for d in DIRS}}


def bring_up(tester, rate=100.0, timeout=60.0):
    """Every tunnel up and carrying traffic both ways (IKE: those not up
    initiated, rate a second), before a throughput search."""
    up = tunnels_up(tester)
    ctl = Ctl(tester.gw.ctl_sock)
    try:
        for i in range(tester.plan.tunnels):
            if f"t{i}" not in up:
                try:
                    ctl.ike("initiate", f"t{i}")
                except RuntimeError:
                    pass        # under way already
                time.sleep(1 / rate)
    finally:
        ctl.close()
    end, n = time.monotonic() + timeout, tester.plan.tunnels
    while True:
        tester.trial(10 * n, 10 * n, 0.5, [64])
        down = [i for i, t in tester.tunnels().items()
                if not (t["e_received"] and t["d_received"])]
        if not down:
            return
        if time.monotonic() > end:
            raise RuntimeError(f"tester: {len(down)} tunnels carry no traffic {timeout} s "
                               f"after their initiation (first: t{down[0]})")


def rekey_at_ndr(tester, ndr_pps, rekeys_per_s, seconds=5.0, shares=(50, 90), sizes=(64,),
                 dirs=DIRS):
    """Rekeys under load at shares (%) of the NDR (pps, the sum of both
    directions): each rekey_under_load (gap_max_us: the longest wait
    between two packets of any stream, measured)."""
    out = {}
    for k, pct in enumerate(shares):
        if k:       # the tester's dpvpnd keeps a rekeyed tunnel's old CHILD_SA 2 s
            time.sleep(REKEY_GRACE_S + 0.5)     # and refuses its next rekey until then
        r = rekey_under_load(tester, ndr_pps * pct / 100, seconds, rekeys_per_s, sizes, dirs)
        s = r.pop("stats")
        r["sent"] = {d: s[d]["sent"] for d in dirs}
        out[str(pct)] = r
    return out


def latency_points(tester, sizes, dirs, pdr, seconds=1.0, shares=(10, 50, 90)):
    """Trials at 10, 50 and 90 % of the PDR (pps, the sum over dirs): their
    stats by share, for the latency table, each with "worst_tunnels": its worst
    tunnels by p99 (report.worst_tunnels), for the per-tunnel table."""
    out = {}
    for pct in shares:
        per = pdr * pct / 100 / len(dirs)
        s = tester.trial(per if "dut_encap" in dirs else 0,
                         per if "dut_decap" in dirs else 0, seconds, sizes)
        s["worst_tunnels"] = rep.worst_tunnels(tester.tunnels())
        out[str(pct)] = s
    return out


def calibrate(tunnels, size_lists, workdir, lcores, seconds=1.0, cipher="aes128-gcm"):
    """The tester's own capacity, back to back (--tester-loop: its ESP to
    itself over crossed rings, each packet encrypted and decrypted by the
    tester): packets received per second at 'max' per frame label, and the
    latency at 1 % of that (the tester's latency bias)."""
    t = Tester(Plan(tunnels, cipher), ["net_null0,no-rx=1"], workdir, lcores,
               name="calibration", loop="rings")
    cal = {"tunnels": tunnels, "pps": {}, "latency_p50_ns": {}, "method":
           "back to back over crossed rings (--tester-loop), DUT-decap streams at max"}
    try:
        t.start()
        t.trial(0, 1000, 0.2, [64])         # neighbours resolved
        for sizes in size_lists:
            s = t.trial(0, "max", seconds, sizes)
            pps = s["dut_decap"]["received"] / (s["window_ns"] / 1e9)
            cal["pps"][rep.label(sizes)] = pps
            # lost in the loop (rings full: the generator outran the decryption)
            cal.setdefault("lost", {})[rep.label(sizes)] = s["dut_decap"]["lost"]
            s = t.trial(0, max(1000, pps / 100), seconds, sizes)
            cal["latency_p50_ns"][rep.label(sizes)] = s["dut_decap"]["lat_p50_ns"]
    finally:
        t.stop()
    return cal


def document(results, calibration=None):
    """The report's JSON document: machine, calibration, and per search its
    sizes, directions, the search (mlrsearch.to_dict: every trial) and the
    latency trials."""
    doc = {"machine": machine(), "results": []}
    if calibration:
        doc["calibration"] = calibration
    for r in results:
        d = {"sizes": r["sizes"], "dirs": r["dirs"], "search": mlr.to_dict(r["search"])}
        if r.get("latency"):
            d["latency"] = r["latency"]
        doc["results"].append(d)
    return doc


def size_lists(arg):
    """--sizes: '64,128,imix' -> [[64], [128], IMIX] (each searched alone)."""
    out = []
    for x in arg.split(","):
        if x.strip().lower() == "imix":
            out.append(list(IMIX))
        elif x.strip().isdigit() and 64 <= int(x) <= 1514:
            out.append([int(x)])
        else:
            raise ValueError(f"--sizes: '{x}' is not a frame size 64..1514 or imix")
    return out


def run(a, plan):
    """Calibrate (unless --no-calibrate), then per frame size: the search and
    the latency trials at 10/50/90 % of PDR; returns the document."""
    sizes_all, dirs = size_lists(a.sizes), a.dirs.split(",")
    lcores = ["-l", a.lcores]
    cal = None if a.no_calibrate else calibrate(min(plan.tunnels, 1000), sizes_all,
                                                os.path.join(a.workdir, "cal"), lcores)
    t = Tester(plan, [a.vdev_a, a.vdev_b], a.workdir, lcores, netns=a.netns)
    results, ike = [], {}
    try:
        t.start()
        if a.capacity:
            ike["capacity"] = capacity(t, a.capacity_rate, a.setup_deadline)
        if a.setup_rate:
            ike["setup"] = setup_rate_search(t, min_rate=a.setup_min, max_rate=a.setup_max,
                                             deadline=a.setup_deadline, progress=sys.stderr)
        if plan.psk_file:
            bring_up(t)
        t.trial(1000 if "dut_encap" in dirs else 0, 1000 if "dut_decap" in dirs else 0,
                0.3, [64])                  # neighbours resolved first
        for sizes in sizes_all:
            res = search(t, sizes, dirs, a.preset, a.min_load, a.max_load,
                         progress=sys.stderr, trial=a.trial, duration_sum=a.duration_sum)
            r = {"sizes": sizes, "dirs": dirs, "search": res}
            pdr = res.goals.get("PDR")
            if pdr and pdr.relevant_lower_bound:
                r["latency"] = latency_points(t, sizes, dirs, pdr.relevant_lower_bound)
            ndr = res.goals.get("NDR")
            if a.rekey_rate and "rekey" not in ike and ndr and ndr.relevant_lower_bound:
                ike["rekey"] = {"ndr_pps": ndr.relevant_lower_bound, "frame": rep.label(sizes),
                                "rekeys_per_s": a.rekey_rate,
                                "points": rekey_at_ndr(t, ndr.relevant_lower_bound,
                                                       a.rekey_rate, a.rekey_seconds,
                                                       sizes=sizes, dirs=dirs)}
            results.append(r)
    finally:
        t.stop()
    doc = document(results, cal)
    doc.update(ike)
    return doc


def on_sigterm(*_):
    """SIGTERM (kill, a script's clean-up, timeout(1)) unwinds as Ctrl-C
    does, once: the tester's dataplane and dpvpnd are stopped, not left
    behind; a second SIGTERM (a process group's and then the pid's) would
    otherwise cut that stop short."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(128 + signal.SIGTERM)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="dpvpn-tester", description=__doc__.split("\n")[0])
    ap.add_argument("--tunnels", type=int, default=1)
    ap.add_argument("--cipher", default="aes128-gcm", choices=sorted(KEY_BYTES))
    ap.add_argument("--emit-peer-config", choices=("dpvpn", "xfrm", "swanctl"),
                    help="write the DUT's side of the tunnels to stdout (or -o FILE), "
                         "mode 0600, and exit (the keys are kept in WORKDIR/plan.json "
                         "for the run)")
    ap.add_argument("-o", "--output", metavar="FILE",
                    help="with --emit-peer-config: write the DUT's config to FILE, mode "
                         "0600 (its keys are inline), instead of stdout")
    ap.add_argument("--vdev-a", help="port A (faces the DUT's protected side), a --vdev")
    ap.add_argument("--vdev-b", help="port B (faces the DUT's unprotected side), a --vdev")
    ap.add_argument("--lcores", default="0-1", help="EAL -l (main lcore first)")
    ap.add_argument("--sizes", default="64",
                    help="frame sizes searched one after the other: 64..1514 or imix")
    ap.add_argument("--dirs", default="dut_encap,dut_decap")
    ap.add_argument("--preset", default="csit", choices=sorted(mlr.PRESETS))
    ap.add_argument("--trial", type=float, help="every goal's trial duration [s] "
                    "(default: the preset's)")
    ap.add_argument("--duration-sum", type=float, help="every goal's duration sum [s]")
    ap.add_argument("--netns", help="run the tester in this network namespace")
    ap.add_argument("--min-load", type=float, default=1e4)
    ap.add_argument("--max-load", type=float, default=2e6)
    ap.add_argument("--no-calibrate", action="store_true",
                    help="skip the back-to-back calibration (tester-limited: ?)")
    ap.add_argument("--outer-addresses", metavar="PREFIX",
                    help="an IPv4 prefix: tunnel i's tester side is its address .1 + i "
                         "(the tester's port B holds them all, the DUT routes the prefix "
                         "via the tester), so the DUT sees a peer per tunnel; default: "
                         "every tunnel from the tester's one outer address")
    ap.add_argument("--nat-t-ports", metavar="PORT", type=int,
                    help="ESP in UDP (NAT-T), tunnel i from the tester's UDP port PORT + i "
                         "to the DUT's 4500 (with IKE, IKE from there too)")
    ap.add_argument("--workdir", default="/tmp/dpvpn-tester")
    ap.add_argument("--json", help="write the report's JSON document here")
    ap.add_argument("--plots", metavar="DIR", help="write PNG plots here")
    ap.add_argument("--compare", nargs=2, metavar=("A.json", "B.json"),
                    help="print a before/after table of two reports and exit")
    ap.add_argument("--calibrate-only", action="store_true",
                    help="print the tester's own back-to-back capacity (JSON) and exit")
    ike = ap.add_argument_group("IKEv2 (--ike: every tunnel keyed by IKEv2 with a PSK, "
                                "WORKDIR/ike.psk, the tester initiating)")
    ike.add_argument("--ike", action="store_true")
    ike.add_argument("--ike-auth", choices=("psk", "cert"), default="psk",
                     help="cert: an ECDSA P-256 certificate per tunnel and one for the DUT, "
                          "one CA, made once in WORKDIR/pki-N (auth = pubkey)")
    ike.add_argument("--ike-ra", action="store_true",
                     help="remote access: each tunnel asks for its address (virtual-ip = "
                          "request); the DUT's config is one connection with a pool "
                          "(dpvpn: --ike-auth cert). For set-up measurements "
                          "(perf/ikebench.py): the traffic trials send from 100.64.0.0 + i, "
                          "not the leases")
    ike.add_argument("--setup-rate", action="store_true",
                     help="search the highest tunnel set-up rate with at most 0.1 %% failed")
    ike.add_argument("--setup-min", type=float, default=10.0, help="tunnels/s")
    ike.add_argument("--setup-max", type=float, default=1000.0, help="tunnels/s")
    ike.add_argument("--setup-deadline", type=float, default=3.0,
                     help="a tunnel without traffic both ways this long after its "
                          "initiation has failed [s]")
    ike.add_argument("--capacity", action="store_true",
                     help="how many of the --tunnels the DUT holds at once")
    ike.add_argument("--capacity-rate", type=float, default=100.0,
                     help="tunnels initiated a second for --capacity")
    ike.add_argument("--rekey-rate", type=float, metavar="K",
                     help="after the first size's search: K CHILD_SA rekeys a second at "
                          "50 %% and 90 %% of its NDR, loss and gap per rekey")
    ike.add_argument("--rekey-seconds", type=float, default=10.0)
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, on_sigterm)
    if a.rekey_rate and a.rekey_rate / a.tunnels > 1 / REKEY_GRACE_S:
        ap.error(f"--rekey-rate: {a.rekey_rate}/s over {a.tunnels} tunnels rekeys one "
                 f"more often than every {REKEY_GRACE_S:g} s, while its last rekey's old "
                 f"CHILD_SA is kept: at most {a.tunnels / REKEY_GRACE_S:g}/s")
    if (a.setup_rate or a.capacity or a.rekey_rate) and not a.ike:
        ap.error("--setup-rate, --capacity and --rekey-rate need --ike")
    if a.calibrate_only:
        cal = calibrate(a.tunnels, size_lists(a.sizes), os.path.join(a.workdir, "cal"),
                        ["-l", a.lcores])
        cal["machine"] = machine()
        print(json.dumps(cal, indent=2))
        return 0
    if a.compare:
        docs = []
        for path in a.compare:
            with open(path) as f:
                docs.append(json.load(f))
        print(rep.compare(*docs))
        return 0
    try:
        plan = Plan(a.tunnels, a.cipher, outer_addresses=a.outer_addresses,
                    nat_t_ports=a.nat_t_ports)
    except ValueError as e:
        ap.error(str(e))
    saved = os.path.join(a.workdir, "plan.json")
    os.makedirs(a.workdir, mode=0o700, exist_ok=True)
    if os.path.exists(saved):  # an earlier --emit-peer-config's keys
        plan.load_keys(saved)
    if a.ike:                  # the PSK of an earlier --emit-peer-config --ike, if any
        plan.use_ike(os.path.join(a.workdir, "ike.psk"), reuse=True)
        plan.ike_start = False  # initiated by the run: paced, timed
        if a.ike_auth == "cert":
            plan.use_pki(a.workdir)
        if a.ike_ra:
            plan.use_ra()
    elif a.ike_ra or a.ike_auth != "psk":
        ap.error("--ike-ra and --ike-auth need --ike")
    if a.emit_peer_config:     # the keys are kept for the run that follows
        plan.save(saved)
        if a.ike and a.emit_peer_config == "xfrm":
            ap.error("--emit-peer-config xfrm: static SAs only (no --ike)")
        emit({"dpvpn": plan.dut_config_dpvpn, "xfrm": plan.dut_config_xfrm,
              "swanctl": lambda: plan.dut_config_swanctl(
                  plan.psk_text() if plan.psk_file else None)}
             [a.emit_peer_config](), a.output)
        return 0
    if a.output:
        ap.error("-o/--output goes with --emit-peer-config")
    if not (a.vdev_a and a.vdev_b):
        ap.error("--vdev-a and --vdev-b are required to run")
    doc = run(a, plan)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=2)
    if a.plots:
        rep.plots(doc, a.plots)
    print(rep.markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
