# SPDX-License-Identifier: BSD-3-Clause
"""Issue 14 ([fastpath]), the measurement harness: decap figures carry the
anti-replay check, and the main lcore sleeps while workers busy-poll.  Short
runs; no figure is judged (benchmarks stay out of the tests)."""
import os
import sys
import time

import pytest

import lab

pytestmark = pytest.mark.fastpath
sys.path.insert(0, os.path.join(lab.ROOT, "perf"))
import dpbench  # noqa: E402
import espgen  # noqa: E402
import probe  # noqa: E402


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
