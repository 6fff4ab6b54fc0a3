# SPDX-License-Identifier: BSD-3-Clause
"""pytest set-up for dpvpn's end-to-end tests (run them with scripts/test)."""
import os
import sys

import pytest

# The helpers (lab, swan, frr, pcapgw, esp_oracle, flood, soak, testerlab)
# live in tests/helpers/: the test files import them by name.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers"))

import lab  # noqa: E402

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
    "ops": "the [ops] issue (27): what an operator meets in the second week",
    "ci": "the [ci] issue (31): every test in CI's default pass",
    "house": "the [house] issue (29): the code's structure, no behaviour change",
    "ha": "the [ha] issue (30): two gateways, one set of tunnels (state sync, takeover)",
    "frr": "BGP and BFD with FRR over route-based tunnels (FRR's daemons per namespace)",
    "package": "builds the .deb and installs it into a clean Debian 12 root (lintian, purge); "
               "left out of the sanitizer pass (it builds its own package, not build-asan)",
    "slow": "long (tens of seconds): left out of the sanitizer pass",
    "nosan": "left out of the sanitizer pass: it asserts a rate, a ratio or a latency "
             "(ASan's slowdown makes it meaningless), or repeats at random what other "
             "tests run under ASan",
    "long": "a minute or more of trials (a search, a second variant of a 1 000-tunnel "
            "case): in the default pass, left out of the sanitizer pass",
}

# What the default pass (`scripts/test` with no arguments, which is what CI
# runs) leaves out, each with why: only benchmarks and minute-scale soaks may
# be here.  The default pass fails (pytest_sessionfinish below) if a test is
# deselected or skipped there without a line here, and
# tests/test_docs.py::test_default_pass_collects_every_test checks that
# scripts/test narrows nothing and that every test file and test function is
# collected.  Keys are node ids (a test, or a file with every test in it).
ON_REQUEST = {
    "test_soak.py::test_soak_30s":
        "the normal build's soak with its RSS bound (30 s and more of mixed traffic, "
        "reloads and rekeys; `DPVPN_LONG=1 scripts/test -k soak`, or the 10-minute "
        "`tests/helpers/soak.py`): CI runs the same soak for 20 s in its ASan pass, where it "
        "finds leaks and use after free",
}


def listed(nodeid):
    """The ON_REQUEST line covering this node id, or None."""
    for key, why in ON_REQUEST.items():
        if nodeid == key or nodeid.startswith(key + "[") or nodeid.startswith(key + "::"):
            return why
    return None


def pytest_configure(config):
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


def default_pass(config):
    """True for scripts/test's pytest run with nothing narrowing it (CI's)."""
    return (not config.option.markexpr and not config.option.keyword
            and not os.environ.get("DPVPN_SANITIZER_LOGS")
            and all(os.path.basename(os.path.normpath(a)) == "tests"
                    for a in config.args))


_out_of_default = []


def pytest_deselected(items):
    _out_of_default.extend(i.nodeid for i in items)


def pytest_runtest_logreport(report):
    # a skip in set-up (skipif, a fixture's skip) or in the call
    if report.skipped and not hasattr(report, "wasxfail"):
        _out_of_default.append(report.nodeid)


@pytest.fixture(scope="session", autouse=True)
def _built():
    if os.geteuid() != 0:
        pytest.exit("the end-to-end tests need root (namespaces, hugepages)", 2)
    for exe in (lab.DATAPLANE, lab.DPVPND, lab.DPVPNCTL):
        if not os.access(exe, os.X_OK):
            pytest.exit(f"{exe} is missing: run scripts/test (it builds first)", 2)


# Tests leave the host alone ([ops] issue 27): what a test may change lives in
# its own temporary directories and namespaces.  These are read before the
# session and compared after every test, naming the test that changed one.
HOST_FILES = ("/etc/resolv.conf", "/etc/hosts", "/proc/sys/vm/nr_hugepages")


def host_state():
    out = {}
    for path in HOST_FILES:
        try:
            with open(path, "rb") as f:
                out[path] = f.read()
        except OSError as e:
            out[path] = f"unreadable: {e.strerror}".encode()
    return out


_host_before = host_state()


def host_changes(before, after):
    """The host files that differ, each with what it held and holds."""
    return [f"{p}: was {before[p][:200]!r}, now {after[p][:200]!r}"
            for p in before if after.get(p) != before[p]]


def restore(before, after):
    """Puts back what a test changed, so that one test fails, not every later one."""
    for path in before:
        if after.get(path) != before[path]:
            try:
                with open(path, "wb") as f:
                    f.write(before[path])
            except OSError:
                pass


@pytest.fixture(autouse=True)
def _host_untouched():
    yield
    after = host_state()
    changed = host_changes(_host_before, after)
    if changed:
        restore(_host_before, after)
        pytest.fail("the test changed the host:\n" + "\n".join(changed), pytrace=False)


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
    if default_pass(session.config):
        unlisted = sorted({n for n in _out_of_default if not listed(n)})
        if unlisted:
            print("\nthe default pass left out tests that tests/conftest.py's ON_REQUEST "
                  "does not list with a reason (a missing package? a new marker?):\n  "
                  + "\n  ".join(unlisted))
            session.exitstatus = 1
