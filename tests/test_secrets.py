# SPDX-License-Identifier: BSD-3-Clause
"""Secrets: no key or salt byte in any log, CLI output or JSON; loose
permissions refused; nobody but root changes state or traces.

The lab runs twice, once with AES-128-GCM (key + salt) and once with
AES-256-CBC + HMAC-SHA-256 (cipher key + auth key), every key and salt drawn
at random for the run, gateway A's keys written inline (upper-case hex) and
gateway B's in key files (or the other way round), and everything at its most
verbose: the dataplanes with EAL --log-level '*:debug' and --log-level 8
(every DPDK log type and dpvpn.ctl, which logs each control message), both
dpvpnd with -v (every change sent to the dataplane, every operator request).
Traffic (ping, iperf3), every dpvpnctl command that shows state (tables and
--json, monitor), the Prometheus endpoint, every DPDK telemetry command,
traces at all four points, `dpvpnd -n`, a reload, a rekey (new keys in both
configs, reloaded), configs with broken keys (refused), tunnel down/up, the
dataplane killed -9 (dpvpnd installs again) and dpvpnd killed -9 (a new one
reconciles).  Then every log, output, JSON, trace and state file, and the
writable memory of each dpvpnd, is scanned for every key, salt and auth key
of the run, old and new: hex (either case, bare or with ':', ' ', '-', ','
separators, \\x or 0x escapes, byte-swapped), base64 at every alignment,
decimal lists and the raw bytes.  Every 8-byte window of a secret is looked
for, and the whole of a 4-byte salt.  test_scanner_finds_planted_keys proves
the scanner finds what it is meant to find.

Permissions: configs and key files with loose modes, foreign owners, a
symlink to a loose file or a FIFO are refused at start (dpvpnd and dpvpnd
-n) and at reload (dpvpnctl reload, SIGHUP, tunnel up), naming the file and
why, with the running SAs kept.  Non-root: the lab directories are made
traversable and the sockets even world-writable, so that what refuses a
client is dpvpnd's and the dataplane's SO_PEERCRED check itself: outside
the read-only group nothing is answered; in it, shows are, and every
command that changes state or traces is refused, with the state unchanged.
"""
import base64
import bisect
import json
import os
import re
import secrets
import signal
import socket
import stat
import subprocess
import urllib.request

import pytest

import lab

pytestmark = pytest.mark.hardening

EAL_DEBUG = "--log-level=*:debug --log-level=8"
LAB_KEY_AB = "0x0123456789abcdef0123456789abcdef01020304"     # configs/lab-*.conf
LAB_KEY_BA = "0xfedcba9876543210fedcba987654321005060708"
# cipher: (key bytes, salt bytes, auth key bytes)
CIPHERS = {"aes128-gcm": (16, 4, 0), "aes256-cbc-sha256": (32, 0, 32)}
REPO_CONFIGS = lab.CONFIGS          # (the fixture points lab.CONFIGS at its own)
DPVPND = lab.DPVPND                 # (and lab.DPVPND at dpvpnd -v)
NOBODY = 65534
OTHER_GID = 64999                   # no group: not nogroup, not root
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", "--regid=nogroup", "--clear-groups"]
AS_STRANGER = ["setpriv", f"--reuid={NOBODY}", f"--regid={OTHER_GID}", "--clear-groups"]
SHOWS = [["status"], ["show", "sa"], ["show", "ports"], ["show", "counters"],
         ["show", "policies"], ["show", "routes"], ["show", "neighbours"],
         ["show", "lcores"], ["show", "trace"], ["show", "tunnels"]]


# ---- the scanner ----

HEX_SEPARATORS = [("", "hex"), (":", "hex with ':'"), (" ", "hex with ' '"),
                  ("-", "hex with '-'"), (",", "hex with ','"), (", ", "hex with ', '")]
URLSAFE = bytes.maketrans(b"+/", b"-_")
# repr() and C escapes: \xHH and the one-letter ones (a key holding 0x0a or a
# backslash prints them as \n or \\, not as \xHH); one pass, so \\x41 stays \x41
ESCAPE = re.compile(rb"\\(x[0-9a-fA-F]{2}|[\\'\"abfnrtv0])")
LETTERS = {b"a": 7, b"b": 8, b"f": 12, b"n": 10, b"r": 13, b"t": 9, b"v": 11, b"0": 0,
           b"\\": 92, b"'": 39, b'"': 34}


def unescaped(m):
    e = m.group(1)
    return bytes([int(e[1:], 16) if e[:1] == b"x" else LETTERS[e]])


def forms(secret, window=8):
    """Every rendering looked for: (description, needle, case-insensitive).
    Case-insensitive needles are lower case."""
    out = []
    n = len(secret)
    pieces = [(0, secret)] if n <= window else [(i, secret[i:i + window])
                                                for i in range(n - window + 1)]
    for i, w in pieces:
        at = f"bytes {i}..{i + len(w) - 1}"
        pairs = [f"{b:02x}" for b in w]
        out.append((f"raw bytes, {at}", w, False))
        for sep, name in HEX_SEPARATORS:
            out.append((f"{name}, {at}", sep.join(pairs).encode(), True))
        out.append((f"\\x-escaped, {at}", "".join("\\x" + p for p in pairs).encode(), True))
        out.append((f"0x list, {at}", ", ".join("0x" + p for p in pairs).encode(), True))
        out.append((f"0x list, {at}", ",".join("0x" + p for p in pairs).encode(), True))
        out.append((f"byte-swapped hex, {at}", w[::-1].hex().encode(), True))
        for sep in (", ", ","):
            out.append((f"decimal list, {at}", sep.join(str(b) for b in w).encode(), False))
    for shift in range(3):          # base64 of a longer text holding the secret
        t = secret[shift:]
        t = t[:len(t) // 3 * 3]
        enc = base64.b64encode(t)
        for i in range(0, max(len(enc) - 12, 0) + 1, 4):
            for variant in (enc[i:i + 12], enc[i:i + 12].translate(URLSAFE)):
                if len(variant) == 12:
                    out.append((f"base64 (alignment {shift})", variant, False))
    whole = base64.b64encode(secret)        # the secret alone, padding and all
    out.append(("base64 of it alone", whole, False))
    out.append(("base64url of it alone", whole.translate(URLSAFE), False))
    return out


class Scanner:
    """The haystack: named blobs; scan() says which secret shows up where."""

    def __init__(self):
        self.names, self.starts, self.parts = [], [], []
        self.size = 0

    def add(self, name, data, unescape=True):
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        if unescape and b"\\" in data:         # repr() or C escapes: bytes again
            self.add(name + " (escapes decoded)", ESCAPE.sub(unescaped, data), False)
        self.names.append(name)
        self.starts.append(self.size)
        self.parts.append(data)
        self.size += len(data) + 3
        self.parts.append(b"\n\x00\n")          # no match spans two blobs

    def add_file(self, name, path):
        with open(path, "rb") as f:
            self.add(name, f.read())

    def scan(self, secret_list, memory=False):
        """secret_list: (name, bytes).  memory: raw and hex windows only (a
        process image is megabytes: a 4-byte salt alone would match by chance),
        so secrets shorter than a window are skipped there.
        Returns 'SECRET found as FORM in BLOB' lines, never the secret."""
        hay = b"".join(self.parts)
        low = hay.lower()
        found = []
        for name, secret in secret_list:
            if memory and len(secret) < 8:
                continue
            for what, needle, ci in forms(secret):
                if memory and not (what.startswith("raw") or what.startswith("hex, ")):
                    continue
                at = (low if ci else hay).find(needle)
                if at >= 0:
                    blob = self.names[bisect.bisect_right(self.starts, at) - 1]
                    found.append(f"{name} found as {what} in {blob}")
                    break                   # one line per secret and blob is enough
        return found


def test_scanner_finds_planted_keys():
    """The scanner must be able to fail: every form of a planted key or salt
    is found, at any place in a blob; clean blobs and other keys are not."""
    key, salt, other = secrets.token_bytes(16), secrets.token_bytes(4), secrets.token_bytes(32)
    secret_list = [("planted key", key), ("planted salt", salt)]
    log = b"EAL: Ask a virtual area of 0x40000000 bytes\ndpvpnd: ready (2 ports, 1 tunnels)\n"
    text_plants = {
        "lower hex": key.hex(),
        "upper hex": key.hex().upper(),
        "0x prefixed": "0x" + (key + salt).hex(),
        "colons": ":".join(f"{b:02X}" for b in key),
        "spaces": " ".join(f"{b:02x}" for b in key),
        "python repr": repr(key),
        "hex of an 8-byte window": key[5:13].hex(),
        "u64 printed little-endian": int.from_bytes(key[:8], "little").to_bytes(8, "big").hex(),
        "json list": json.dumps(list(key)),
        "base64": base64.b64encode(key).decode(),
        "base64 inside more": base64.b64encode(b"x" + key + salt).decode(),
        "base64 after 2 bytes": base64.b64encode(b"ab" + key).decode(),
        "base64url": base64.urlsafe_b64encode(b"abc" + key).decode(),
        "salt hex alone": "salt=" + salt.hex().upper(),
        "salt base64": base64.b64encode(salt).decode(),
    }
    for what, text in text_plants.items():
        s = Scanner()
        s.add("clean", log)
        s.add("planted", log + b"x=" + text.encode() + b"\n" + log)
        found = s.scan(secret_list)
        assert found and all(" in planted" in f for f in found), (what, found)
    # every 8-byte window of this key holds a byte repr() and C print as a
    # one-letter escape: a \\x-only decoder finds none of it (it failed by chance)
    awkward = b"A\nB\\C'D\"E\tF\rG\x00H\x07"
    for what, text in {"python repr": repr(awkward), "C escapes": repr(awkward)[2:-1]}.items():
        s = Scanner()
        s.add("planted", log + text.encode() + log)
        assert s.scan([("awkward key", awkward)]), (what, text)
    for what, blob in {"raw key": b"\x00junk" + key + b"junk", "raw salt": b"<" + salt + b">",
                       "raw window": os.urandom(64) + key[3:11] + os.urandom(64)}.items():
        s = Scanner()
        s.add("planted", blob)
        assert s.scan(secret_list), what
        if what != "raw salt":
            assert s.scan(secret_list, memory=True), what
    s = Scanner()
    # each 7-byte piece followed by what cannot be the key's next byte or digit
    s.add("clean", log + other + other.hex().encode() + key[:7] + bytes([key[7] ^ 0xff])
          + b"z" + key[:7].hex().encode() + b"z")
    assert s.scan(secret_list) == []        # another key, and 7-byte pieces, are not hits
    s.add("planted", b"k=" + key.hex().encode())
    assert s.scan(secret_list) == ["planted key found as hex, bytes 0..7 in planted"]


# ---- the lab, its keys and configs ----

class Sa:
    """One direction's secrets, drawn at random."""

    def __init__(self, cipher, name):
        klen, slen, alen = CIPHERS[cipher]
        self.name = name
        self.key, self.salt = secrets.token_bytes(klen), secrets.token_bytes(slen)
        self.auth = secrets.token_bytes(alen)

    @property
    def keymat(self):
        return self.key + self.salt

    def secret_list(self):
        out = [(f"{self.name} key+salt", self.keymat), (f"{self.name} key", self.key)]
        if self.salt:
            out.append((f"{self.name} salt", self.salt))
        if self.auth:
            out.append((f"{self.name} auth key", self.auth))
        return out


def write_private(path, text, mode=0o600):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, mode)


class Keys:
    """Where each gateway's config takes its keys from: inline or files."""

    def __init__(self, keydir, cipher, files_on):
        self.dir, self.cipher, self.files_on = keydir, cipher, files_on
        self.used = []          # every SA of the run: the rekeyed ones stay here
        self.rekey()

    def rekey(self):
        self.ab, self.ba = Sa(self.cipher, "A->B"), Sa(self.cipher, "B->A")
        self.used += [self.ab, self.ba]

    def secret_list(self):
        out = []
        for i, sa in enumerate(self.used):
            out += [(f"{n} (key set {i // 2})", s) for n, s in sa.secret_list()]
        return out

    def file(self, gw, d, kind):
        return os.path.join(self.dir, f"{gw}-{d}.{kind}")

    def lines(self, gw, d, sa):
        """The key lines of one direction of gateway gw ("a" or "b")."""
        if gw == self.files_on:
            out = [f"{d}-key-file = {self.file(gw, d, 'key')}"]
            write_private(self.file(gw, d, "key"), sa.keymat.hex() + "\n")
            if sa.auth:
                out.append(f"{d}-auth-key-file = {self.file(gw, d, 'auth')}")
                write_private(self.file(gw, d, "auth"), sa.auth.hex() + "\n")
        else:
            out = [f"{d}-key = 0x{sa.keymat.hex().upper()}"]
            if sa.auth:
                out.append(f"{d}-auth-key = 0x{sa.auth.hex().upper()}")
        return "\n".join(out)

    def config(self, gw, extra_control=""):
        with open(os.path.join(REPO_CONFIGS, f"lab-{gw}.conf")) as f:
            text = f.read()
        out_sa, in_sa = (self.ab, self.ba) if gw == "a" else (self.ba, self.ab)
        lab_out, lab_in = (LAB_KEY_AB, LAB_KEY_BA) if gw == "a" else (LAB_KEY_BA, LAB_KEY_AB)
        for old, new in ((f"out-key = {lab_out}", self.lines(gw, "out", out_sa)),
                         (f"in-key = {lab_in}", self.lines(gw, "in", in_sa)),
                         ("cipher = aes128-gcm", f"cipher = {self.cipher}"),
                         ("[control]\n", "[control]\n" + extra_control)):
            assert old in text, old
            text = text.replace(old, new)
        return text


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Run:
    """A verbose lab and everything it printed (label -> bytes)."""

    def __init__(self, net, keys, extra_control, metrics_port):
        self.net, self.keys = net, keys
        self.extra_control, self.metrics_port = extra_control, metrics_port
        self.outputs = []
        inline = "b" if keys.files_on == "a" else "a"
        self.inline_gw, self.file_gw = getattr(net, inline), getattr(net, keys.files_on)
        self.inline_side, self.file_side = inline, keys.files_on

    def record(self, label, r):
        if isinstance(r, subprocess.CompletedProcess):
            self.outputs.append((label, (r.stdout or "") + (r.stderr or "")))
        else:
            self.outputs.append((label, r))
        return r

    def ctl(self, gw, *args, as_user=(), check=True, timeout=30):
        r = lab.sh(*as_user, lab.DPVPNCTL, "-s", gw.ctl_sock, *args, check=False,
                   timeout=timeout)
        self.record(f"{gw.name}: {' '.join(as_user[:2])} dpvpnctl {' '.join(args)}", r)
        if check:
            assert r.returncode == 0, f"dpvpnctl {' '.join(args)}: {r.stderr.strip()}"
        return r

    def side(self, gw):
        return "a" if gw is self.net.a else "b"

    def write_config(self, gw):
        """The gateway's config from the current keys (mode kept: 0600)."""
        with open(gw.config, "w") as f:
            f.write(self.keys.config(self.side(gw), self.extra_control[self.side(gw)]))

    def sas(self, gw):
        return sorted((s["spi"], s["dir"]) for s in gw.ctl("show", "sa")["sas"])

    def out_seq(self, gw):
        return next(s["seq"] for s in gw.ctl("show", "sa")["sas"] if s["dir"] == "out")

    def ping_ok(self, count=3):
        r = self.net.ping(count=count)
        self.record("ping", r)
        return r.returncode == 0

    @staticmethod
    def dpvpnd_pid(gw):
        return gw.dpvpnd.p.pid      # (not under ip netns exec: the pid is dpvpnd's)


def dpvpnd_verbose(d):
    """lab.Gateway starts lab.DPVPND: this one is dpvpnd -v."""
    path = os.path.join(d, "dpvpnd-v")
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\nexec "{DPVPND}" -v "$@"\n')
    os.chmod(path, 0o755)
    return path


def telemetry(prefix):
    """Every DPDK telemetry command of the dataplane, answered (cmd -> text)."""
    path = f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2"
    out = {}
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(5)
        s.connect(path)
        out["greeting"] = s.recv(65536).decode()

        def ask(cmd):
            s.send(cmd.encode())
            out[cmd] = s.recv(1 << 20).decode()
            return json.loads(out[cmd])

        cmds = ask("/")["/"]
        for cmd in cmds[:80]:
            if cmd in ("/", "/help"):
                continue
            ask(cmd)
            if cmd.startswith("/ethdev/") or cmd.startswith("/dpvpn/lcore"):
                for arg in ("0", "1"):
                    ask(f"{cmd},{arg}")
    return out


def exercise(run):
    """Everything that prints, at the most verbose level."""
    net, a, b = run.net, run.net.a, run.net.b
    assert run.ping_ok(5), "ping through the tunnel"
    rep = net.iperf(seconds=3)
    run.record("iperf3", json.dumps(rep))
    for gw in net.gws:
        for args in SHOWS:
            run.ctl(gw, *args)
            run.ctl(gw, "--json", *args)
        run.ctl(gw, "monitor", "1")
        run.record(f"{gw.name}: dpvpnd -n", lab.sh(DPVPND, "-n", "-c", gw.config,
                                                   check=False))
        run.record(f"{gw.name}: cmdline", open(f"/proc/{run.dpvpnd_pid(gw)}/cmdline",
                                               "rb").read())
    with urllib.request.urlopen(f"http://127.0.0.1:{run.metrics_port}/metrics",
                                timeout=5) as r:
        run.record("gw-a: metrics", r.read())
    for cmd, text in telemetry(a.file_prefix).items():
        run.record(f"gw-a: telemetry {cmd}", text)
    # traces at every point, written where the scan finds them
    tdir = os.path.join(net.workdir, "traces")
    os.makedirs(tdir, mode=0o700)
    flood = net.bg("ping-trace", net.ns_a, "ping", "-i", "0.01", "-w", "20", "-q", "198.18.2.2")
    for point in ("inside-rx", "pre-encrypt", "decrypted", "outside-tx"):
        run.ctl(a, "trace", point, "10", os.path.join(tdir, f"{point}.pcapng"), "5")
    flood.stop()
    # runtime changes (root), each undone
    for args in (["clear"], ["route", "add", "203.0.113.0/24", "1", "198.19.0.2"],
                 ["route", "del", "203.0.113.0/24"],
                 ["neighbour", "add", "1", "198.19.0.99", "02:00:00:00:00:99"],
                 ["neighbour", "del", "1", "198.19.0.99"],
                 ["policy", "add", "198.18.1.0/24", "198.18.5.0/24", "0x1001", "50"],
                 ["policy", "del", "198.18.1.0/24", "198.18.5.0/24"],
                 ["sa", "del", "0x1001", "out"], ["tunnel", "to-b", "down"],
                 ["tunnel", "to-b", "up"], ["reload"]):
        run.ctl(a, *args)
    run.ctl(a, "show", "nokeys", check=False)           # errors: dpvpnctl's and dpvpnd's
    run.ctl(a, "tunnel", "nosuch", "down", check=False)
    # broken keys: refused, with messages that must not quote them
    broken(run)
    # rekey: new keys in both configs, A reloaded by dpvpnctl, B by SIGHUP
    run.keys.rekey()
    for gw in net.gws:
        run.write_config(gw)
    r = run.ctl(a, "reload")
    assert "1 changed" in r.stdout, r.stdout
    os.kill(b.dpvpnd.p.pid, signal.SIGHUP)
    lab.wait_for(lambda: "1 changed" in b.dpvpnd.output().split("dpvpnd: SIGHUP")[-1],
                 15, "gw-b's SIGHUP reload")
    assert run.ping_ok(5), "ping with the new keys"
    # the dataplane killed: dpvpnd installs everything again (keys read anew)
    a.crash_dataplane()
    lab.wait_for(run.ping_ok, 30, "ping after the dataplane restart", interval=0.5)
    # dpvpnd killed: a new one finds the dataplane forwarding and reconciles
    b.dpvpnd.kill9()
    b.dpvpnd = lab.Proc("gw-b-dpvpnd-2", [lab.DPVPND, "-c", b.config, "-D", b.dp_sock,
                                          "-s", b.ctl_sock], b.dir)
    lab.wait_for(lambda: "already forwarding" in b.dpvpnd.output(), 20, "gw-b dpvpnd back")
    for gw in net.gws:
        run.ctl(gw, "--json", "show", "sa")
    assert run.ping_ok(5), "ping at the end"


def broken(run):
    """Configs whose keys are malformed: refused at -n and at reload, and
    the answer names the line but never the key text."""
    net = run.net
    gw, other = run.inline_gw, run.file_gw
    good = open(gw.config).read()
    sa = run.keys.ab if gw is net.a else run.keys.ba        # gw's outbound SA
    hexkey = sa.keymat.hex().upper()
    for bad in (hexkey + "AB", hexkey[:11] + "G" + hexkey[12:], hexkey[:-2]):
        with open(gw.config, "w") as f:
            f.write(good.replace(hexkey, bad, 1))
        run.record(f"{gw.name}: dpvpnd -n, broken key",
                   lab.sh(DPVPND, "-n", "-c", gw.config, check=False))
        r = run.ctl(gw, "reload", check=False)
        assert r.returncode != 0 and "refused, running config kept" in r.stderr, r.stderr
    with open(gw.config, "w") as f:
        f.write(good)
    path = run.keys.file(run.file_side, "out", "key")
    keytext = open(path).read()
    for bad in (keytext + keytext, keytext.strip() + "0", "x" + keytext):
        write_private(path, bad)
        r = run.ctl(other, "reload", check=False)
        assert r.returncode != 0 and path in r.stderr, r.stderr
    write_private(path, keytext)
    for g in net.gws:
        r = run.ctl(g, "reload")
        assert "0 changed" in r.stdout, r.stdout


@pytest.fixture(scope="module", params=list(CIPHERS))
def run(request, tmp_path_factory):
    cipher = request.param
    d = str(tmp_path_factory.mktemp("secrets"))
    keydir = os.path.join(d, "keys")
    os.makedirs(keydir, mode=0o700)
    confdir = os.path.join(d, "configs")
    os.makedirs(confdir, mode=0o700)
    keys = Keys(keydir, cipher, files_on="b" if cipher == "aes128-gcm" else "a")
    port = free_port()
    extra = {"a": f"metrics = 127.0.0.1:{port}\ngroup = nogroup\n", "b": ""}
    for gw in ("a", "b"):
        write_private(os.path.join(confdir, f"lab-{gw}.conf"), keys.config(gw, extra[gw]))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DPVPN_EAL_EXTRA", (os.environ.get("DPVPN_EAL_EXTRA", "") + " " +
                                      EAL_DEBUG).strip())
        mp.setattr(lab, "CONFIGS", confdir)
        mp.setattr(lab, "DPVPND", dpvpnd_verbose(d))
        with lab.Lab() as net:
            r = Run(net, keys, extra, port)
            exercise(r)
            yield r


# ---- the most verbose level was reached ----

def test_everything_was_verbose(run):
    """Without this the scan could pass on quiet logs: the dataplanes logged
    at debug (EAL and dpvpn.ctl, SA installs included), dpvpnd -v logged its
    installs, reloads and every operator request."""
    a, b = run.net.a, run.net.b
    dp = open(os.path.join(a.dir, "gw-a-dataplane.log")).read()     # (before the crash)
    assert "lib.eal log level changed from error to debug" in dp
    assert "dpvpn-dataplane: ctl: SA_ADD seq" in dp and " SA 0x00001001 out " in dp, dp[-3000:]
    assert "dpvpn-dataplane: ctl: SA_DEL seq" in dp
    da = a.dpvpnd.output()
    for line in ("dpvpnd: tunnel to-b inbound SA: done", "dpvpnd: tunnel to-b outbound SA: done",
                 "dpvpnd: uid 0: show sa: ok", "dpvpnd: uid 0: reload: ok",
                 "dpvpnd: uid 0: trace: ok", "dpvpnd: tunnel to-b outbound SA removal: done",
                 "dpvpnd: dataplane back", "dpvpnd: uid 0: reload: refused: "):
        assert line in da, line
    assert "dataplane already forwarding" in b.dpvpnd.output()
    assert "dpvpnd: SIGHUP from pid" in open(os.path.join(b.dir, "gw-b-dpvpnd.log")).read()


# ---- loose permissions ----

def dpvpnd_start(conf, tmp):
    """dpvpnd as at boot (not -n), with no dataplane to reach: a refused
    config must stop it before it even looks for one."""
    return lab.sh(DPVPND, "-c", conf, "-w", "0", "-D", os.path.join(tmp, "none.sock"),
                  "-s", os.path.join(tmp, "ctl.sock"), check=False, timeout=20)


def start_case(tmp, cipher, inline):
    """A config (inline keys or key files) that dpvpnd -n accepts; returns
    (config path, key file path or None, secrets)."""
    keys = Keys(tmp, cipher, files_on="x" if inline else "a")
    conf = os.path.join(tmp, "dpvpn.conf")
    write_private(conf, keys.config("a"))
    r = lab.sh(DPVPND, "-n", "-c", conf, check=False)
    assert r.returncode == 0, r.stderr
    return conf, (None if inline else keys.file("a", "in", "key")), keys.secret_list()


LOOSE = {   # name: (inline keys?, what to do to (conf, keyfile), words the error has)
    "config 0644 with an inline key": (True, lambda c, k: os.chmod(c, 0o644),
                                       "is mode 0644: group or others can read this key"),
    "config 0640 with an inline key": (True, lambda c, k: os.chmod(c, 0o640),
                                       "is mode 0640: group or others can read this key"),
    "config 0604 with an inline key": (True, lambda c, k: os.chmod(c, 0o604),
                                       "is mode 0604: group or others can read this key"),
    "config 0620, keys in files": (False, lambda c, k: os.chmod(c, 0o620),
                                   "mode 0620 lets group or others change the configuration"),
    "config 0666, keys in files": (False, lambda c, k: os.chmod(c, 0o666),
                                   "mode 0666 lets group or others change the configuration"),
    "config owned by nobody": (True, lambda c, k: os.chown(c, NOBODY, NOBODY),
                               "owned by uid 65534, not by root"),
    "key file 0640": (False, lambda c, k: os.chmod(k, 0o640),
                      "mode 0640 lets group or others access the key"),
    "key file 0604": (False, lambda c, k: os.chmod(k, 0o604),
                      "mode 0604 lets group or others access the key"),
    "key file 0660": (False, lambda c, k: os.chmod(k, 0o660),
                      "mode 0660 lets group or others access the key"),
    "key file owned by nobody": (False, lambda c, k: os.chown(k, NOBODY, NOBODY),
                                 "owned by uid 65534, not by root"),
    "key file a symlink to a 0644 file": (False, lambda c, k: symlink_to_loose(k),
                                          "mode 0644 lets group or others access the key"),
    "key file a symlink to nobody's file": (False, lambda c, k: symlink_to_loose(k, NOBODY),
                                            "owned by uid 65534, not by root"),
    "key file a FIFO": (False, lambda c, k: (os.unlink(k), os.mkfifo(k, 0o600)),
                        "not a regular file"),
    "key file a directory": (False, lambda c, k: (os.unlink(k), os.mkdir(k, 0o700)),
                             "not a regular file"),
}


def symlink_to_loose(k, owner=None):
    """k becomes a symlink to a copy of itself that is 0644 (or nobody's)."""
    target = k + ".real"
    os.rename(k, target)
    if owner is None:
        os.chmod(target, 0o644)
    else:
        os.chown(target, owner, owner)
    os.symlink(target, k)


@pytest.mark.parametrize("cipher", list(CIPHERS))
@pytest.mark.parametrize("case", list(LOOSE))
def test_loose_permissions_refused_at_start(tmp_path, case, cipher):
    inline, loosen, words = LOOSE[case]
    tmp = str(tmp_path)
    conf, keyfile, secret_list = start_case(tmp, cipher, inline)
    named = keyfile if keyfile and "key file" in case else conf
    loosen(conf, keyfile)
    for argv in (["-n", "-c", conf], None):
        r = (lab.sh(DPVPND, *argv, check=False) if argv else dpvpnd_start(conf, tmp))
        out = r.stdout + r.stderr
        assert r.returncode == 1, (case, argv, out)
        assert named in out and words in out, (case, out)
        assert "dataplane" not in out and not os.path.exists(os.path.join(tmp, "ctl.sock"))
        s = Scanner()
        s.add("dpvpnd's answer", out)
        assert s.scan(secret_list) == []


def test_private_config_without_keys_may_be_readable(tmp_path):
    """What is not refused: keys in private files, the config itself 0640
    (a read-only group may read it), and a symlink to a private key file."""
    tmp = str(tmp_path)
    conf, keyfile, _ = start_case(tmp, "aes256-cbc-sha256", inline=False)
    os.chmod(conf, 0o640)
    os.rename(keyfile, keyfile + ".real")
    os.symlink(keyfile + ".real", keyfile)
    r = lab.sh(DPVPND, "-n", "-c", conf, check=False)
    assert r.returncode == 0 and r.stdout.strip() == f"{conf}: OK", r.stdout + r.stderr


def assert_kept(run, gw, sas, seq):
    """The running state survived a refused reload: same SAs, same outbound
    SA (its numbers run on: not re-installed), traffic flowing."""
    assert run.sas(gw) == sas
    assert run.ping_ok(3)
    assert run.out_seq(gw) > seq


def test_loose_permissions_refused_at_reload(run):
    """dpvpnctl reload, SIGHUP and tunnel down with a loose config or key
    file: refused, the file and the reason named, nothing changed; once the
    mode is back, a reload finds nothing to do."""
    cases = [(run.inline_gw, run.inline_gw.config, lambda p: os.chmod(p, 0o644),
              lambda p: os.chmod(p, 0o600), "is mode 0644: group or others can read"),
             (run.file_gw, run.file_gw.config, lambda p: os.chmod(p, 0o664),
              lambda p: os.chmod(p, 0o600), "mode 0664 lets group or others change"),
             (run.file_gw, run.keys.file(run.file_side, "in", "key"),
              lambda p: os.chmod(p, 0o644), lambda p: os.chmod(p, 0o600),
              "mode 0644 lets group or others access the key"),
             (run.file_gw, run.keys.file(run.file_side, "out", "key"),
              lambda p: os.chown(p, NOBODY, NOBODY), lambda p: os.chown(p, 0, 0),
              "owned by uid 65534, not by root")]
    if run.keys.ab.auth:
        cases.append((run.file_gw, run.keys.file(run.file_side, "out", "auth"),
                      lambda p: os.chmod(p, 0o640), lambda p: os.chmod(p, 0o600),
                      "mode 0640 lets group or others access the key"))
    for gw, path, loosen, restore, words in cases:
        sas, seq = run.sas(gw), run.out_seq(gw)
        loosen(path)
        try:
            r = run.ctl(gw, "reload", check=False)
            assert r.returncode != 0 and "refused, running config kept" in r.stderr, r.stderr
            assert path in r.stderr and words in r.stderr, r.stderr
            r = run.ctl(gw, "tunnel", gw.ctl("show", "sa")["sas"][0]["name"], "down",
                        check=False)
            assert r.returncode != 0 and words in r.stderr, r.stderr
            refused = gw.dpvpnd.output().count("dpvpnd: reload refused")
            os.kill(gw.dpvpnd.p.pid, signal.SIGHUP)
            lab.wait_for(lambda: gw.dpvpnd.output().count("dpvpnd: reload refused") > refused,
                         10, "the SIGHUP reload to be refused")
            assert path in gw.dpvpnd.output().split("dpvpnd: SIGHUP")[-1]
            assert_kept(run, gw, sas, seq)
        finally:
            restore(path)
        r = run.ctl(gw, "reload")
        assert "0 added, 0 removed, 0 changed" in r.stdout.replace("tunnels added", "added")


# ---- a non-root user ----

def lab_dirs(run):
    return [run.net.workdir, run.net.a.dir, run.net.b.dir]


@pytest.fixture
def traversable(run):
    """The lab's directories 0711 (they are 0700): a client then reaches the
    sockets, and only their modes and the daemons' own checks stand."""
    modes = {d: stat.S_IMODE(os.stat(d).st_mode) for d in lab_dirs(run)}
    socks = [run.net.a.ctl_sock, run.net.b.ctl_sock, run.net.a.dp_sock, run.net.b.dp_sock]
    smodes = {s: stat.S_IMODE(os.stat(s).st_mode) for s in socks}
    for d in modes:
        os.chmod(d, 0o711)
    yield
    for d, m in modes.items():
        os.chmod(d, m)
    for s, m in smodes.items():
        if os.path.exists(s):
            os.chmod(s, m)


def test_socket_modes(run):
    a, b = run.net.a, run.net.b
    for d in lab_dirs(run):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d
    st = os.stat(a.ctl_sock)                # [control] group = nogroup
    assert stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == NOBODY and st.st_uid == 0
    for path in (b.ctl_sock, a.dp_sock, b.dp_sock):
        st = os.stat(path)
        assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0, path
    # DPDK's runtime directory (the telemetry socket) is root's alone
    assert stat.S_IMODE(os.stat("/var/run/dpdk").st_mode) & 0o077 == 0


def test_non_root_stopped_by_the_directory(run):
    for gw in run.net.gws:
        r = run.ctl(gw, "status", as_user=AS_NOBODY, check=False)
        assert r.returncode != 0 and "Permission denied" in r.stderr, r.stderr


def write_commands(tracefile):
    """Every dpvpnctl command that changes state or traces."""
    return [["reload"], ["clear"], ["tunnel", "to-b", "down"], ["tunnel", "to-a", "down"],
            ["tunnel", "to-b", "up"], ["route", "add", "203.0.113.0/24", "1", "198.19.0.2"],
            ["route", "del", "198.18.1.0/24"], ["route", "del", "198.18.2.0/24"],
            ["neighbour", "add", "1", "198.19.0.99", "02:00:00:00:00:99"],
            ["neighbour", "del", "1", "198.19.0.2"], ["neighbour", "del", "1", "198.19.0.1"],
            ["policy", "add", "198.18.1.0/24", "198.18.5.0/24", "0x1001", "50"],
            ["policy", "del", "198.18.1.0/24", "198.18.2.0/24"],
            ["policy", "del", "198.18.2.0/24", "198.18.1.0/24"],
            ["sa", "del", "0x1001", "out"], ["sa", "del", "0x2001", "in"],
            ["sa", "del", "0x2001", "out"], ["sa", "del", "0x1001", "in"],
            ["trace", "outside-tx", "5", tracefile, "2"],
            ["trace", "decrypted", "5", tracefile, "2"]]


def state(gw):
    return (sorted((s["spi"], s["dir"], s["name"]) for s in gw.ctl("show", "sa")["sas"]),
            gw.ctl("show", "policies")["policies"],
            sorted(json.dumps(r, sort_keys=True) for r in gw.ctl("show", "routes")["routes"]),
            sorted(json.dumps(n, sort_keys=True) for n in gw.ctl("show", "neighbours")
                   ["neighbours"] if n.get("static")))


RAW_AS_USER = r"""
import json, socket, sys
path, kind = sys.argv[1], sys.argv[2]
reqs = json.loads(sys.argv[3])
out = []
for req in reqs:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    try:
        s.connect(path)
    except OSError as e:
        out.append("connect: errno %d" % e.errno)
        continue
    try:
        s.send(bytes.fromhex(req) if kind == "dp" else req.encode())
        r = s.recv(1 << 20)
        out.append(r.hex() if kind == "dp" and r else (r.decode() if r else "closed"))
    except OSError as e:
        out.append("errno %d" % e.errno)
    s.close()
print(json.dumps(out))
"""


def raw_as(user, path, kind, reqs):
    r = lab.sh(*user, "/usr/bin/python3", "-c", RAW_AS_USER, path, kind, json.dumps(reqs),
               check=False, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def raw_writes(tracefile):
    """The same as JSON requests, as any client could send them."""
    return [{"cmd": "reload"}, {"cmd": "clear"},
            {"cmd": "tunnel", "name": "to-b", "state": "down"},
            {"cmd": "trace", "point": "outside-tx", "count": 5, "file": tracefile},
            {"cmd": "trace", "point": "off"},
            {"cmd": "route", "op": "del", "dst": "198.18.2.0/24"},
            {"cmd": "neighbour", "op": "del", "port": 1, "address": "198.19.0.2"},
            {"cmd": "policy", "op": "del", "src": "198.18.1.0/24", "dst": "198.18.2.0/24"},
            {"cmd": "sa", "op": "del", "spi": "0x1001", "dir": "out"}]


def test_group_member_may_look_but_not_change(run, traversable, tmp_path):
    """gw-a's socket is 0660 for [control] group = nogroup: nobody (in
    nogroup) gets every show, and every change or trace is refused by dpvpnd,
    through dpvpnctl and as raw requests, with nothing changed."""
    a = run.net.a
    tracefile = str(tmp_path / "nobody.pcapng")
    before, seq, rx = state(a), run.out_seq(a), a.ctl("show", "counters")["rx_packets"]
    for args in SHOWS + [["monitor", "1"]]:
        for js in ([], ["--json"]):
            r = run.ctl(a, *js, *args, as_user=AS_NOBODY, check=False)
            assert r.returncode == 0, (args, r.stderr)
    for args in write_commands(tracefile):
        r = run.ctl(a, *args, as_user=AS_NOBODY, check=False)
        assert r.returncode != 0 and "permission denied" in r.stderr, (args, r.stderr)
    writes = raw_writes(tracefile)
    answers = raw_as(AS_NOBODY, a.ctl_sock, "ctl", [json.dumps(q) for q in writes])
    for q, ans in zip(writes, answers):
        run.record(f"gw-a: nobody raw {q['cmd']}", ans)
        assert json.loads(ans)["ok"] is False and "permission denied" in ans, (q, ans)
    assert not os.path.exists(tracefile)
    assert a.ctl("show", "trace")["active"] is False
    assert state(a) == before
    assert run.ping_ok(3)
    assert run.out_seq(a) > seq and a.ctl("show", "counters")["rx_packets"] >= rx   # not cleared
    r = lab.sh(*AS_NOBODY, "kill", "-HUP", str(a.dpvpnd.p.pid), check=False)
    assert r.returncode != 0                # nor by signal


def test_non_member_refused_by_credentials(run, traversable, tmp_path):
    """A user outside the group (gw-a) or any non-root user (gw-b, no group):
    even with the socket made world-writable, dpvpnd answers every request,
    shows included, with 'permission denied' from its SO_PEERCRED check."""
    a, b = run.net.a, run.net.b
    tracefile = str(tmp_path / "stranger.pcapng")
    for gw, user in ((a, AS_STRANGER), (b, AS_NOBODY)):
        r = run.ctl(gw, "status", as_user=user, check=False)
        assert r.returncode != 0 and "Permission denied" in r.stderr, r.stderr  # the mode
        os.chmod(gw.ctl_sock, 0o666)
        before = state(gw)
        for args in SHOWS + write_commands(tracefile):
            r = run.ctl(gw, *args, as_user=user, check=False)
            assert r.returncode != 0 and "permission denied: uid 65534" in r.stderr, \
                (gw.name, args, r.stderr)
        answers = raw_as(user, gw.ctl_sock, "ctl",
                         [json.dumps(q) for q in [{"cmd": "status"}] + raw_writes(tracefile)])
        assert all("permission denied" in x or x == "closed" or x.startswith("errno")
                   for x in answers), answers
        assert state(gw) == before and not os.path.exists(tracefile)
        assert "refused client: permission denied: uid 65534" in gw.dpvpnd.output()
    assert run.ping_ok(3)


def dp_msg(typ, payload=b"", seq=1):
    import struct
    return (struct.pack("=HHIIi", typ, 0, seq, len(payload), 0) + payload).hex()


def test_dataplane_refuses_non_root(run, traversable):
    """The dataplane's socket: 0600, and with the mode opened up the
    dataplane still closes a non-root client before reading a byte of it
    (HELLO, SHOW_SA, SA_DEL, TRACE_START unanswered, the SA still there)."""
    import struct
    sa_del = dp_msg(6, struct.pack("!I", 0x1001) + bytes([2, 0, 0, 0]))
    reqs = [dp_msg(1), dp_msg(10, struct.pack("=I", 0)), sa_del]
    for gw in run.net.gws:
        ans = raw_as(AS_NOBODY, gw.dp_sock, "dp", reqs)
        assert all(x == "connect: errno 13" for x in ans), ans       # EACCES: 0600
        os.chmod(gw.dp_sock, 0o666)
        refused = gw.dataplane.output().count("control client refused (credentials)")
        sas = run.sas(gw)
        ans = raw_as(AS_NOBODY, gw.dp_sock, "dp", reqs)
        assert all(x == "closed" or x.startswith("errno") for x in ans), ans
        assert gw.dataplane.output().count("control client refused (credentials)") >= \
            refused + len(reqs)
        assert run.sas(gw) == sas
    assert run.ping_ok(3)


def test_telemetry_socket_is_root_only(run):
    path = f"/var/run/dpdk/{run.net.a.file_prefix}/dpdk_telemetry.v2"
    assert os.path.exists(path)
    r = lab.sh(*AS_NOBODY, "/usr/bin/python3", "-c",
               "import socket,sys; s=socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET);"
               "s.connect(sys.argv[1])", path, check=False)
    assert r.returncode != 0 and "PermissionError" in r.stderr, r.stderr


# ---- the scan (last: it sees what the tests above printed too) ----

def every_file(run):
    """Logs, state, traces: every regular file the lab wrote but the configs."""
    s = Scanner()
    for top in (run.net.workdir,):
        for d, _, files in os.walk(top):
            for f in files:
                p = os.path.join(d, f)
                if f == "dpvpn.conf" or not stat.S_ISREG(os.lstat(p).st_mode):
                    continue
                s.add_file(os.path.relpath(p, top), p)
    return s


def test_no_key_in_any_log_state_or_trace(run):
    s = every_file(run)
    names = " ".join(s.names)
    for want in ("gw-a-dataplane.log", "gw-a-dataplane-1.log", "gw-a-dpvpnd.log",
                 "gw-b-dpvpnd.log", "gw-b-dpvpnd-2.log", "dpvpn.conf.state",
                 "outside-tx.pcapng", "decrypted.pcapng", "inside-rx.pcapng",
                 "pre-encrypt.pcapng"):
        assert want in names, (want, names)
    assert s.size > 50000                   # the debug logs are long
    assert s.scan(run.keys.secret_list()) == []


def test_no_key_in_any_cli_output_or_json(run):
    s = Scanner()
    for label, text in run.outputs:
        s.add(label, text)
    assert len(run.outputs) > 60
    assert any("--json show sa" in label for label, _ in run.outputs)
    assert s.scan(run.keys.secret_list()) == []


def process_memory(pid):
    """The writable mappings of a process (heap, stack, data): where a key
    copy could be left."""
    out = []
    with open(f"/proc/{pid}/maps") as f:
        maps = f.read().splitlines()
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            fields = line.split()
            if "w" not in fields[1] or (len(fields) > 5 and fields[5] == "[vvar]"):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            try:
                mem.seek(start)
                out.append((f"{fields[5] if len(fields) > 5 else 'anon'}@{start:x}",
                            mem.read(end - start)))
            except OSError:
                pass
    return out


@pytest.mark.skipif(bool(os.environ.get("DPVPN_SANITIZER_LOGS")),
                    reason="ASan's allocator maps hundreds of MiB: minutes to scan; "
                           "the normal pass scans dpvpnd's memory")
def test_dpvpnd_memory_holds_no_key(run):
    """dpvpnd wipes keys once installed: none of this run's, old or new, is
    left in its heap, stack or data (what a core dump would hold) after
    installs, reloads, a rekey, refused configs and reinstalls."""
    for gw in run.net.gws:
        pid = run.dpvpnd_pid(gw)
        s = Scanner()
        for name, data in process_memory(pid):
            s.add(f"{gw.name} dpvpnd pid {pid} {name}", data, unescape=False)
        assert s.size > 100000
        assert gw.ctl_sock.encode() in b"".join(s.parts)      # it is dpvpnd's data we read
        assert s.scan(run.keys.secret_list(), memory=True) == []
