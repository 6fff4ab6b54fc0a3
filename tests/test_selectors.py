# SPDX-License-Identifier: BSD-3-Clause
"""Selector lists on a static tunnel (issue 16 req 3, the list part):
`local-ts` / `remote-ts` take a comma list of prefixes, and traffic between
any local and any remote one is the tunnel's.

    host A ==== [inside gw A outside] ==== [outside gw B inside] ==== host B
    198.18.1.2                                                        198.18.2.2
    10.81.0.2 (alias)                                                 10.82.0.2 (alias)

gw A: local-ts = 198.18.1.0/24, 10.81.0.0/16; remote-ts = 198.18.2.0/24,
10.82.0.0/16 (gw B the mirror), a route to each alias's network inside.

- dpvpnd installs the 2 x 2 outbound policies, all to the one outbound SA;
  show tunnels gives both lists (local_ts_list, remote_ts_list);
- pings pass for every pair: first-first, second-second and both crossed;
- a packet the peer seals from outside A's lists (gw B's local-ts has a
  third prefix, 203.0.113.0/24, that A's remote-ts lacks) is dropped by A
  as policy-mismatch.
"""
import pytest

import lab

pytestmark = pytest.mark.operator

A_LISTS = ("local-ts = 198.18.1.0/24\nremote-ts = 198.18.2.0/24\n",
           "local-ts = 198.18.1.0/24, 10.81.0.0/16\nremote-ts = 198.18.2.0/24, 10.82.0.0/16\n")
B_LISTS = ("local-ts = 198.18.2.0/24\nremote-ts = 198.18.1.0/24\n",
           "local-ts = 198.18.2.0/24,10.82.0.0/16,203.0.113.0/24\n"
           "remote-ts = 198.18.1.0/24,10.81.0.0/16\n")
A_ROUTE = ("[tunnel to-b]\n",
           "[route alias-a]\ndst = 10.81.0.0/16\nport = inside\nvia = 198.18.1.2\n\n"
           "[tunnel to-b]\n")
B_ROUTE = ("[tunnel to-a]\n",
           "[route alias-b]\ndst = 10.82.0.0/16\nport = inside\nvia = 198.18.2.2\n\n"
           "[tunnel to-a]\n")


@pytest.fixture(scope="module")
def lists_lab():
    with lab.Lab(replace_a=(A_LISTS, A_ROUTE), replace_b=(B_LISTS, B_ROUTE)) as lb:
        lb.ip(lb.ns_a, "addr", "add", "10.81.0.2/32", "dev", "eth0")
        lb.ip(lb.ns_b, "addr", "add", "10.82.0.2/32", "dev", "eth0")
        yield lb


def ping_from(lb, src, dst):
    r = lb.ns(lb.ns_a, "ping", "-c", "3", "-i", "0.2", "-W", "2", "-I", src, dst,
              check=False, timeout=15)
    return r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout


def test_policies_for_every_pair(lists_lab):
    pols = lists_lab.a.ctl("show", "policies")["policies"]
    pairs = {(p["src"], p["dst"]) for p in pols}
    assert pairs == {(s, d) for s in ("198.18.1.0/24", "10.81.0.0/16")
                     for d in ("198.18.2.0/24", "10.82.0.0/16")}, pols
    assert len({p["spi"] for p in pols}) == 1, pols
    t = lists_lab.a.ctl("show", "tunnels")["tunnels"][0]
    assert t["local_ts_list"] == ["198.18.1.0/24", "10.81.0.0/16"], t
    assert t["remote_ts_list"] == ["198.18.2.0/24", "10.82.0.0/16"], t
    assert t["local_ts"] == "198.18.1.0/24", t


@pytest.mark.parametrize("src,dst", [("198.18.1.2", "198.18.2.2"),
                                     ("10.81.0.2", "10.82.0.2"),
                                     ("198.18.1.2", "10.82.0.2"),
                                     ("10.81.0.2", "198.18.2.2")])
def test_every_pair_passes(lists_lab, src, dst):
    ok, out = ping_from(lists_lab, src, dst)
    assert ok, out


def test_outside_the_lists_is_policy_mismatch(lists_lab):
    """gw B seals 203.0.113.2 -> 10.81.0.2 under the tunnel's SA: A drops it."""
    def mismatches():
        return lists_lab.a.ctl("show", "counters")["drops"].get("policy-mismatch", 0)

    lists_lab.ip(lists_lab.ns_b, "addr", "add", "203.0.113.2/32", "dev", "eth0")
    before = mismatches()
    lists_lab.ns(lists_lab.ns_b, "ping", "-c", "3", "-i", "0.2", "-W", "1", "-I",
                 "203.0.113.2", "10.81.0.2", check=False, timeout=10)
    lab.wait_for(lambda: mismatches() >= before + 3, 5, "3 policy-mismatch drops on gw A")
    ok, out = ping_from(lists_lab, "10.81.0.2", "10.82.0.2")     # the rest still passes
    assert ok, out
