# SPDX-License-Identifier: BSD-3-Clause
"""Issue 13, items 9 and 10: what an operator meets first, before a packet.

Without a dataplane (fast):
- --version and --help of dpvpn-dataplane (before EAL starts), dpvpnd and
  dpvpnctl: exit 0, stdout, one version string (meson.build's).
- dpvpnd started before its dataplane says at once that it waits, for what
  and how long.
- dpvpnd's log lines carry an ISO 8601 local timestamp, unless stderr is
  systemd's journal (JOURNAL_STREAM names it), which stamps lines itself.
- dpvpnctl genkey: a key file of the right size for every cipher, mode 0600,
  accepted by dpvpnd -n in a tunnel of that cipher, new bytes each run,
  never over an existing file without -f.

In the lab (tests/helpers/lab.py), gateway A given the wrong inbound key, so that
what B sends fails A's integrity check as it would with mismatched keys:

    host A == gw A (in-key wrong) == gw B == host B

- one log line naming the tunnel, the SPI and the count, then none for the
  rest of the rate-limit window however many more fail; never a key;
- a refused reload (dpvpnctl reload, SIGHUP) gives one FILE:LINE: error per
  line, in dpvpnctl's output and in dpvpnd's log.
"""
import os
import re
import signal
import stat
import subprocess
import time

import pytest

import lab
from esp_oracle import CIPHERS

pytestmark = pytest.mark.operator

STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d "
PROGRAMS = {"dpvpn-dataplane": lab.DATAPLANE, "dpvpnd": lab.DPVPND, "dpvpnctl": lab.DPVPNCTL}
WRONG_IN_KEY = "0x00112233445566778899aabbccddeeff00000000"
RIGHT_IN_KEY = "0xfedcba9876543210fedcba987654321005060708"
ICV_LINE = "failed the integrity check"


def project_version():
    with open(os.path.join(lab.ROOT, "meson.build")) as f:
        return re.search(r"version:\s*'([^']+)'", f.read()).group(1)


def private_copy(tmp, name):
    """configs/NAME installed 0600 into tmp (git keeps them 0644)."""
    dst = os.path.join(tmp, name)
    lab.sh("install", "-m", "600", os.path.join(lab.CONFIGS, name), dst)
    return dst


# ---- --version, --help ----

@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_version(name):
    r = lab.sh(PROGRAMS[name], "--version", timeout=10)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert len(out) == 1 and re.fullmatch(rf"{name} {re.escape(project_version())}"
                                          r"( \(git [0-9a-zA-Z.+-]+\))?", out[0]), r.stdout
    assert r.stderr == "", r.stderr    # the dataplane: no EAL start, no EAL log


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_help(name):
    r = lab.sh(PROGRAMS[name], "--help", timeout=10)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: ") and "--version" in r.stdout, r.stdout
    assert "EAL:" not in r.stdout + r.stderr


def test_dataplane_help_after_double_dash():
    """The dataplane's own options come after --: so may --help and --version."""
    for opt in ("--help", "--version"):
        r = lab.sh(lab.DATAPLANE, "--no-pci", "--", opt, timeout=10)
        assert r.returncode == 0 and "EAL:" not in r.stdout + r.stderr, (opt, r.stdout, r.stderr)


# ---- dpvpnd without its dataplane: the wait, the timestamps ----

def start_alone(tmp, wait, env=None):
    """dpvpnd with lab-a.conf and a dataplane socket nobody serves."""
    conf = private_copy(tmp, "lab-a.conf")
    log = os.path.join(tmp, f"dpvpnd-w{wait}.log")
    with open(log, "w") as f:
        p = subprocess.Popen([lab.DPVPND, "-c", conf, "-D", os.path.join(tmp, "none.sock"),
                              "-s", os.path.join(tmp, "ctl.sock"), "-w", str(wait)],
                             stdout=f, stderr=subprocess.STDOUT, env=env)
    return p, log


def read(path):
    with open(path) as f:
        return f.read()


def test_dpvpnd_says_it_waits(tmp_path):
    p, log = start_alone(str(tmp_path), 4)
    try:
        lab.wait_for(lambda: "waiting" in read(log), 1.0, "dpvpnd to say it waits")
        line = next(ln for ln in read(log).splitlines() if "waiting" in ln)
        assert "none.sock" in line and "4 s" in line, line
        assert p.wait(10) == 1
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert "gave up waiting" in read(log)


def journal_env(log, **extra):
    env = {k: v for k, v in os.environ.items() if k != "JOURNAL_STREAM"}
    env.update(extra)
    if log is not None:
        st = os.stat(log)
        env["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
    return env


def run_alone(tmp, env):
    p, log = start_alone(tmp, 0, env)
    assert p.wait(10) == 1
    lines = read(log).splitlines()
    assert lines, "dpvpnd printed nothing"
    return lines


def test_timestamps_unless_under_the_journal(tmp_path):
    tmp = str(tmp_path)
    # POSIX TZ "XYZ-3": three hours east of UTC
    lines = run_alone(tmp, journal_env(None, TZ="XYZ-3"))
    for ln in lines:
        assert re.match(STAMP + "dpvpnd: ", ln), ln
        assert ln[23:29] == "+03:00", ln
    # another stream's JOURNAL_STREAM (dpvpnd's stderr is not that journal): stamped
    lines = run_alone(tmp, journal_env(None, JOURNAL_STREAM="1:1"))
    assert all(re.match(STAMP + "dpvpnd: ", ln) for ln in lines), lines
    # systemd sets JOURNAL_STREAM to DEV:INODE of the stream it gave as stderr
    log = os.path.join(tmp, "journal.log")
    open(log, "w").close()
    conf = private_copy(tmp, "lab-a.conf")
    with open(log, "a") as f:
        p = subprocess.run([lab.DPVPND, "-c", conf, "-D", os.path.join(tmp, "none.sock"),
                            "-s", os.path.join(tmp, "ctl.sock"), "-w", "0"],
                           stdout=f, stderr=f, env=journal_env(log), timeout=10)
    assert p.returncode == 1
    lines = read(log).splitlines()
    assert lines and all(ln.startswith("dpvpnd: ") for ln in lines), lines


# ---- genkey ----

def genkey(*args, check=True):
    r = lab.sh(lab.DPVPNCTL, "genkey", *args, check=False, timeout=10)
    if check:
        assert r.returncode == 0, (args, r.stderr)
    return r


def hex_of(path):
    with open(path) as f:
        text = f.read()
    assert text.endswith("\n") and text.count("\n") == 1, repr(text)
    assert text.startswith("0x"), repr(text)
    return bytes.fromhex(text[2:].strip())


TUNNEL = """[port inside]
id = 0
role = inside
address = 198.18.1.1/24

[port outside]
id = 1
role = outside
address = 198.19.0.1/24

[tunnel t]
local = 198.19.0.1
remote = 198.19.0.2
local-ts = 198.18.1.0/24
remote-ts = 198.18.2.0/24
cipher = {cipher}
out-spi = 0x1001
in-spi = 0x2001
"""


@pytest.mark.parametrize("cipher", sorted(CIPHERS))
def test_genkey_every_cipher(tmp_path, cipher):
    _, key_len, salt_len, _, auth_len, _, _ = CIPHERS[cipher]
    d = str(tmp_path)
    conf = TUNNEL.format(cipher=cipher)
    files = []
    for direction in ("out", "in"):
        if key_len:
            files.append((f"{direction}-key-file", f"{direction}.key", (), key_len + salt_len))
        if auth_len:
            files.append((f"{direction}-auth-key-file", f"{direction}.auth", ("--auth",),
                          auth_len))
    for key, name, opts, size in files:
        path = os.path.join(d, name)
        genkey(*opts, cipher, path)
        st = os.lstat(path)
        assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
        assert len(hex_of(path)) == size, (name, size)
        conf += f"{key} = {name}\n"
    with open(os.path.join(d, "t.conf"), "w") as f:
        f.write(conf)
    r = lab.sh(lab.DPVPND, "-n", "-c", os.path.join(d, "t.conf"), check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    # two runs: different keys
    opts = () if key_len else ("--auth",)
    a, b = (genkey(*opts, cipher, "-").stdout for _ in range(2))
    assert a != b and len(a) == len(b) == 2 + 2 * (key_len + salt_len or auth_len) + 1


def test_key_sizes_documented():
    """dpvpn.conf(5)'s table of key sizes: what genkey writes and dpvpnd takes."""
    with open(os.path.join(lab.ROOT, "doc", "dpvpn.conf.5")) as f:
        text = f.read()
    for cipher, (_, key_len, salt_len, _, auth_len, _, _) in CIPHERS.items():
        row = re.search(rf"^{cipher}\t([^\t]*)\t(.*)$", text, re.M)
        assert row, f"no row for {cipher} in dpvpn.conf(5)"
        assert row.group(1).split()[0] == (str(key_len + salt_len) if key_len else "\\-")
        assert row.group(2).split()[0] == (str(auth_len) if auth_len else "\\-")


def test_genkey_refuses_to_overwrite(tmp_path):
    d = str(tmp_path)
    path = os.path.join(d, "k")
    genkey("aes128-gcm", path)
    first = hex_of(path)
    r = genkey("aes128-gcm", path, check=False)
    assert r.returncode != 0 and "-f" in r.stderr, r.stderr
    assert hex_of(path) == first
    # not through a symbolic link either, even one to a missing file
    link = os.path.join(d, "link")
    os.symlink(os.path.join(d, "elsewhere"), link)
    r = genkey("aes128-gcm", link, check=False)
    assert r.returncode != 0 and not os.path.exists(os.path.join(d, "elsewhere")), r.stderr
    # -f replaces it, private even over a file that was not
    os.chmod(path, 0o644)
    genkey("-f", "aes128-gcm", path)
    assert hex_of(path) != first and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # unknown cipher, and the NULL cipher's missing encryption key: named
    r = genkey("aes128-gmc", os.path.join(d, "x"), check=False)
    assert r.returncode == 2 and "aes128-gcm" in r.stderr, r.stderr
    r = genkey("null-sha256", os.path.join(d, "x"), check=False)
    assert r.returncode == 2 and "--auth" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(d, "x"))


def test_genkey_psk(tmp_path):
    """A PSK for keying = ike, accepted by dpvpnd -n."""
    d = str(tmp_path)
    genkey("psk", os.path.join(d, "ike.psk"))
    assert stat.S_IMODE(os.stat(os.path.join(d, "ike.psk")).st_mode) == 0o600
    conf = private_copy(d, "ike-a.conf")
    r = lab.sh(lab.DPVPND, "-n", "-c", conf, check=False)
    assert r.returncode == 0, r.stdout + r.stderr


# ---- the lab: keys that differ, reloads that are refused ----

@pytest.fixture(scope="module")
def net():
    with lab.Lab(replace_a=((f"in-key = {RIGHT_IN_KEY}", f"in-key = {WRONG_IN_KEY}"),)) as n:
        yield n


def icv_lines(gw):
    return [ln for ln in gw.dpvpnd.output().splitlines() if ICV_LINE in ln]


def test_icv_failures_logged_once_per_window(net):
    a = net.a
    net.ns(net.ns_a, "ping", "-c", "3", "-i", "0.2", "-W", "1", "198.18.2.2", check=False)
    lab.wait_for(lambda: icv_lines(a), 5, "the bad-icv log line")
    line, = icv_lines(a)
    assert re.match(STAMP + "dpvpnd: tunnel to-b: ", line), line
    assert "0x00002001" in line and "keys differ" in line, line
    n = int(re.search(r": (\d+) inbound packets? " + ICV_LINE, line).group(1))
    assert 1 <= n <= 3, line
    # more failures within the window: counted, not logged
    net.ns(net.ns_a, "ping", "-c", "15", "-i", "0.2", "-W", "1", "198.18.2.2", check=False)
    time.sleep(2.5)                 # two more polls after the last one
    assert len(icv_lines(a)) == 1, icv_lines(a)
    sa, = [s for s in a.ctl("show", "sa")["sas"] if s["dir"] == "in"]
    assert sa["drops"]["bad-icv"] >= n + 10, sa    # (a first ping may wait for ARP)
    log = a.dpvpnd.output()
    for key in (WRONG_IN_KEY, RIGHT_IN_KEY):
        assert key[2:18] not in log.lower()


def add_errors(conf):
    """Two errors appended; returns the original text and their lines."""
    original = read(conf)
    n = original.count("\n") + (0 if original.endswith("\n") else 1)
    with open(conf, "a") as f:
        f.write("\nthis is not a key\nreplay-window = 3\n")
    return original, (n + 2, n + 3)


def error_lines(text, conf):
    return [ln for ln in text.splitlines() if f"{conf}:" in ln]


def test_refused_reload_one_error_per_line(net):
    a = net.a
    conf = a.config
    original, lines = add_errors(conf)
    try:
        r = lab.sh(lab.DPVPNCTL, "-s", a.ctl_sock, "reload", check=False)
        assert r.returncode != 0 and "refused, running config kept" in r.stderr, r.stderr
        got = error_lines(r.stderr, conf)
        assert len(got) == 2, r.stderr
        for ln, want in zip(got, lines):
            assert ln.startswith(f"{conf}:{want}: ") and ln.count(f"{conf}:") == 1, r.stderr

        before = len(a.dpvpnd.output().splitlines())
        os.kill(a.dpvpnd.p.pid, signal.SIGHUP)
        lab.wait_for(lambda: len(error_lines("\n".join(
            a.dpvpnd.output().splitlines()[before:]), conf)) >= 2, 5, "the SIGHUP reload")
        time.sleep(0.2)
        got = error_lines("\n".join(a.dpvpnd.output().splitlines()[before:]), conf)
        assert len(got) == 2, got
        for ln, want in zip(got, lines):
            assert re.match(STAMP + rf"dpvpnd: reload refused: {re.escape(conf)}:{want}: ",
                            ln) and ln.count(f"{conf}:") == 1, got
    finally:
        with open(conf, "w") as f:
            f.write(original)
    assert len(a.ctl("show", "sa")["sas"]) == 2


def test_lab_log_is_stamped(net):
    out = net.a.dpvpnd.output().splitlines()
    assert out and all(re.match(STAMP, ln) for ln in out), out
