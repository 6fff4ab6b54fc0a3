# SPDX-License-Identifier: BSD-3-Clause
"""Issue 14 ([fastpath]), the measurement harness: the ceiling is the fastest
crypto engine, decap figures carry the anti-replay check, a repetition that
shared its worker's CPU is caught, the harness's own cost is measured, and
the main lcore sleeps while workers busy-poll.  Short runs; no figure is
judged (benchmarks stay out of the tests)."""
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import time
import types

import pytest

import lab

pytestmark = pytest.mark.fastpath
sys.path.insert(0, os.path.join(lab.ROOT, "perf"))
import dpbench  # noqa: E402
import espgen  # noqa: E402
import harness  # noqa: E402
import probe  # noqa: E402

CRYPTOBENCH = os.path.join(lab.BUILD, "perf", "dpvpn-cryptobench")


def perf_run():
    """perf/run as a module (it is a script without .py)."""
    path = os.path.join(lab.ROOT, "perf", "run")
    loader = importlib.machinery.SourceFileLoader("perf_run", path)
    spec = importlib.util.spec_from_loader("perf_run", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def test_ceiling_is_the_fastest_engine_with_the_burst_beside_it():
    """ipsec-mb-direct exists for the AEADs (checked against OpenSSL inside
    cryptobench before it is timed), not for CBC+HMAC; perf/run's ceiling is
    the fastest engine of each case and keeps the burst figure."""
    r = subprocess.run([CRYPTOBENCH, "--alg", "aes128-gcm,aes256-gcm,chacha20-poly1305,"
                        "aes128-cbc-sha1", "--size", "64,1420", "--ms", "5", "--reps", "1",
                        "--engine", "ipsec-mb-direct,ipsec-mb-burst", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    cb = json.loads(r.stdout)
    engines = {(x["alg"], x["engine"]) for x in cb["rows"]}
    for alg in ("aes128-gcm", "aes256-gcm", "chacha20-poly1305"):
        assert (alg, "ipsec-mb-direct") in engines
    assert ("aes128-cbc-sha1", "ipsec-mb-direct") not in engines
    run = perf_run()
    for alg in ("aes128-gcm", "chacha20-poly1305", "aes128-cbc-sha1"):
        for d, cd in (("encap", "encrypt"), ("decap", "decrypt")):
            rows = [x for x in cb["rows"] if (x["alg"], x["size"], x["dir"]) == (alg, 64, cd)]
            c = run.ceiling(cb, alg, 64, d)
            best = max(rows, key=lambda x: x["gbps"])
            assert (c["gbps"], c["engine"]) == (best["gbps"], best["engine"])
            assert c["burst_gbps"] == [x["gbps"] for x in rows
                                       if x["engine"] == "ipsec-mb-burst"][0]


@pytest.mark.parametrize("cipher", sorted(espgen.TRANSFORMS))
def test_long_capture_is_esp_a_peer_would_send(cipher):
    """espgen's frames (the decap captures) open with scapy's ESP and the
    bench keys, sequence numbers counting up per SPI."""
    from scapy.all import IP, Ether
    from scapy.layers.ipsec import ESP, SecurityAssociation
    from esp_oracle import CIPHERS
    key, auth = (bytes.fromhex(x) for x in dpbench.keys(cipher, "in"))
    inner = bytes(dpbench.inner(3, 100, "198.18.2.2", "198.18.1.2"))
    eth = bytes(6) + bytes(6) + b"\x08\x00"
    frames = espgen.esp_frames(cipher, key, auth, [(0x2001, inner), (0x2002, inner)], eth,
                               "198.19.0.2", "198.19.0.1")
    crypt, _, _, alg, _, _, _ = CIPHERS[cipher]
    sa = SecurityAssociation(ESP, spi=0x2001, crypt_algo=crypt, crypt_key=key or None,
                             auth_algo=alg, auth_key=auth or None,
                             tunnel_header=IP(src="198.19.0.2", dst="198.19.0.1"))
    got = [Ether(next(frames)) for _ in range(4)]
    assert [(p[ESP].spi, p[ESP].seq) for p in got] == \
        [(0x2001, 1), (0x2002, 1), (0x2001, 2), (0x2002, 2)]
    for p in (got[0], got[2]):
        assert bytes(sa.decrypt(p[IP])) == inner


def test_decap_runs_with_anti_replay_on_inside_the_window(tmp_path):
    """Decap over the first pass of a long capture with replay-window 1024:
    nothing dropped inside the measured window, and once the capture starts
    again its packets are dropped as replays, so the check ran."""
    r = dpbench.run_case("aes128-gcm", "decap", 1420, workdir=str(tmp_path))
    assert r["anti_replay"] is True and r["replay_window"] == 1024, r
    assert r["drops"] == {} and r["mpps"] > 0.01, r
    assert r["window_packets"] >= r["capture_packets"] / 4, r
    assert r["replayed_after_pass"] > 0, r


@pytest.fixture
def hog():
    """A busy loop on the first worker's CPU, at the same priority."""
    cpu = dpbench.worker_cpus(1)[0]
    p = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                         preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    yield p
    p.kill()
    p.wait(5)


def test_a_repetition_that_shared_the_workers_cpu_is_discarded(hog, tmp_path):
    """With a busy loop on the worker's CPU every repetition is caught by the
    scheduler's accounting: the first is discarded and run again, and the
    one kept (no clean one left) says it was disturbed."""
    run = perf_run()
    a = types.SimpleNamespace(reps=1, retries=1, max_rq_wait=0.01)
    used, discarded = run.repeat(a, lambda: dpbench.run_case(
        "aes128-gcm", "encap", 64, seconds=1.0, warmup=0.3, workdir=str(tmp_path)))
    assert len(used) == 1 and len(discarded) == 1, (used, discarded)
    assert "waited for its CPU" in discarded[0]["why"], discarded
    assert "waited for its CPU" in used[0]["disturbed"], used[0]
    assert used[0]["sched"]["rq_wait_share"] > 0.2, used[0]["sched"]
    row = run.median_of(used, discarded)
    assert row["disturbed_reps"] == 1


def test_harness_cost_measured_by_testpmd(tmp_path):
    if not harness.available():
        pytest.skip(f"{harness.TESTPMD} missing (Debian package dpdk)")
    r = harness.run_case("aes128-gcm", "encap", 64, seconds=1.0, warmup=0.3,
                         workdir=str(tmp_path))
    assert r["cycles_per_packet"] > 0 and r["mpps"] > 0.01, r
    assert r["sched"]["window_s"] > 0.5, r


def test_main_lcore_sleeps_while_a_worker_busy_polls():
    """Gateway A with --idle-sleep-us 0: over 2 s its worker never sleeps
    while the main lcore (control socket, ARP/ND, IKE rings) uses a small
    share of a CPU; then ARP and a ping through the tunnel still work (A's
    main lcore answers host A's ARP and resolves gateway B)."""
    with lab.Lab(dp_args_a=("--idle-sleep-us", "0")) as n:
        pid = n.a.dataplane.p.pid
        time.sleep(0.5)
        t0 = probe.threads(pid)
        time.sleep(2.0)
        use = probe.usage(t0, probe.threads(pid))
        main = use[pid]
        workers = [use[t] for t in probe.lcore_threads(t0)]
        assert main["comm"] == "dpvpn-dataplane", use
        assert workers and all(w["vcs"] == 0 for w in workers), use     # busy-polled
        assert main["cpu_share"] < 0.2, use
        t = time.monotonic()
        r = n.ping(count=3)
        assert r.returncode == 0, r.stdout + r.stderr
        assert time.monotonic() - t < 10
