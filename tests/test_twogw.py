# SPDX-License-Identifier: BSD-3-Clause
"""The two-gateway benchmark (perf/twogw.py) works: a short run, no figure judged.

    dpvpn-pktgen port 0 ==veth== [inside] gw A [outside] ==veth== [outside] gw B [inside] ==veth== port 1

The links are veth pairs in a namespace of the run's own (dpvpn-2gw-*),
driven with net_af_packet: slower than memif but it never crashes at
shutdown.  At a low rate not one packet may be lost, and the row must carry
every field perf/run, plot.py and tables.py read."""
import json
import os
import subprocess
import sys

import pytest

import lab

pytestmark = [
    pytest.mark.perf,
    pytest.mark.skipif(not os.access(os.path.join(lab.BUILD, "perf", "pktgen", "dpvpn-pktgen"),
                                     os.X_OK), reason="dpvpn-pktgen not built"),
]
sys.path.insert(0, os.path.join(lab.ROOT, "perf"))
import twogw  # noqa: E402

COUNT = 3000


def namespaces():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.startswith(twogw.NS_PREFIX)}


def test_two_gateways_row(tmp_path):
    before = namespaces()
    r = twogw.run_case("aes128-gcm", 512, links="af_packet", seconds=0.5,
                       lat_rate="10kpps", lat_count=COUNT, workdir=str(tmp_path))
    assert namespaces() == before, "a dpvpn-2gw- namespace was left behind"
    json.dumps(r)                                    # it goes into perf/run's JSON
    for k in ("cipher", "size", "direction", "workers", "mpps", "gbps", "loss_ratio",
              "latency_ns", "cdf", "cpus", "shared_cpus"):
        assert k in r, k
    assert (r["cipher"], r["size"], r["direction"], r["workers"]) == \
        ("aes128-gcm", 512, "two-gateways", 1)
    assert r["mpps"] > 0.001 and r["gbps"] > 0, r
    assert 0 <= r["loss_ratio"] < 1
    # Low rate: every packet went through A and B and came back.
    assert r["latency_loss_ratio"] == 0, r
    lat = r["latency_ns"]
    assert lat["samples"] == COUNT and lat["skipped"] == 0, lat
    assert 0 < lat["min"] <= lat["p50"] <= lat["p99"] <= lat["p999"] <= lat["max"], lat
    for gw, want in (("gw-a", "encrypted"), ("gw-b", "decrypted")):
        c = r["gateways"]["latency"][gw]
        assert c[want] == COUNT and c["drops"] == {}, (gw, c)
    # The CDF: from the minimum to the maximum, never decreasing, ending at 1.
    cdf = r["cdf"]
    assert len(cdf) >= 5 and cdf[0] == [lat["min"], 0.0] and cdf[-1] == [lat["max"], 1.0]
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(cdf, cdf[1:])), cdf
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".sock")]


def test_placement_uses_the_cpus_there_are():
    two = twogw.placement(2)
    assert two["shared_cpus"] and two["gw-a"] != two["gw-b"]
    many = twogw.placement(16)
    cpus = many["pktgen"] + [many["gw-a"], many["gw-b"]]
    assert not many["shared_cpus"] and len(set(cpus)) == 4 and 0 not in cpus
