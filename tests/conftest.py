# SPDX-License-Identifier: BSD-3-Clause
"""pytest set-up for dpvpn's end-to-end tests (run them with scripts/test)."""
import os

import pytest

import lab

MARKERS = {
    "tunnel": "the [tunnel] issue: ESP tunnel end to end",
    "perf": "the [perf] issue",
    "esp": "the [esp] issue",
    "scale": "the [scale] issue",
    "control": "the [control] issue",
    "hardening": "the [hardening] issue",
    "ike": "the [ike] issue",
    "strongswan": "live interop with strongSwan",
}


def pytest_configure(config):
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


@pytest.fixture(scope="session", autouse=True)
def _built():
    if os.geteuid() != 0:
        pytest.exit("the end-to-end tests need root (namespaces, hugepages)", 2)
    for exe in (lab.DATAPLANE, lab.DPVPND, lab.DPVPNCTL):
        if not os.access(exe, os.X_OK):
            pytest.exit(f"{exe} is missing: run scripts/test (it builds first)", 2)
