# SPDX-License-Identifier: BSD-3-Clause
"""dpvpn-pktgen on virtual ports ([perf] issue): no namespaces needed.

    net_ring0: TX queue 0 --ring--> RX queue 0   (generator and sink in one)
    net_pcap0: tx_pcap=FILE  (what the generator builds, byte for byte)
    net_pcap0: rx_pcap=FILE  (crafted input: reordering, duplicates, foreign)
"""
import json
import os
import struct
import subprocess

import pytest

import lab

PKTGEN = os.path.join(lab.BUILD, "perf", "pktgen", "dpvpn-pktgen")
MAGIC = 0x4E475044
PAYLOAD = struct.Struct("<IHQQ")       # magic, flow, seq, tsc (host order)
HDR_LEN = 42                           # Ethernet + IPv4 + UDP

pytestmark = [
    pytest.mark.perf,
    pytest.mark.skipif(not os.access(PKTGEN, os.X_OK), reason=f"{PKTGEN} not built"),
]


def pktgen(tmp_path, vdev, *opts, timeout=20):
    """Run one pktgen; returns (exit status, parsed JSON or None, stderr)."""
    eal = ["--no-pci", *lab.eal_mem_args(), "--file-prefix", f"pgt{os.getpid()}",
           "-l", "0,1", "--log-level", "lib.eal:warning", "--vdev", vdev]
    p = subprocess.run([PKTGEN, *eal, "--", *opts], capture_output=True, text=True,
                       timeout=timeout, cwd=tmp_path)
    out = json.loads(p.stdout) if p.returncode == 0 and "--json" in opts else None
    return p.returncode, out, p.stderr


def ip_sum_ok(hdr):
    s = sum(struct.unpack("!10H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    off, frames = 24, []
    while off < len(data):
        _, _, caplen, _ = struct.unpack_from("<IIII", data, off)
        frames.append(data[off + 16:off + 16 + caplen])
        off += 16 + caplen
    return frames


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for fr in frames:
            f.write(struct.pack("<IIII", 0, 0, len(fr), len(fr)) + fr)


def own_frame(flow, seq, tsc=2**64 - 1, size=64):
    eth = b"\xff" * 6 + b"\x02" + b"\x00" * 5 + b"\x08\x00"
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, size - 14, 0, 0, 64, 17, 0,
                     bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2]))
    udp = struct.pack("!HHHH", 10000, 20000, size - 34, 0)
    body = PAYLOAD.pack(MAGIC, flow, seq, tsc)
    return (eth + ip + udp + body).ljust(size, b"\0")


def test_ring_loopback_no_loss(tmp_path):
    rc, r, err = pktgen(tmp_path, "net_ring0", "--tx-port", "0", "--rx-port", "0",
                        "--count", "10000", "--rate", "100kpps", "--json")
    assert rc == 0, err
    assert r["tool"] == "dpvpn-pktgen" and r["duration_s"] > 0
    for d in ("tx", "rx"):
        assert r[d]["packets"] == 10000 and r[d]["bytes"] == 640000
        assert r[d]["pps"] > 0 and r[d]["gbps"] > 0
    assert r["rx"]["foreign"] == 0
    assert r["loss"] == {"packets": 0, "ratio": 0}
    assert r["reordered"] == 0 and r["duplicates"] == 0
    lat = r["latency_ns"]
    assert lat["samples"] == 10000
    assert 0 < lat["p50"] <= lat["p99"] <= lat["p999"] <= lat["max"]
    assert r["sizes"] == [64] and r["flows"] == 1 and r["rate"] == "100kpps"


def test_tx_frames_are_well_formed(tmp_path):
    rc, r, err = pktgen(tmp_path, "net_pcap0,tx_pcap=tx.pcap", "--tx-port", "0",
                        "--count", "40", "--size", "64,100,1514", "--flows", "4",
                        "--vary", "src", "--src", "10.0.0.1", "--json")
    assert rc == 0, err
    assert r["tx"]["packets"] == 40 and r["rx"] is None and r["loss"] is None
    frames = read_pcap(tmp_path / "tx.pcap")
    assert [len(f) for f in frames] == [64, 100, 1514] * 13 + [64]
    next_seq = {}
    for i, f in enumerate(frames):
        assert ip_sum_ok(f[14:34]), f"frame {i}: bad IPv4 checksum"
        magic, flow, seq, tsc = PAYLOAD.unpack_from(f, HDR_LEN)
        assert magic == MAGIC and flow == i % 4 and tsc > 0
        assert f[26:30] == bytes([10, 0, 0, 1 + flow])
        assert seq == next_seq.get(flow, 0)
        next_seq[flow] = seq + 1
        assert f[HDR_LEN + PAYLOAD.size:] == bytes(len(f) - HDR_LEN - PAYLOAD.size)


def test_sink_counts_reordering_duplicates_foreign(tmp_path):
    arp = b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + bytes(28)
    not_ours = own_frame(0, 0)[:HDR_LEN] + bytes(22)
    frames = [arp, b"\x00" * 20, not_ours]
    frames += [own_frame(0, s) for s in (0, 1, 2, 4, 3, 4, 0)] + [own_frame(7, 0)]
    write_pcap(tmp_path / "rx.pcap", frames)
    rc, r, err = pktgen(tmp_path, "net_pcap0,rx_pcap=rx.pcap", "--rx-port", "0",
                        "--count", "8", "--duration", "3", "--json")
    assert rc == 0, err
    assert r["tx"] is None and r["loss"] is None
    assert r["rx"]["packets"] == 8 and r["rx"]["foreign"] == 3
    assert r["reordered"] == 1 and r["duplicates"] == 2
    # The crafted TSC lies ahead of ours: no latency sample, no crash.
    assert r["latency_ns"]["samples"] == 0 and r["latency_ns"]["skipped"] == 6


def test_bad_options_exit_2(tmp_path):
    for opts in (["--tx-port", "5"], ["--tx-port", "0", "--size", "63"],
                 ["--tx-port", "0", "--rate", "fast"], []):
        rc, _, err = pktgen(tmp_path, "net_ring0", *opts)
        assert rc == 2, (opts, err)
