# SPDX-License-Identifier: BSD-3-Clause
"""Live interop with strongSwan: charon negotiates a CHILD_SA, dpvpn takes
over the peer's end of it with the same keys.

    host S     strongSwan gw (netns)              peer gw (netns)                host D
    (netns)    charon #1, kernel-libipsec        charon #2 (phase 1),           (netns)
               (TUN ipsec0, table 220)           dpvpn (phase 2)
    eth0 ==veth== sw-in        sw-out ==veth== pe-out         pe-in ==veth== eth0
    198.18.1.2    198.18.1.1   198.19.0.1      198.19.0.2     198.18.2.1     198.18.2.2
                                               dpvpn port 1   dpvpn port 0
                                               (outside)      (inside)

The kernel here has no ESP, so both charons use the kernel-libipsec plugin:
ESP in userspace over a TUN device (ipsec0, routes in table 220), which
works only with UDP encapsulation (`encap = yes`: IKE floats to 4500 and ESP
goes in UDP 4500 <-> 4500).  Each charon runs in its own netns and its own
mount namespace (its /run, pid file and vici socket, are a directory of the
lab's); swanctl reaches it through that socket's real path.

Phase 1 (SwanLab.negotiate): both charons up, charon #1 initiates the
CHILD_SA (PSK, DPD off, no automatic rekeying, no keepalives); its SPIs and
keys are read from charon #1's filelog (`chd = 4`) and checked against
`swanctl --list-sas` and charon #2's log; a ping S -> D through it, captured
on the outer link, must decrypt with those keys (tshark).  Then charon #1
rekeys: the new CHILD_SA, parsed the same way, has carried no packet yet, so
dpvpn's sequence numbers, which start at 1, pass charon #1's replay window.

Phase 2 (SwanLab.release_peer, SwanLab.start_dpvpn): charon #2 is killed
with SIGKILL, so it sends no DELETE and charon #1 (DPD off) keeps its
CHILD_SA; the peer netns loses every kernel address and route, and a dpvpn
gateway (tests/helpers/lab.py Gateway) drives pe-in (port 0) and pe-out (port 1)
with net_af_packet, configured with the static SAs of SwanSA.dpvpn_config().

Every wait is bounded; SwanLab.close() kills every process and removes every
namespace and the work directory (kept if DPVPN_KEEP_LAB is set), even after
a failure.  Run by hand: `python3 tests/helpers/swan.py [PROPOSAL]` (phase 1 and 2,
ping both ways).
"""
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab import HOST_MTU, Gateway, Managed, Proc, sh, wait_for  # noqa: E402

CHARON = "/usr/lib/ipsec/charon"
SWANCTL = "/usr/sbin/swanctl"
LIBIPSEC = "/usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so"
PACKAGES = ["strongswan-charon", "strongswan-swanctl", "libcharon-extra-plugins",
            "libstrongswan-standard-plugins", "iperf3"]
NS_PREFIX = "dpsw-"

SWAN_OUT, PEER_OUT = "198.19.0.1", "198.19.0.2"
SWAN_NET, PEER_NET = "198.18.1.0/24", "198.18.2.0/24"
SWAN_GW_IN, PEER_GW_IN = "198.18.1.1", "198.18.2.1"
HOST_S, HOST_D = "198.18.1.2", "198.18.2.2"
NATT_PORT = 4500
IKE_PROPOSAL = "aes128gcm16-prfsha256-ecp256"
PSK = "dpvpn-strongswan-lab-psk-" + "0123456789abcdef"   # a lab secret, never used elsewhere

# ESP algorithms as `swanctl --list-sas` names them -> dpvpn's cipher name,
# and whether dpvpn's key carries a separate authentication key.
DPVPN_CIPHERS = {
    "AES_GCM_16-128": ("aes128-gcm", False),
    "AES_GCM_16-256": ("aes256-gcm", False),
    "AES_CBC-128/HMAC_SHA2_256_128": ("aes128-cbc-sha256", True),
    "AES_CBC-256/HMAC_SHA2_256_128": ("aes256-cbc-sha256", True),
    "AES_CBC-128/HMAC_SHA1_96": ("aes128-cbc-sha1", True),
    "AES_CBC-256/HMAC_SHA1_96": ("aes256-cbc-sha1", True),
    "CHACHA20_POLY1305-256": ("chacha20-poly1305", False),
    "CHACHA20_POLY1305": ("chacha20-poly1305", False),
    "NULL/HMAC_SHA2_256_128": ("null-sha256", True),
}

# --- parsing charon's log -------------------------------------------------
# filelog prefixes every line of a message with the thread and the group:
#   "12[CHD] CHILD_SA net{1} state change: CREATED => INSTALLING"
#   "12[CHD]   using AES_CBC for encryption"
#   "12[CHD] encryption initiator key => 32 bytes @ 0x7f233c0027a0"
#   "12[CHD]    0: 7C 84 68 A5 E4 73 F9 56 D6 D5 B5 86 66 FE 64 E8  |.h..s.V....f.d."
#   "12[CHD]   16: 44 10 9E 56 C3 61 32 06 86 51 81 57 A5 CC 44 0B  D..V.a2..Q.W..D."
#   "12[CHD] encryption responder key => 32 bytes @ ..."   then "integrity initiator key",
#   "integrity responder key" (not for AEAD), "adding inbound ESP SA", and
#   "12[IKE] CHILD_SA net{1} established with SPIs d532b0dc_i d874bb51_o and TS ..."
#   ("inbound CHILD_SA net{2} established ..." and "outbound ..." after a rekey).
RE_INSTALLING = re.compile(r"CHILD_SA (\S+)\{(\d+)\} state change: CREATED => INSTALLING")
RE_KEY_HEAD = re.compile(
    r"\[CHD\] (encryption|integrity) (initiator|responder) key => (\d+) bytes")
RE_HEXDUMP = re.compile(r"\[CHD\]\s+\d+: ((?:[0-9A-F]{2} ){0,15}[0-9A-F]{2})")
RE_ESTABLISHED = re.compile(r"(?:inbound |outbound )?CHILD_SA (\S+)\{(\d+)\} "
                            r"established with SPIs ([0-9a-f]{8})_i ([0-9a-f]{8})_o")
# swanctl --list-sas, one block per CHILD_SA:
#   "  net: #2, reqid 1, INSTALLED, TUNNEL-in-UDP, ESP:AES_CBC-256/HMAC_SHA2_256_128"
#   "    installed 1s ago"
#   "    in  31591989,      0 bytes,     0 packets"
#   "    out f4c6ac5c,      0 bytes,     0 packets"
RE_LIST_CHILD = re.compile(
    r"^  (\S+): #(\d+), reqid \d+, (\S+), (\S+), ESP:(\S+)\n(?:    .*\n)*?"
    r"    in  ([0-9a-f]{8}),.*\n    out ([0-9a-f]{8}),", re.M)


def parse_child(log):
    """The last CHILD_SA a charon established, from its log (chd = 4):
    {"name", "uid", "spi_in", "spi_out", "keys"}, keys as
    {("encryption"|"integrity", "initiator"|"responder"): bytes}; None if none."""
    found = list(RE_ESTABLISHED.finditer(log))
    if not found:
        return None
    est = found[-1]
    name, uid = est.group(1), est.group(2)
    begin = [m.start() for m in RE_INSTALLING.finditer(log, 0, est.start())
             if m.group(1) == name and m.group(2) == uid]
    keys, cur, want = {}, None, 0
    for line in log[begin[-1] if begin else 0:est.start()].splitlines():
        m = RE_KEY_HEAD.search(line)
        if m:
            cur, want = (m.group(1), m.group(2)), int(m.group(3))
            keys[cur] = b""
            continue
        m = RE_HEXDUMP.search(line)
        if cur and m and len(keys[cur]) < want:
            keys[cur] += bytes.fromhex(m.group(1).replace(" ", ""))
        else:
            cur = None
    return {"name": name, "uid": int(uid), "spi_in": int(est.group(3), 16),
            "spi_out": int(est.group(4), 16), "keys": keys}


def parse_list_sas(text):
    """swanctl --list-sas: {uid: (state, mode, algorithm, spi_in, spi_out)}."""
    return {int(m.group(2)): (m.group(3), m.group(4), m.group(5), int(m.group(6), 16),
                              int(m.group(7), 16))
            for m in RE_LIST_CHILD.finditer(text)}


# --- the result -------------------------------------------------------------
@dataclass
class SwanSA:
    """The CHILD_SA charon #1 negotiated, from the peer's (dpvpn's) side.

    out: peer -> strongSwan (charon #1's inbound SA); in: strongSwan -> peer.
    Keys are hex strings without 0x: for AEAD, the cipher key followed by the
    4-byte salt as charon logs it; auth keys are None for AEAD."""
    proposal: str              # the esp_proposals given to swanctl
    algorithm: str             # as swanctl --list-sas names it, e.g. AES_GCM_16-128
    cipher: str                # dpvpn's cipher name
    spi_out: int
    spi_in: int
    key_out: str
    key_in: str
    auth_key_out: str = None
    auth_key_in: str = None
    local: str = PEER_OUT      # peer's outer address
    remote: str = SWAN_OUT
    local_ts: str = PEER_NET
    remote_ts: str = SWAN_NET
    local_port: int = NATT_PORT
    remote_port: int = NATT_PORT
    uid: int = 0               # charon #1's CHILD_SA unique id
    keys: dict = field(default_factory=dict, repr=False)   # as logged

    def dpvpn_tunnel(self, name="to-swan"):
        lines = [f"[tunnel {name}]",
                 f"local = {self.local}", f"remote = {self.remote}",
                 f"local-ts = {self.local_ts}", f"remote-ts = {self.remote_ts}",
                 f"cipher = {self.cipher}",
                 f"out-spi = 0x{self.spi_out:08x}"]
        if self.key_out:
            lines.append(f"out-key = 0x{self.key_out}")
        if self.auth_key_out:
            lines.append(f"out-auth-key = 0x{self.auth_key_out}")
        lines.append(f"in-spi = 0x{self.spi_in:08x}")
        if self.key_in:
            lines.append(f"in-key = 0x{self.key_in}")
        if self.auth_key_in:
            lines.append(f"in-auth-key = 0x{self.auth_key_in}")
        lines += ["encap = udp", f"local-port = {self.local_port}",
                  f"remote-port = {self.remote_port}"]
        return "\n".join(lines) + "\n"

    def dpvpn_config(self):
        """A whole dpvpn.conf for the peer gateway (ports as in lab-b.conf);
        the sockets are given to dpvpnd on its command line (-D/-s)."""
        return ("; dpvpn.conf for the peer of strongSwan (tests/helpers/swan.py): keys of a\n"
                "; CHILD_SA charon negotiated a moment ago.\n\n"
                "[port inside]\nid = 0\nrole = inside\n"
                f"address = {PEER_GW_IN}/24\n\n"
                "[port outside]\nid = 1\nrole = outside\n"
                f"address = {self.local}/24\n\n" + self.dpvpn_tunnel())

    def write_dpvpn_config(self, path):
        write_file(path, self.dpvpn_config(), 0o600)
        return path


def sa_from_logs(proposal, log, listing):
    """The SwanSA of the last CHILD_SA in charon #1's log, checked against its
    `swanctl --list-sas`.  Charon #1 initiates every exchange (IKE_AUTH and
    rekeying), so the initiator's keys protect strongSwan -> peer: the
    peer's inbound SA, whose SPI is charon #1's outbound one (_o).
    Raises ValueError when something does not add up."""
    child = parse_child(log)
    if not child:
        raise ValueError("no CHILD_SA established in charon's log")
    listed = parse_list_sas(listing).get(child["uid"])
    if not listed:
        raise ValueError(f"CHILD_SA #{child['uid']} not in swanctl --list-sas:\n{listing}")
    state, mode, alg, spi_in, spi_out = listed
    if state != "INSTALLED" or mode != "TUNNEL-in-UDP":
        raise ValueError(f"CHILD_SA is {state} {mode}, want INSTALLED TUNNEL-in-UDP")
    if (spi_in, spi_out) != (child["spi_in"], child["spi_out"]):
        raise ValueError(f"SPIs differ: log {child}, list-sas {listed}")
    if alg not in DPVPN_CIPHERS:
        raise ValueError(f"no dpvpn cipher for ESP algorithm {alg}")
    cipher, has_auth = DPVPN_CIPHERS[alg]
    keys = child["keys"]
    need = [("integrity", "initiator"), ("integrity", "responder")] if has_auth else []
    if not cipher.startswith("null"):
        need += [("encryption", "initiator"), ("encryption", "responder")]
    for k in need:
        if not keys.get(k):
            raise ValueError(f"{' '.join(k)} key missing in the log (chd = 4?)")

    def hx(k):
        return keys[k].hex() if k in need else None
    return SwanSA(proposal=proposal, algorithm=alg, cipher=cipher,
                  spi_out=spi_in, spi_in=spi_out,
                  key_out=hx(("encryption", "responder")),
                  key_in=hx(("encryption", "initiator")),
                  auth_key_out=hx(("integrity", "responder")),
                  auth_key_in=hx(("integrity", "initiator")),
                  uid=child["uid"], keys=keys)


# tshark's names (ESP SA table) for the algorithms that it can check
TSHARK_ENC = {"aes128-gcm": "AES-GCM with 16 octet ICV [RFC4106]",
              "aes256-gcm": "AES-GCM with 16 octet ICV [RFC4106]",
              "aes128-cbc-sha256": "AES-CBC [RFC3602]", "aes256-cbc-sha256": "AES-CBC [RFC3602]",
              "aes128-cbc-sha1": "AES-CBC [RFC3602]", "aes256-cbc-sha1": "AES-CBC [RFC3602]",
              "null-sha256": "NULL"}
TSHARK_AUTH = {"sha256": "HMAC-SHA-256-128 [RFC4868]", "sha1": "HMAC-SHA-1-96 [RFC2404]"}


def tshark_esp(pcap, sa):
    """Decode the ESP (in UDP) of a capture with the SwanSA's keys; one dict
    per ESP packet: spi, icv_good ("1" when checked and right), inner src/dst."""
    args = ["tshark", "-r", pcap, "-o", "esp.enable_encryption_decode:TRUE",
            "-o", "esp.enable_authentication_check:TRUE"]
    auth = TSHARK_AUTH.get(sa.cipher.rsplit("-", 1)[-1], "NULL")
    for src, dst, spi, key, akey in (
            (sa.remote, sa.local, sa.spi_in, sa.key_in, sa.auth_key_in),
            (sa.local, sa.remote, sa.spi_out, sa.key_out, sa.auth_key_out)):
        args += ["-o", f'uat:esp_sa:"IPv4","{src}","{dst}","0x{spi:08x}",'
                       f'"{TSHARK_ENC[sa.cipher]}","{"0x" + key if key else ""}",'
                       f'"{auth}","{"0x" + akey if akey else ""}"']
    r = sh(*args, "-Y", "esp", "-T", "fields", "-e", "esp.spi", "-e", "esp.icv_good",
           "-e", "ip.src", "-e", "ip.dst", "-E", "separator=;", timeout=60)
    rows = []
    for line in r.stdout.splitlines():
        spi, good, src, dst = line.split(";")
        rows.append({"spi": int(spi, 16), "icv_good": good,
                     "inner": (src.split(",")[-1], dst.split(",")[-1])})
    return rows


# --- availability -------------------------------------------------------------
def missing():
    """None when charon, swanctl, kernel-libipsec and iperf3 are here, else why not."""
    for path in (CHARON, SWANCTL, LIBIPSEC, shutil.which("iperf3") or "iperf3"):
        if not os.access(path, os.R_OK):
            return f"{path} is missing (Debian packages: {' '.join(PACKAGES)})"
    return None


def ensure_installed(timeout=180):
    """missing(), after one bounded `apt-get install` try where something is."""
    why = missing()
    if why is None or not shutil.which("apt-get") or os.environ.get("DPVPN_NO_APT"):
        return why
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                        *PACKAGES], env=env, capture_output=True, timeout=timeout)
    except (subprocess.TimeoutExpired, OSError) as e:
        return f"{why}; apt-get install failed: {e}"
    return missing()


# --- strongSwan's configuration ----------------------------------------------
# The one builder of charon's configuration for the tests: strongswan.conf
# and swanctl.conf as trees of dicts (Charon.strongswan, Charon.swanctl_conf),
# which a test changes (or replaces) before Charon.write_config().
SWANCTL_PLUGINS = "random nonce openssl pem pkcs1 x509 pubkey"
SWANCTL_PLUGINS_PKCS8 = "random nonce openssl pem pkcs1 pkcs8 x509 pubkey"   # a key file


def settings_text(tree, depth=0):
    """strongSwan's settings syntax of a tree, in order: a dict is a section,
    a list of dicts the same section written again for each, anything else
    `key = value` (`include value` for the key include; None: left out).  A
    section's settings come before its subsections, so that a setting added
    to a section stands with the others."""
    pad = "    " * depth
    out = []
    for key, value in sorted(tree.items(), key=lambda kv: isinstance(kv[1], (dict, list))):
        if value is None:
            continue
        if isinstance(value, (dict, list)):
            for section in value if isinstance(value, list) else [value]:
                out.append(f"{pad}{key} {{\n{settings_text(section, depth + 1)}{pad}}}\n")
        else:
            out.append(f"{pad}{key} {value}\n" if key == "include" else f"{pad}{key} = {value}\n")
    return "".join(out)


def strongswan_conf(rundir):
    """strongswan.conf of one charon of the lab, its files in rundir: its
    plugins with kernel-libipsec (ESP in userspace), its vici socket, a
    filelog with the CHILD_SA keys (chd = 4, what parse_child reads), no
    virtual IP installed, no keepalives, 3 retransmissions; swanctl's plugins."""
    return {
        "charon": {
            "load_modular": "yes", "install_virtual_ip": "no", "keep_alive": "0s",
            "retransmit_tries": 3,
            "plugins": [{"include": "/etc/strongswan.d/charon/*.conf"},
                        {"kernel-libipsec": {"load": "yes"},
                         "vici": {"socket": f"unix://{rundir}/run/charon.vici"}}],
            "filelog": {"swan": {"path": f"{rundir}/charon.log", "append": "no",
                                 "flush_line": "yes", "default": 1, "ike": 2, "chd": 4,
                                 "knl": 2}},
            "syslog": {},
        },
        "swanctl": {"load": SWANCTL_PLUGINS},
    }


def child(local_ts=None, remote_ts=None, esp="aes128gcm16"):
    """A CHILD_SA of swanctl.conf: tunnel mode, never rekeyed or expired by
    charon (time, bytes, packets), nothing done at DPD, close or load;
    a traffic selector left out (None) is charon's default (dynamic)."""
    return {"mode": "tunnel", "local_ts": local_ts, "remote_ts": remote_ts,
            "esp_proposals": esp, "rekey_time": "0s", "life_time": "0s",
            "rekey_bytes": 0, "rekey_packets": 0, "dpd_action": "none",
            "close_action": "none", "start_action": "none"}


def swanctl_conf(name, local_id, remote_id, children, local_addrs=None, remote_addrs=None,
                 vips=None, cert=None, psk=None, ike=None):
    """swanctl.conf with one IKEv2 connection, name: UDP encapsulation (as
    kernel-libipsec needs), no MOBIKE, no DPD, no IKE rekeying or
    reauthentication, proposals ike (None: IKE_PROPOSAL, read now: tests
    patch it).  Authentication by psk (a secret for the two identities) or by
    certificates: cert, charon's own (a file of swanctl/x509, always sent).
    children: {name: child(...)}; vips: the virtual IP charon asks for."""
    auth = "pubkey" if cert else "psk"
    tree = {"connections": {name: {
        "version": 2, "local_addrs": local_addrs, "remote_addrs": remote_addrs,
        "vips": vips, "encap": "yes", "mobike": "no", "dpd_delay": "0s",
        "rekey_time": "0s", "reauth_time": "0s", "proposals": ike or IKE_PROPOSAL,
        "send_cert": "always" if cert else None,
        "local": {"auth": auth, "certs": cert, "id": local_id},
        "remote": {"auth": auth, "id": remote_id},
        "children": children}}}
    if psk is not None:
        tree["secrets"] = {f"ike-{name}": {"id-a": local_id, "id-b": remote_id,
                                           "secret": f'"{psk}"'}}
    return tree


def write_file(path, data, mode=0o644):
    """data (str or bytes) into path, created with mode (umask applies)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


# --- the lab --------------------------------------------------------------------
class Charon:
    """One charon in a netns and a mount namespace of its own."""

    def __init__(self, name, netns, workdir, local, remote, local_ts, remote_ts, esp):
        self.name = name
        self.netns = netns
        self.dir = os.path.join(workdir, name)
        os.makedirs(os.path.join(self.dir, "run"), mode=0o700)
        os.makedirs(os.path.join(self.dir, "swanctl"), mode=0o700)
        self.conf = os.path.join(self.dir, "strongswan.conf")
        self.log = os.path.join(self.dir, "charon.log")
        self.vici = f"unix://{self.dir}/run/charon.vici"
        self.strongswan = strongswan_conf(self.dir)
        self.swanctl_conf = swanctl_conf(
            "dpsw", local, remote, {"net": child(local_ts, remote_ts, esp)},
            local_addrs=local, remote_addrs=remote, psk=PSK)
        self.write_config()
        self.proc = None

    def write_config(self):
        """strongswan.conf and swanctl/swanctl.conf (0600: a PSK) of the trees
        self.strongswan and self.swanctl_conf, which a test may change first."""
        write_file(self.conf, "# strongswan.conf of one charon of tests/helpers/swan.py\n" +
                   settings_text(self.strongswan), 0o666)
        write_file(os.path.join(self.dir, "swanctl", "swanctl.conf"),
                   settings_text(self.swanctl_conf), 0o600)

    def add_credentials(self, cert, key, cas):
        """charon's certificate (swanctl/x509/swan.pem, for swanctl_conf's
        cert="swan.pem"), its private key (swanctl/pkcs8/swan.key, 0600:
        swanctl then loads its pkcs8 plugin) and the CA certificates cas
        ({file name: PEM}, swanctl/x509ca); PEM as bytes."""
        d = os.path.join(self.dir, "swanctl")
        for sub in ("x509", "x509ca", "pkcs8"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        write_file(os.path.join(d, "x509", "swan.pem"), cert)
        for name, data in cas.items():
            write_file(os.path.join(d, "x509ca", name), data)
        write_file(os.path.join(d, "pkcs8", "swan.key"), key, 0o600)
        self.strongswan["swanctl"]["load"] = SWANCTL_PLUGINS_PKCS8

    def start(self, timeout=20):
        # unshare -m: private mounts; /run is then this charon's own directory
        # (pid file), and /etc/resolv.conf a copy of its own: its resolve plugin
        # writes the DNS servers a gateway hands out there ([ops] issue 27: it
        # wrote into the host's, `ip netns exec` shares /etc).  `exec` keeps the
        # pid so that kill() reaches charon itself.
        resolv = os.path.join(self.dir, "resolv.conf")
        shutil.copyfile("/etc/resolv.conf", resolv)
        script = (f"mount --bind {self.dir}/run /run && "
                  f"mount --bind {resolv} /etc/resolv.conf && "
                  f"exec env STRONGSWAN_CONF={self.conf} {CHARON}")
        self.proc = Proc(self.name, ["unshare", "-m", "--propagation", "private",
                                     "sh", "-c", script], self.dir, self.netns)
        sock = os.path.join(self.dir, "run", "charon.vici")
        wait_for(lambda: os.path.exists(sock) or not self.proc.alive(), timeout,
                 f"{self.name} vici socket")
        if not self.proc.alive():
            raise RuntimeError(f"{self.name} exited:\n{self.proc.output()}\n{self.log_text()}")
        self.swanctl("--load-all", "--noprompt")

    def swanctl(self, *args, timeout=30, check=True):
        env = dict(os.environ, STRONGSWAN_CONF=self.conf,
                   SWANCTL_DIR=os.path.join(self.dir, "swanctl"))
        r = subprocess.run([SWANCTL, *args, "--uri", self.vici], env=env, text=True,
                           capture_output=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"swanctl {' '.join(args)} ({self.name}): rc {r.returncode}\n"
                               f"{r.stdout}\n{r.stderr[-3000:]}\n"
                               f"--- log\n{self.log_text()[-5000:]}")
        return r.stdout

    def log_text(self):
        try:
            with open(self.log) as f:
                return f.read()
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.alive()

    def kill(self):
        """SIGKILL: charon sends nothing, not even a DELETE."""
        if self.alive():
            os.kill(self.proc.p.pid, signal.SIGKILL)
            self.proc.p.wait(10)

    def stop(self):
        if self.proc:
            self.proc.stop(timeout=5)


class SwanLab(Managed):
    """host S == strongSwan == peer (charon #2, then dpvpn) == host D."""

    def __init__(self, proposal="aes128gcm16"):
        self.proposal = proposal
        self.tag = secrets.token_hex(2)
        self.ns_s, self.ns_sw, self.ns_pe, self.ns_d = (
            f"{NS_PREFIX}{self.tag}-{x}" for x in ("s", "sw", "pe", "d"))
        self.namespaces = [self.ns_s, self.ns_sw, self.ns_pe, self.ns_d]
        self.workdir = tempfile.mkdtemp(prefix="dpvpn-swan-")
        self.procs = []
        self.gw = None
        self.sa = None
        self.verified = None
        self.swan = self.peer = None

    def open(self):
        self.swan = Charon("charon-swan", self.ns_sw, self.workdir, SWAN_OUT, PEER_OUT,
                           SWAN_NET, PEER_NET, self.proposal)
        self.peer = Charon("charon-peer", self.ns_pe, self.workdir, PEER_OUT, SWAN_OUT,
                           PEER_NET, SWAN_NET, self.proposal)
        self._net()

    def ip(self, ns, *args, **kw):
        return sh("ip", "-n", ns, *args, **kw)

    def ns(self, ns, *args, **kw):
        return sh("ip", "netns", "exec", ns, *args, **kw)

    def _quiet(self, ns, dev):
        self.ns(ns, "ethtool", "-K", dev, "tx", "off", "tso", "off", "gso", "off",
                "gro", "off", check=False)
        self.ns(ns, "sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1", check=False)

    def _net(self):
        for n in self.namespaces:
            sh("ip", "netns", "add", n)
            self.ip(n, "link", "set", "lo", "up")
        sw, pe = self.ns_sw, self.ns_pe
        self.ip(sw, "link", "add", "sw-in", "type", "veth", "peer", "name", "eth0",
                "netns", self.ns_s)
        self.ip(pe, "link", "add", "pe-in", "type", "veth", "peer", "name", "eth0",
                "netns", self.ns_d)
        self.ip(sw, "link", "add", "sw-out", "type", "veth", "peer", "name", "pe-out",
                "netns", pe)
        for ns, dev in ((sw, "sw-in"), (sw, "sw-out"), (pe, "pe-in"), (pe, "pe-out")):
            self._quiet(ns, dev)
            if dev.endswith("-in"):
                self.ip(ns, "link", "set", dev, "mtu", str(HOST_MTU))
            self.ip(ns, "link", "set", dev, "up")
        for ns, net in ((self.ns_s, 1), (self.ns_d, 2)):
            self._quiet(ns, "eth0")
            self.ip(ns, "link", "set", "eth0", "mtu", str(HOST_MTU), "up")
            self.ip(ns, "addr", "add", f"198.18.{net}.2/24", "dev", "eth0")
            self.ip(ns, "route", "add", "default", "via", f"198.18.{net}.1")
        for ns, gw_in, out in ((sw, SWAN_GW_IN, SWAN_OUT), (pe, PEER_GW_IN, PEER_OUT)):
            pfx = "sw" if ns == sw else "pe"
            self.ip(ns, "addr", "add", f"{gw_in}/24", "dev", f"{pfx}-in")
            self.ip(ns, "addr", "add", f"{out}/24", "dev", f"{pfx}-out")
            self.ns(ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
            self.ns(ns, "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0")
            self.ns(ns, "sysctl", "-qw", "net.ipv4.conf.default.rp_filter=0")

    # --- phase 1 ------------------------------------------------------------
    def negotiate(self, timeout=20):
        """Phase 1: both charons up, charon #1 initiates the CHILD_SA; a ping
        from S to D through it, captured on the outer link, must decrypt with
        the keys read from the log.  Then charon #1 rekeys the CHILD_SA: the
        new one, which no packet has used yet (charon #1's anti-replay window
        would otherwise drop dpvpn's first packets, as dpvpn's sequence
        numbers start at 1 again), is the one returned and handed to dpvpn."""
        self.swan.start()
        self.peer.start()
        out = self.swan.swanctl("--initiate", "--child", "net", "--timeout", str(timeout),
                                timeout=timeout + 10)
        if "initiate completed successfully" not in out:
            raise RuntimeError(f"initiate failed:\n{out}\n{self.swan.log_text()[-5000:]}")
        first = self._installed(None)
        for ns in (self.ns_sw, self.ns_pe):       # kernel-libipsec's route into ipsec0
            wait_for(lambda ns=ns: "ipsec0" in self.ip(ns, "route", "show", "table", "220",
                                                       check=False).stdout,
                     10, f"table 220 route in {ns}")
        self.verified = self._verify(first)
        self.swan.swanctl("--rekey", "--child", "net", timeout=timeout)
        self.sa = self._installed(first.uid)
        return self.sa

    def _installed(self, old_uid, timeout=10):
        """Wait for charon #1's newest CHILD_SA (not old_uid) to be installed,
        alone; returns its SwanSA, checked against charon #2's log."""
        state = {}

        def ready():
            state["list"] = self.swan.swanctl("--list-sas")
            sas = parse_list_sas(state["list"])
            live = [u for u, v in sas.items() if v[0] in ("INSTALLED", "REKEYING", "REKEYED")]
            return len(live) == 1 and live[0] != old_uid and sas[live[0]][0] == "INSTALLED"
        wait_for(ready, timeout, "CHILD_SA installed", interval=0.2)
        sa = sa_from_logs(self.proposal, self.swan.log_text(), state["list"])
        # charon #2, the responder, logged the mirror SPIs and the same keys
        peer = None
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            peer = parse_child(self.peer.log_text())
            if peer and (peer["spi_in"], peer["spi_out"]) == (sa.spi_in, sa.spi_out):
                break
            time.sleep(0.1)
        else:
            raise ValueError(f"charon #2's last CHILD_SA {peer} is not the mirror of {sa}")
        if peer["keys"] != sa.keys:
            raise ValueError("charon #2 logged other keys than charon #1")
        return sa

    def _verify(self, sa, count=3):
        """Ping S -> D swan to swan; every ESP packet of it on the outer link
        must decrypt, in both directions, with the keys read from the log."""
        cap, pcap = self.capture(self.ns_sw, "sw-out", f"verify-{sa.uid}")
        r = self.ping("s", count=count)
        time.sleep(0.3)
        cap.stop(timeout=5)
        if f"{count} received" not in r.stdout:
            raise RuntimeError(f"strongSwan to strongSwan ping failed:\n{r.stdout}{r.stderr}")
        rows = tshark_esp(pcap, sa) if sa.cipher in TSHARK_ENC else []
        if sa.cipher in TSHARK_ENC:
            want = {(sa.spi_in, (HOST_S, HOST_D)), (sa.spi_out, (HOST_D, HOST_S))}
            got = {(x["spi"], x["inner"]) for x in rows}
            bad = [x for x in rows if x["icv_good"] != "1"]
            if len(rows) < 2 * count or bad or got != want:
                raise ValueError(f"tshark with the logged keys: {rows}")
        return {"ping": r.stdout, "esp": rows}

    # --- phase 2 ------------------------------------------------------------
    def release_peer(self):
        """SIGKILL charon #2 and strip the peer netns bare for dpvpn."""
        self.peer.kill()
        pe = self.ns_pe
        # ipsec0 goes with charon's fd; what charon left in the tables goes now
        wait_for(lambda: "ipsec0" not in self.ip(pe, "link", "show", check=False).stdout,
                 10, "charon #2's ipsec0 gone")
        self.ns(pe, "sysctl", "-qw", "net.ipv4.ip_forward=0")
        for dev in ("pe-in", "pe-out"):
            self.ip(pe, "addr", "flush", "dev", dev)
        self.ip(pe, "route", "flush", "table", "220", check=False)
        for _ in range(10):
            if self.ip(pe, "rule", "del", "table", "220", check=False).returncode:
                break
        # charon #1 still has its CHILD_SA: nothing told it otherwise
        listing = self.swan.swanctl("--list-sas")
        got = parse_list_sas(listing).get(self.sa.uid)
        if not got or got[0] != "INSTALLED" or got[3:] != (self.sa.spi_out, self.sa.spi_in):
            raise RuntimeError(f"charon #1 lost its CHILD_SA:\n{listing}")

    def start_dpvpn(self, extra_config=""):
        """A dpvpn gateway in the peer netns with the negotiated SAs."""
        cfg = self.sa.write_dpvpn_config(os.path.join(self.workdir, "peer.conf"))
        self.gw = Gateway("gw-peer", cfg,
                          ["net_af_packet0,iface=pe-in",
                           "net_af_packet1,iface=pe-out,qdisc_bypass=0"],
                          self.workdir, ["-l", "0-1", "--main-lcore", "0"], self.ns_pe,
                          extra_config=extra_config)
        self.gw.start()
        return self.gw

    # --- traffic --------------------------------------------------------------
    def _host(self, side):
        return (self.ns_s, HOST_D) if side == "s" else (self.ns_d, HOST_S)

    def ping(self, src="s", count=5, timeout=20):
        """ping from host S ("s") to host D, or from D ("d") to S."""
        ns, dst = self._host(src)
        return self.ns(ns, "ping", "-c", str(count), "-i", "0.2", "-W", "2", dst,
                       check=False, timeout=timeout)

    def bg(self, name, ns, *argv):
        p = Proc(name, list(argv), self.workdir, ns)
        self.procs.append(p)
        return p

    def iperf(self, client="s", seconds=3):
        """iperf3 TCP from host S to D ("s") or from D to S ("d"); parsed JSON."""
        ns, dst = self._host(client)
        srv_ns = self.ns_d if client == "s" else self.ns_s
        srv = self.bg(f"iperf3-server-{client}", srv_ns, "iperf3", "-s", "-1", "-B", dst)
        wait_for(lambda: ":5201" in self.ns(srv_ns, "ss", "-ltn", check=False).stdout,
                 10, "iperf3 server")
        r = self.ns(ns, "iperf3", "-c", dst, "-t", str(seconds), "-J", "--connect-timeout",
                    "5000", check=False, timeout=seconds + 25)
        srv.stop(timeout=5)
        if r.returncode != 0:
            raise RuntimeError(f"iperf3 {client}: {r.stdout[-2000:]} {r.stderr[-2000:]}")
        return json.loads(r.stdout)

    def capture(self, ns, dev, name):
        path = os.path.join(self.workdir, f"{name}.pcap")
        p = self.bg("tcpdump-" + name, ns, "tcpdump", "-i", dev, "--immediate-mode",
                    "-U", "-w", path)
        wait_for(lambda: "listening" in p.output(), 10, "tcpdump")
        return p, path

    def close(self):
        stops = [lambda p=p: p.stop(timeout=5) for p in self.procs]
        stops += [c.stop for c in (self.gw, self.peer, self.swan) if c]
        for stop in stops:
            try:
                stop()
            except Exception as e:      # keep cleaning up
                print(f"swan: close: {e!r}", file=sys.stderr)
        for n in self.namespaces:
            sh("ip", "netns", "del", n, check=False)
        if os.environ.get("DPVPN_KEEP_LAB"):
            print(f"swan: kept {self.workdir}")
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)


def main(argv):
    """By hand: phase 1 and 2 for one proposal, ping both ways, dpvpn's view."""
    proposal = argv[0] if argv else "aes128gcm16"
    why = missing()
    if why:
        sys.exit(f"swan: {why}")
    with SwanLab(proposal) as sw:
        t = time.monotonic()
        sa = sw.negotiate()
        print(f"swan: phase 1 in {time.monotonic() - t:.1f}s; strongSwan to strongSwan:")
        print(sw.verified["ping"])
        print(f"swan: tshark decrypted {len(sw.verified['esp'])} ESP packets of it with the "
              f"logged keys; after the rekey: {sa}")
        sw.release_peer()
        print(sa.dpvpn_config())
        sw.start_dpvpn()
        ok = True
        for side in ("s", "d"):
            sw.ping(side, count=2)          # ARP on dpvpn's ports
            r = sw.ping(side, count=5)
            print(r.stdout)
            ok = ok and r.returncode == 0
        print(sw.gw.ctl_text("show", "sa"))
        print(sw.gw.ctl_text("show", "counters"))
        if not ok:
            sys.exit("swan: FAILED: ping through strongSwan and dpvpn")
    print("swan: OK")


if __name__ == "__main__":
    main(sys.argv[1:])
