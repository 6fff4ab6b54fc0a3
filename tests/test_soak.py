# SPDX-License-Identifier: BSD-3-Clause
"""The soak (tests/helpers/soak.py) for 30 s (DPVPN_SOAK_SECONDS; 60 until CI's
default pass neared its 30-minute budget; CI runs it in the ASan pass only,
20 s, and the normal build's run with DPVPN_LONG=1): mixed sizes, reloads, SA add/delete and
rekeys every few seconds; at the end the packet pools are back where they
started, RSS grew by at most 4 MiB after the warm-up round, and every
gateway's counters balance.  The 10-minute run: `tests/helpers/soak.py`."""
import os

import pytest

import soak

pytestmark = pytest.mark.hardening


def test_soak_30s():
    # CI runs the soak once, in the ASan pass, where it finds most (leaks, use
    # after free in reload and rekey paths; counters and pools are checked
    # there too); the normal build's run (its RSS bound) on request.
    sanitized = bool(os.environ.get("DPVPN_SANITIZER_LOGS"))
    if not sanitized and not os.environ.get("DPVPN_LONG"):
        pytest.skip("the soak runs in scripts/test's ASan pass; here: DPVPN_LONG=1")
    # ASan keeps freed memory in quarantine (by design, up to 256 MiB), so
    # RSS says nothing there; LeakSanitizer checks for leaks instead.
    bound = 1 << 20 if sanitized else 4
    seconds = int(os.environ.get("DPVPN_SOAK_SECONDS", "30"))
    failures, figures = soak.run(seconds=seconds, rss_bound_mib=bound)
    assert not failures, failures
    assert figures["rounds"] >= seconds // 6 and figures["reloads"] >= seconds // 3, figures
