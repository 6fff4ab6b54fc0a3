# SPDX-License-Identifier: BSD-3-Clause
"""perf/secgw_bench.py works: DPDK's ipsec-secgw, patched and built from
dpdk-doc, encrypts and decrypts dpbench's captures correctly and carries the
replayed capture without loss.  Short runs; no figure is judged here (the
dpvpn / ipsec-secgw targets are perf/run's output)."""
import os
import sys

import pytest

import lab

pytestmark = pytest.mark.perf
sys.path.insert(0, os.path.join(lab.ROOT, "perf"))
import secgw_bench  # noqa: E402


@pytest.fixture(scope="module")
def built():
    if not os.path.isdir(secgw_bench.SECGW_SRC):
        pytest.skip(f"{secgw_bench.SECGW_SRC} missing (dpdk-doc, see scripts/packages.txt)")
    return secgw_bench.build()     # about 10 s the first time, then cached


@pytest.mark.parametrize("mode", list(secgw_bench.MODES))
def test_secgw_output_is_correct_esp(built, tmp_path, mode):
    assert secgw_bench.verify("aes128-gcm", 64, mode, workdir=str(tmp_path)) == \
        {"encap": secgw_bench.dpbench.FLOWS, "decap": secgw_bench.dpbench.FLOWS}


@pytest.mark.parametrize("direction", ["encap", "decap"])
def test_secgw_bench_moves_replayed_packets(built, tmp_path, direction):
    # decap: the replayed sequence numbers must not be dropped as replays
    r = secgw_bench.run_case("aes128-gcm", direction, 1420, seconds=0.5, warmup=0.3,
                             workdir=str(tmp_path))
    assert r["mpps"] > 0.01 and r["drops"] == {}, r
    assert r["impl"] == "ipsec-secgw" and r["workers"] == 1, r
