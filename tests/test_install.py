# SPDX-License-Identifier: BSD-3-Clause
"""Packaging: `meson install` puts the programs, the man pages and the
systemd units in the usual places; the man pages format without a groff
warning and document every config key the parser knows (taken from
control/config*.c's key tables), every dataplane option and dpvpnctl command;
the units start the installed programs."""
import glob
import os
import re
import subprocess

import pytest

import lab

pytestmark = pytest.mark.control


@pytest.fixture(scope="module")
def dest(tmp_path_factory):
    d = tmp_path_factory.mktemp("destdir")
    r = subprocess.run(["meson", "install", "-C", lab.BUILD, "--quiet", "--destdir", str(d)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    prefix = subprocess.run(["meson", "introspect", "--buildoptions", lab.BUILD],
                            capture_output=True, text=True).stdout
    p = re.search(r'"name": "prefix", "value": "([^"]+)"', prefix).group(1)
    return os.path.join(str(d), p.lstrip("/"))


def test_files_in_place(dest):
    for f in ("sbin/dpvpnd", "sbin/dpvpnctl", "sbin/dpvpn-dataplane",
              "share/man/man8/dpvpnd.8", "share/man/man8/dpvpnctl.8",
              "share/man/man8/dpvpn-dataplane.8", "share/man/man5/dpvpn.conf.5",
              "lib/systemd/system/dpvpnd.service", "lib/systemd/system/dpvpn-dataplane.service"):
        assert os.path.exists(os.path.join(dest, f)), f


def test_units_start_the_installed_programs(dest):
    units = os.path.join(dest, "lib/systemd/system")
    d = open(os.path.join(units, "dpvpnd.service")).read()
    dp = open(os.path.join(units, "dpvpn-dataplane.service")).read()
    assert re.search(r"^ExecStart=/\S+/sbin/dpvpnd -c /etc/dpvpn/dpvpn.conf$", d, re.M)
    assert re.search(r"^ExecStartPre=/\S+/sbin/dpvpnd -n ", d, re.M)
    assert "After=dpvpn-dataplane.service" in d and "Restart=on-failure" in d
    assert re.search(r"^ExecStart=/\S+/sbin/dpvpn-dataplane .* -- --socket ", dp, re.M)
    assert "@SBINDIR@" not in d + dp


def test_man_pages_lint_clean():
    for page in ("dpvpnd.8", "dpvpnctl.8", "dpvpn-dataplane.8", "dpvpn.conf.5"):
        r = subprocess.run(["groff", "-man", "-z", "-ww", os.path.join(lab.ROOT, "doc", page)],
                           capture_output=True, text=True)
        assert r.returncode == 0 and r.stderr == "", (page, r.stderr)


def text_of(page):
    r = subprocess.run(["groff", "-man", "-Tutf8", "-P-cbou", os.path.join(lab.ROOT, "doc", page)],
                       capture_output=True, text=True)
    return r.stdout


def test_every_config_key_documented():
    src = "".join(open(f).read() for f in glob.glob(os.path.join(lab.ROOT, "control",
                                                                  "config*.c")))
    keys = set()
    for table in re.findall(r"static const struct key_def \w+\[\] = \{(.*?)\};", src, re.S):
        keys |= set(re.findall(r'\{ "([a-z0-9-]+)",', table))
    assert len(keys) > 40
    page = open(os.path.join(lab.ROOT, "doc", "dpvpn.conf.5")).read()   # keys as written
    missing = [k for k in sorted(keys) if not re.search(rf"(^|[\s,]){re.escape(k)}([\s,]|$)",
                                                          page, re.M)]
    assert not missing, missing


def test_every_option_documented():
    dp = text_of("dpvpn-dataplane.8")
    for opt in ("--socket", "--idle-sleep-us", "--max-sa", "--no-spread", "--jumbo"):
        assert opt in dp, opt
    usage = subprocess.run([lab.DATAPLANE, "--no-pci", "--no-huge", "-m", "64", "--file-prefix",
                            f"dpvpn-usage-{os.getpid()}", "--log-level", "*:error", "--",
                            "--help"], capture_output=True, text=True, timeout=60)
    for opt in re.findall(r"(--[a-z-]+)", usage.stdout + usage.stderr):
        if opt not in ("--socket",) and not opt.startswith("--log"):
            assert opt in dp or opt in ("--", ), opt
    ctl = text_of("dpvpnctl.8")
    for cmd in ("status", "show sa", "show ports", "show counters", "show policies", "reload",
                "tunnel", "clear", "monitor", "trace", "route add", "neighbour del",
                "show routes", "policy add", "sa del", "--json", "--version", "genkey"):
        assert cmd in ctl, cmd


@pytest.mark.parametrize("args,says", [
    (("--max-sa", "1"), "--max-sa: '1' is not 2.."),
    (("--desc", "x"), "--desc: 'x' is not"),
    (("--idle-sleep-us", "100001"), "--idle-sleep-us: '100001' is not 0..100000"),
    (("--idle-sleep-us", ""), "--idle-sleep-us: '' is not 0..100000"),
    (("--host-mbufs", "1"), "--host-mbufs: '1' is not"),
    (("--tester", "0"), "--tester: '0' is not 1.."),
    (("--tester-inner", "1.2.3"), "--tester-inner: '1.2.3' is not an IPv4 address"),
    (("--tester-loop",), "--tester-loop: only with --tester N"),
    (("--max-routes", "64"), None),     # in range: only the missing --socket is said
])
def test_dataplane_names_a_bad_option(args, says):
    """Each bad command-line value is refused before anything starts, with an
    error that names the option and its bounds (dataplane/main.c num_opts)."""
    r = subprocess.run([lab.DATAPLANE, "--no-pci", "--no-huge", "-m", "64", "--file-prefix",
                        f"dpvpn-args-{os.getpid()}", "--log-level", "*:error", "--", *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert (says or "--socket: required") in r.stderr, r.stderr
