# SPDX-License-Identifier: BSD-3-Clause
"""Issue 13, items 9 and 10: what an operator meets first, before a packet.

- --version and --help of dpvpn-dataplane (before EAL starts), dpvpnd and
  dpvpnctl: exit 0, stdout, one version string (meson.build's).
"""
import os
import re

import pytest

import lab

pytestmark = pytest.mark.operator

PROGRAMS = {"dpvpn-dataplane": lab.DATAPLANE, "dpvpnd": lab.DPVPND, "dpvpnctl": lab.DPVPNCTL}


def project_version():
    with open(os.path.join(lab.ROOT, "meson.build")) as f:
        return re.search(r"version:\s*'([^']+)'", f.read()).group(1)


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
