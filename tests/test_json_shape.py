# SPDX-License-Identifier: BSD-3-Clause
"""dpvpnctl --json against the shapes documented in control/ctl_proto.h:
every member of every reply (nested ones too) is named there, numbers are
non-negative integers, SPIs "0x%08x", addresses and prefixes parse, booleans
are booleans.  A member added without documentation fails this."""
import ipaddress
import os
import re

import pytest

import lab

pytestmark = pytest.mark.control

DOC = open(os.path.join(lab.ROOT, "control", "ctl_proto.h")).read()
ADDR_KEYS = {"local", "remote", "via", "address"}
PREFIX_KEYS = {"local_ts", "remote_ts", "local_ts_list", "remote_ts_list", "src", "dst", "address", "address6", "extra_addresses"}


@pytest.fixture(scope="module")
def net():
    with lab.Lab() as n:
        n.ping(count=3)
        yield n


def walk(obj, path, bad):
    if isinstance(obj, dict):
        for k, v in obj.items():
            # drop reasons are the DPVPN_DROP_REASONS names, documented there
            if not path.endswith("drops") and f'"{k}"' not in DOC:
                bad.append(f"{path}.{k}: not documented in ctl_proto.h")
            check_value(k, v, f"{path}.{k}", bad)
            walk(v, f"{path}.{k}", bad)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            walk(v, f"{path}[{i}]", bad)


def check_value(k, v, path, bad):
    if isinstance(v, int) and not isinstance(v, bool) and v < 0:
        bad.append(f"{path}: negative {v}")
    if k == "spi" and not re.fullmatch(r"0x[0-9a-f]{8}", v):
        bad.append(f"{path}: SPI {v!r}")
    if isinstance(v, str) and k in ADDR_KEYS | PREFIX_KEYS:
        try:
            (ipaddress.ip_network(v, strict=False) if "/" in v else ipaddress.ip_address(v))
        except ValueError:
            bad.append(f"{path}: not an address or prefix: {v!r}")
    if (k in ("active", "static", "started", "esn") or (k == "encrypted" and "sas[" in path)) \
            and not isinstance(v, bool):
        bad.append(f"{path}: not a boolean")


@pytest.mark.parametrize("what", [("status",), ("show", "sa"), ("show", "ports"),
                                  ("show", "counters"), ("show", "policies"),
                                  ("show", "routes"), ("show", "neighbours"),
                                  ("show", "lcores"), ("show", "tunnels"),
                                  ("show", "trace")])
def test_reply_matches_the_documentation(net, what):
    result = net.a.ctl(*what)
    bad = []
    walk(result, " ".join(what), bad)
    assert not bad, bad
