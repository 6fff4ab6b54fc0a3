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
    "operator": "the [operator] issue (13): what an operator hits first",
    "fastpath": "the [fastpath] issue (14): per-core speed",
    "tester": "the [tester] issue (15): dpvpn as the tester of another gateway",
    "ikepki": "the [ikepki] issue (16): certificates, proposals, PFS, CHILD_SAs, remote access",
    "deploy": "the [deploy] issue (17): host path, route-based tunnels, package, docs",
    "frr": "BGP with FRR over route-based tunnels: not in the default pass (`scripts/test -m frr`)",
    "package": "builds the .deb and installs it into a clean Debian 12 root: not in the "
               "default pass (`scripts/test -m package`)",
    "slow": "long (tens of seconds): left out of the sanitizer pass",
    "nosan": "left out of the sanitizer pass: it asserts a rate, a ratio or a latency "
             "(ASan's slowdown makes it meaningless), or repeats at random what other "
             "tests run under ASan",
    "long": "a minute or more of trials (a search, a second variant of a 1 000-tunnel "
            "case): not in the default pass; run them with `scripts/test -m long` "
            "or DPVPN_LONG=1",
}


def pytest_configure(config):
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


# Markers whose tests run only when a -m expression names them (or, for
# `long`, DPVPN_LONG=1): CI's default pass stays under its time budget.
ON_REQUEST = ("long", "frr", "package")


def pytest_collection_modifyitems(config, items):
    """`long`, `frr` and `package` tests run only when asked for."""
    expr = config.option.markexpr or ""
    skip = {m for m in ON_REQUEST if m not in expr}
    if os.environ.get("DPVPN_LONG"):
        skip.discard("long")
    keep = [i for i in items if not any(i.get_closest_marker(m) for m in skip)]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep


@pytest.fixture(scope="session", autouse=True)
def _built():
    if os.geteuid() != 0:
        pytest.exit("the end-to-end tests need root (namespaces, hugepages)", 2)
    for exe in (lab.DATAPLANE, lab.DPVPND, lab.DPVPNCTL):
        if not os.access(exe, os.X_OK):
            pytest.exit(f"{exe} is missing: run scripts/test (it builds first)", 2)


# scripts/sanitize runs the suite against the ASan+UBSan build with every
# report written to a file in this directory (ASAN_OPTIONS log_path).
SANITIZER_LOGS = os.environ.get("DPVPN_SANITIZER_LOGS")
_reported = set()


def _new_sanitizer_reports():
    if not SANITIZER_LOGS or not os.path.isdir(SANITIZER_LOGS):
        return []
    new = sorted(set(os.listdir(SANITIZER_LOGS)) - _reported)
    _reported.update(new)
    out = []
    for name in new:
        with open(os.path.join(SANITIZER_LOGS, name), errors="replace") as f:
            out.append(f"{name}:\n{f.read()[:4000]}")
    return out


@pytest.fixture(autouse=True)
def _sanitizer_clean():
    """Fails the test during which a process wrote a sanitizer report (a
    report of a module's lab, written when it stops, fails the session)."""
    yield
    reports = _new_sanitizer_reports()
    if reports:
        pytest.fail("sanitizer report(s):\n" + "\n".join(reports), pytrace=False)


def pytest_sessionfinish(session, exitstatus):
    reports = _new_sanitizer_reports()
    if reports:
        print("\nsanitizer report(s) after the last test:\n" + "\n".join(reports))
        session.exitstatus = 1
