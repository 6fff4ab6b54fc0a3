# SPDX-License-Identifier: BSD-3-Clause
"""[ikepki] issue 16, requirement 6: the smoke of perf/ikebench.py (the
measurement itself is that benchmark, never a timed test here).

    generator: dpvpnd + dataplane,           DUT: dpvpnd + dataplane
    20 clients t0..t19, each                 [tunnel rw] remote = %any,
    virtual-ip = request, its own            pool 10.64.0.0/24, one certificate
    ECDSA certificate
                t-b ======= veth ======= d-out   (one address, NAT-T ports)

Every client is a dpvpnd tunnel with `virtual-ip = request` (CFG_REQUEST):
all 20 come up, each narrowed to its own lease from the DUT's pool, and the
DUT holds them (its inbound SAs) afterwards; with PSKs (a [tunnel] per client
on the DUT) the same, and then the DUT's dpvpnd killed (-9) and started again
takes every IKE SA up without a new exchange.  Asserts counts, never a rate.
"""
import ipaddress
import json
import os
import sys

import pytest

import lab

sys.path.insert(0, os.path.join(os.path.dirname(lab.CONFIGS), "perf"))
import ikebench  # noqa: E402

pytestmark = [pytest.mark.ike, pytest.mark.ikepki]

CLIENTS = 20
# more records than one KEEP_LIST page holds (34 PSK records here): a new
# dpvpnd took only the first page up while it read the page's count after
# wiping the page
RESTART_CLIENTS = 80


def bench(tmp_path, auth, *extra, clients=CLIENTS):
    return ikebench.main(["--clients", str(clients), "--auth", auth, "--hold", "0.5",
                          "--window", "8", "--deadline", "10", "--workdir", str(tmp_path),
                          "--json", str(tmp_path / "rows.json"), *extra])


def test_remote_access_clients_with_certificates(tmp_path, capsys):
    """virtual-ip = request end to end: every client up on a lease of its own."""
    assert bench(tmp_path, "cert") == 0
    with open(tmp_path / "rows.json") as f:
        row = json.load(f)[-1]
    fill = row["fill"]
    assert (fill["up"], fill["failed"], fill["held_after_hold"]) == (CLIENTS, 0, CLIENTS)
    assert row["auth"] == "cert" and row["settings"]["cert_key"] == "ECDSA P-256"
    leases = row["leases"]
    assert len(set(leases)) == CLIENTS
    pool = ipaddress.ip_network("10.64.0.0/24")
    assert all(ipaddress.ip_network(v).subnet_of(pool) and v.endswith("/32") for v in leases)
    assert row["client_sources"] == leases      # each client's policy: from its lease
    assert "pki-20" in os.listdir(tmp_path)      # made once, kept for the next run


def test_psk_clients(tmp_path, capsys):
    """And the restart measurement ([scale] issue 28 req. 3): the DUT's dpvpnd
    killed with every client up, the new one takes each IKE SA up, none is
    negotiated again, the dataplane's SAs are the same ones."""
    n = RESTART_CLIENTS
    assert bench(tmp_path, "psk", "--restart-dpvpnd", "--restart-watch", "2", clients=n) == 0
    with open(tmp_path / "rows.json") as f:
        row = json.load(f)[-1]
    fill, r = row["fill"], row["restart_dpvpnd"]
    assert (fill["up"], fill["failed"], fill["held_after_hold"]) == (n, 0, n)
    assert (r["taken_up"], r["records"], r["left_to_replace"]) == (n, n, 0), r
    assert r["child_sas_made_again"] == 0 and r["sas_same"], r
    assert r["sas_before"] == 2 * n and r["taken_up_s"] > 0, r
