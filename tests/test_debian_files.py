# SPDX-License-Identifier: BSD-3-Clause
"""The Debian package's files agree with the tree, without building it (the
default pass; tests/test_package.py builds and installs it, `-m package`):
every file `meson install` installs is one debian/dpvpn.install ships (and
each line there is one meson installs), debian/control's Build-Depends are
all in scripts/packages.txt (what CI installs), the examples and docs it
names exist, the example configuration passes `dpvpnd -n` once the key files
it names exist, and `systemd-analyze verify` finds nothing in the units."""
import fnmatch
import glob
import json
import os
import re
import shutil
import subprocess

import pytest

import lab

pytestmark = pytest.mark.deploy

DEBIAN = os.path.join(lab.ROOT, "debian")
# debian/rules: dh's meson (--prefix=/usr --sysconfdir=/etc) and
# -Dsystemdunitdir=/lib/systemd/system
PKG_PREFIX = "usr"
PKG_UNITDIR = "lib/systemd/system"


def introspect():
    """meson introspect's installed files and build options, in one call."""
    r = subprocess.run(["meson", "introspect", lab.BUILD, "--installed", "--buildoptions"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    return j["installed"], j["buildoptions"]


def package_paths(installed, options):
    """Where each file meson installs lands in the package, relative to /."""
    opt = {o["name"]: o["value"] for o in options}
    prefix = opt["prefix"].rstrip("/")
    unitdir = (opt.get("systemdunitdir") or prefix + "/lib/systemd/system").rstrip("/")
    sysconfdir = os.path.join(prefix, opt["sysconfdir"]).rstrip("/")   # dh: /etc
    out = {}
    for src, dst in installed.items():
        if os.path.dirname(dst) == unitdir:
            out[src] = PKG_UNITDIR + "/" + os.path.basename(dst)
        elif dst.startswith(sysconfdir + "/"):
            out[src] = "etc" + dst[len(sysconfdir):]
        else:
            assert dst.startswith(prefix + "/"), f"{src} installs outside the prefix: {dst}"
            out[src] = PKG_PREFIX + dst[len(prefix):]
    return out


def lines(path):
    with open(path) as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.lstrip().startswith("#")]


def test_meson_install_is_the_package_layout():
    paths = package_paths(*introspect())
    assert len(paths) >= 9, paths      # 3 programs, 4 man pages, 2 units
    shipped = lines(os.path.join(DEBIAN, "dpvpn.install"))
    missing = sorted(p for p in paths.values()
                     if not any(fnmatch.fnmatch(p, pat) for pat in shipped))
    assert not missing, f"meson installs them, debian/dpvpn.install does not ship them: {missing}"
    stale = [pat for pat in shipped
             if not any(fnmatch.fnmatch(p, pat) for p in paths.values())]
    assert not stale, f"debian/dpvpn.install ships what meson does not install: {stale}"


def build_depends():
    text = open(os.path.join(DEBIAN, "control")).read()
    m = re.search(r"^Build-Depends:(.*?)(?=^\S)", text, re.M | re.S)
    names = set()
    for dep in m.group(1).split(","):
        dep = dep.split("|")[0]
        dep = re.sub(r"\(.*?\)|<.*?>|\[.*?\]", "", dep).strip()
        if dep:
            names.add(dep)
    return names


def test_build_depends_in_packages_txt():
    deps = build_depends()
    assert {"debhelper-compat", "meson", "libdpdk-dev"} <= deps, deps
    # debhelper-compat (= 13) is a virtual package that debhelper provides
    deps = {"debhelper" if d == "debhelper-compat" else d for d in deps}
    # "PKG @TAG": installed for the tests of marker TAG only (scripts/setup)
    have = {ln.split()[0] for ln in lines(os.path.join(lab.ROOT, "scripts", "packages.txt"))}
    missing = sorted(deps - have)
    assert not missing, f"debian/control Build-Depends not in scripts/packages.txt: {missing}"


def test_examples_and_docs_exist():
    for name in ("dpvpn.examples", "dpvpn.docs"):
        for pat in lines(os.path.join(DEBIAN, name)):
            assert glob.glob(os.path.join(lab.ROOT, pat)), f"debian/{name}: {pat}"
    assert os.path.exists(os.path.join(lab.ROOT, "doc", "package.md"))


def test_example_config_checks(tmp_path):
    """dpvpnd -n accepts configs/example.conf with the key files it names
    (the [control] group, dpvpn, is the package's: root here)."""
    text = open(os.path.join(lab.CONFIGS, "example.conf")).read()
    assert re.search(r"^group = dpvpn$", text, re.M)
    conf = tmp_path / "example.conf"
    conf.write_text(re.sub(r"^group = dpvpn$", "group = root", text, flags=re.M))
    cipher = None
    written = 0
    for line in text.splitlines():
        m = re.match(r"([a-z-]+) = (\S+)$", line)
        if not m:
            continue
        k, v = m.groups()
        if k == "cipher":
            cipher = v
        elif k in ("out-key-file", "in-key-file", "psk-file"):
            f = tmp_path / v
            f.parent.mkdir(mode=0o700, exist_ok=True)
            r = subprocess.run([lab.DPVPNCTL, "genkey", "psk" if k == "psk-file" else cipher,
                                str(f)], capture_output=True, text=True, timeout=10)
            assert r.returncode == 0, r.stderr
            written += 1
    assert written >= 3
    r = subprocess.run([lab.DPVPND, "-n", "-c", str(conf)], capture_output=True, text=True,
                       timeout=10)
    assert r.returncode == 0 and "OK" in r.stdout + r.stderr, r.stdout + r.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_units_verify(tmp_path):
    """systemd-analyze verify on the units as built, the programs being the
    build's (the units name the installed ones)."""
    units = []
    for u in ("dpvpnd.service", "dpvpn-dataplane.service"):
        text = open(os.path.join(lab.BUILD, u)).read()
        text = re.sub(r"/\S*/sbin/dpvpnd\b", lab.DPVPND, text)
        text = re.sub(r"/\S*/sbin/dpvpn-dataplane\b", lab.DATAPLANE, text)
        (tmp_path / u).write_text(text)
        units.append(str(tmp_path / u))
    r = subprocess.run(["systemd-analyze", "verify", "--man=no"] + units, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0 and r.stdout + r.stderr == "", r.stdout + r.stderr
