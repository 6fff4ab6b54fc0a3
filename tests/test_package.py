# SPDX-License-Identifier: BSD-3-Clause
"""The Debian package ([deploy] issue 17, requirement 4): scripts/package
builds the .deb and lintian finds no error in it; the .deb installs into a
clean Debian 12 root (debootstrap --variant=minbase bookworm, with the
package's dependencies), creates the dpvpn group and /etc/dpvpn, enables its
units without starting them, `dpvpnd -n` accepts the example configuration
it ships (once the key files it names exist), and `dpkg --purge` leaves
nothing of it but the dpvpn user and group.

The root is made once and kept as a tarball in /var/cache/dpvpn-test/ (its
name carries a hash of the dependency list, so a new dependency makes a new
one): the first run needs the Debian mirror (DPVPN_DEBIAN_MIRROR, default
deb.debian.org) and about 2 minutes, later runs are offline.  Neither mirror
nor cache: skipped, saying so.  Run it: scripts/test -m package."""
import glob
import hashlib
import os
import re
import select
import shutil
import subprocess
import tempfile
import time
import urllib.request

import pytest

import lab

pytestmark = [pytest.mark.deploy, pytest.mark.package]

CACHE = "/var/cache/dpvpn-test"
MIRROR = os.environ.get("DPVPN_DEBIAN_MIRROR", "http://deb.debian.org/debian")
EXAMPLES = "/usr/share/doc/dpvpn/examples"
ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C", "HOME": "/root",
       "DEBIAN_FRONTEND": "noninteractive"}


def run(cmd, timeout=120, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


@pytest.fixture(scope="module")
def deb():
    """scripts/package --fast: the .deb, lintian clean of errors."""
    t = time.monotonic()
    r = run([os.path.join(lab.ROOT, "scripts", "package"), "--fast"], timeout=1200,
            cwd=lab.ROOT)
    print(f"scripts/package: {time.monotonic() - t:.0f} s")
    print(r.stdout[-4000:], r.stderr[-2000:])   # lintian's warnings, if any
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "lintian: no errors" in r.stdout
    debs = glob.glob(os.path.join(lab.ROOT, "build-deb", "dpvpn_*_amd64.deb"))
    assert len(debs) == 1, debs
    return debs[0]


def depends(deb):
    """The .deb's Depends as package names (first of alternatives, no versions)."""
    f = run(["dpkg-deb", "-f", deb, "Depends"]).stdout
    return sorted({alt.split("|")[0].split("(")[0].strip() for alt in f.split(",")
                   if alt.strip()})


def mirror_reachable():
    try:
        with urllib.request.urlopen(f"{MIRROR}/dists/bookworm/Release", timeout=10) as u:
            return u.status == 200
    except OSError:
        return False


def root_tarball(deb):
    """/var/cache/dpvpn-test/bookworm-minbase-HASH.tar: a minbase bookworm root
    with the .deb's dependencies, made by debootstrap if it is not there."""
    deps = depends(deb)
    tag = hashlib.sha256(" ".join(deps).encode()).hexdigest()[:12]
    tar = os.path.join(CACHE, f"bookworm-minbase-{tag}.tar")
    if os.path.exists(tar):
        return tar
    if shutil.which("debootstrap") is None:
        pytest.skip(f"no {tar} and no debootstrap (scripts/packages.txt has it)")
    if not mirror_reachable():
        pytest.skip(f"no {tar} and the Debian mirror {MIRROR} does not answer: "
                    "run once where it does (or set DPVPN_DEBIAN_MIRROR)")
    os.makedirs(CACHE, exist_ok=True)
    work = tempfile.mkdtemp(prefix="debootstrap.", dir=CACHE)
    try:
        t = time.monotonic()
        r = run(["debootstrap", "--variant=minbase", "--include=" + ",".join(deps),
                 "bookworm", os.path.join(work, "root"), MIRROR], timeout=1200)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        r = run(["tar", "-C", os.path.join(work, "root"), "-cf", tar + ".tmp", "."],
                timeout=300)
        assert r.returncode == 0, r.stderr
        os.rename(tar + ".tmp", tar)
        print(f"debootstrap and {tar}: {time.monotonic() - t:.0f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for old in glob.glob(os.path.join(CACHE, "bookworm-minbase-*.tar")):
        if old != tar:
            os.unlink(old)      # made for another dependency list
    return tar


@pytest.fixture(scope="module")
def root(deb):
    """A fresh copy of the cached root; nothing is mounted in it."""
    tar = root_tarball(deb)
    d = tempfile.mkdtemp(prefix="dpvpn-pkgroot.")
    try:
        r = run(["tar", "-C", d, "-xf", tar], timeout=300)
        assert r.returncode == 0, r.stderr
        # invoke-rc.d starts nothing in here, whatever a maintainer script asks
        policy = os.path.join(d, "usr/sbin/policy-rc.d")
        with open(policy, "w") as f:
            f.write("#!/bin/sh\nexit 101\n")
        os.chmod(policy, 0o755)
        shutil.copy(deb, os.path.join(d, "tmp", "dpvpn.deb"))
        yield d
    finally:
        assert not os.path.ismount(os.path.join(d, "proc"))
        shutil.rmtree(d, ignore_errors=True)


def sh(root, script, timeout=120):
    """Run a shell script in the chroot."""
    return run(["chroot", root, "/bin/sh", "-ec", script], timeout=timeout, env=ENV)


def ok(root, script):
    r = sh(root, script)
    assert r.returncode == 0, f"{script}\n{r.stdout}{r.stderr}"
    return r.stdout


def key_files(conf_text):
    """(path, cipher) of each *-key-file and (path, None) of each psk-file."""
    sections, cur = [], None
    for line in conf_text.splitlines():
        line = line.split(";")[0].split("#")[0].strip()
        if line.startswith("["):
            cur = {"cipher": None, "files": []}
            sections.append(cur)
        m = re.match(r"([a-z-]+)\s*=\s*(\S+)$", line)
        if m and cur is not None:
            k, v = m.groups()
            if k == "cipher":
                cur["cipher"] = v
            elif k in ("out-key-file", "in-key-file", "psk-file"):
                cur["files"].append((v, k != "psk-file"))
    return [(p, s["cipher"] if key else None) for s in sections for p, key in s["files"]]


def dataplane_starts(root):
    """dpvpn-dataplane, as installed with its Depends (DPDK's mempool handler
    is a plugin, not a linked library), comes up to "ready" on two ring ports
    without hugepages.  /proc and /sys are mounted in a private mount
    namespace: they go when its processes do, nothing to unmount."""
    script = (f"mount -t proc proc {root}/proc && mount -t sysfs sys {root}/sys && "
              f"exec chroot {root} dpvpn-dataplane --no-pci --no-huge -m 256 -l 0-1 "
              "--file-prefix dpvpn-pkgtest --vdev net_ring0 --vdev net_ring1 "
              "-- --socket /run/dpvpn-pkgtest.sock")
    p = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-ec",
                          script], env=ENV, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    out = b""
    try:
        deadline = time.monotonic() + 30
        while b"dpvpn-dataplane: ready:" not in out and time.monotonic() < deadline:
            if select.select([p.stderr], [], [], max(0, deadline - time.monotonic()))[0]:
                chunk = os.read(p.stderr.fileno(), 65536)
                if not chunk:
                    break       # it exited
                out += chunk
        assert b"dpvpn-dataplane: ready:" in out, out.decode(errors="replace")[-3000:]
    finally:
        os.killpg(p.pid, 2)     # SIGINT: it stops, wiping its SAs
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait(timeout=10)
        p.stderr.close()


def test_install_check_purge(deb, root):
    t = time.monotonic()
    # installed with its dependencies already in the root: no network
    ok(root, "dpkg -i /tmp/dpvpn.deb")
    assert ok(root, "dpkg-query -W -f '${Status}' dpvpn") == "install ok installed"

    # the group for dpvpnctl without sudo, /etc/dpvpn 0750 root:dpvpn
    assert ok(root, "getent group dpvpn").startswith("dpvpn:x:")
    assert ok(root, "stat -c '%a %U %G' /etc/dpvpn").split() == ["750", "root", "dpvpn"]
    assert ok(root, "getent passwd dpvpn").split(":")[5] == "/nonexistent"

    # programs, man pages, units (in the usrmerged root /lib is /usr/lib)
    for f in ("/usr/sbin/dpvpnd", "/usr/sbin/dpvpnctl", "/usr/sbin/dpvpn-dataplane",
              "/usr/share/man/man8/dpvpnd.8.gz", "/usr/share/man/man8/dpvpnctl.8.gz",
              "/usr/share/man/man8/dpvpn-dataplane.8.gz",
              "/usr/share/man/man5/dpvpn.conf.5.gz",
              "/usr/lib/systemd/system/dpvpnd.service",
              "/usr/lib/systemd/system/dpvpn-dataplane.service",
              "/usr/share/doc/dpvpn/copyright", EXAMPLES + "/example.conf",
              EXAMPLES + "/sysctl-hugepages.conf", EXAMPLES + "/keepalived-dpvpn.conf",
              "/etc/default/dpvpn"):
        assert os.path.exists(root + f), f
    assert ok(root, "dpkg-query -W -f '${Conffiles}' dpvpn").split()[0] == "/etc/default/dpvpn"
    # the docs as .md, not .md.gz, so that their relative links lead somewhere
    docs = root + "/usr/share/doc/dpvpn"
    assert not [f for f in os.listdir(docs) if f.endswith(".md.gz")], os.listdir(docs)
    for f in os.listdir(docs):
        if f.endswith(".md"):
            for link in re.findall(r"\]\(([a-z-]+\.md)[#)]", open(os.path.join(docs, f)).read()):
                assert os.path.exists(os.path.join(docs, link)), (f, link)
    ok(root, "dpvpnd --version && dpvpnctl --version")
    dataplane_starts(root)

    # enabled, not started: policy-rc.d refuses starts anyway, so the proof
    # that none is asked for is in the maintainer script itself
    wants = root + "/etc/systemd/system/multi-user.target.wants/"
    for unit in ("dpvpnd.service", "dpvpn-dataplane.service"):
        assert os.path.islink(wants + unit), unit
    postinst = open(root + "/var/lib/dpkg/info/dpvpn.postinst").read()
    assert "deb-systemd-invoke" not in postinst and "invoke-rc.d" not in postinst

    # the dataplane unit refuses to start with DPVPN_EAL empty, saying why:
    # its ExecStartPre, with /etc/default/dpvpn as systemd reads it
    unit = open(root + "/usr/lib/systemd/system/dpvpn-dataplane.service").read()
    pre = re.search(r"^ExecStartPre=/bin/sh -c '(.*)'$", unit, re.M).group(1)
    pre = pre.replace("$$", "$")
    r = sh(root, f"set -a; . /etc/default/dpvpn; set +a; /bin/sh -c '{pre}'")
    assert r.returncode == 1 and "set DPVPN_EAL in /etc/default/dpvpn" in r.stderr, r
    r = sh(root, f"DPVPN_EAL='-l 0 --no-pci' /bin/sh -c '{pre}'")
    assert r.returncode == 0, r

    # the example, as the operator would use it: the key files it names
    # written first (0600), then dpvpnd -n says OK
    conf = open(root + EXAMPLES + "/example.conf").read()
    made = []
    for path, cipher in key_files(conf):
        full = os.path.join(EXAMPLES, path)
        ok(root, f"[ -d {os.path.dirname(full)} ] || install -d -m 700 {os.path.dirname(full)}")
        ok(root, f"dpvpnctl genkey {cipher or 'psk'} {full}")
        made.append(full)
    assert len(made) >= 3, made     # the IKE tunnel's PSK, the static one's 2 keys
    r = sh(root, f"dpvpnd -n -c {EXAMPLES}/example.conf")
    assert r.returncode == 0 and "OK" in r.stdout + r.stderr, r.stdout + r.stderr

    # what a running dpvpnd leaves: its sequence state beside the default
    # config, its StateDirectory; purge removes them (dpvpn.postrm)
    ok(root, "umask 077; : > /etc/dpvpn/dpvpn.conf.state; install -d -m 700 /var/lib/dpvpn; "
             ": > /var/lib/dpvpn/seq")

    # purge: first the files the test wrote, then everything the package has
    ok(root, "rm -f " + " ".join(made) + f"; rmdir {EXAMPLES}/keys 2>/dev/null || true")
    listed = ok(root, "dpkg -L dpvpn").split("\n")
    listed = [p for p in listed if p.startswith("/") and p != "/."]
    assert "/usr/sbin/dpvpnd" in listed
    ok(root, "dpkg --purge dpvpn")
    left = []
    for p in listed:
        full = root + p
        if os.path.lexists(full):
            # a directory other packages' files live in stays (dpkg removes a
            # directory it made only when empty)
            if os.path.isdir(full) and os.listdir(full):
                continue
            left.append(p)
    assert not left, left
    for p in ("/etc/dpvpn", "/etc/default/dpvpn", "/var/lib/dpvpn", "/usr/share/doc/dpvpn",
              "/etc/systemd/system/multi-user.target.wants/dpvpnd.service"):
        assert not os.path.lexists(root + p), p
    assert sh(root, "dpkg-query -W dpvpn").returncode != 0    # no trace in dpkg's database
    # what stays, as Debian does: the system user and group (ids may own files)
    assert ok(root, "getent group dpvpn").startswith("dpvpn:")
    print(f"install, check, purge: {time.monotonic() - t:.1f} s")
