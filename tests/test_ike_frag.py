# SPDX-License-Identifier: BSD-3-Clause
"""IKE fragmentation (RFC 7383) against strongSwan ([ikepki] issue 16,
requirement 5): dpvpnd and charon authenticate with RSA certificates issued
by an RSA intermediate CA (dpvpnd sends the intermediate too), so dpvpnd's
IKE_AUTH is over 1500 bytes; both ends are forced to 576-byte fragments
(dpvpnd `fragment-size = 576`, charon's `charon.fragment_size = 576`).
In both roles IKE_AUTH must cross as several fragments each way (charon's
log says so, dpvpnd's counters too) and a ping must go through; with
`fragmentation = no` on dpvpnd, charon sends IKE_AUTH whole.

    host S     strongSwan gw (netns)          peer gw (netns)           host D
               charon, kernel-libipsec         dpvpnd + dataplane
    eth0 ==veth== sw-in      sw-out ==veth== pe-out        pe-in ==veth== eth0
                             198.19.0.1      198.19.0.2

The lab, the certificates and charon's swanctl.conf are those of
tests/test_ike_pki.py.
"""
import re

import pytest

import lab
import swan
from test_ike_pki import (Pki, bring_up, ike_sas, issue, keygen, need_swan,
                          setup_lab)

pytestmark = [pytest.mark.ike, pytest.mark.strongswan, pytest.mark.ikepki]

FRAG = 576


def frag_lab(sl, initiator, dpvpnd_frag="yes", big=True):
    """setup_lab with RSA leaves, 576-byte fragments at both ends; big: an RSA
    intermediate too, sent by dpvpnd, so its IKE_AUTH passes 1500 bytes (else
    charon has the intermediate and dpvpnd leaves it out: about 1300 bytes)."""
    pki = Pki()
    if big:
        pki.mid_key = keygen("rsa")
        pki.mid = issue("Intermediate CA", pki.mid_key, (pki.root, pki.root_key), ca=True,
                        days=(-10, 3650))
    # charon's certificate from the root, and charon without the intermediate:
    # its CERTREQ does not name it, so dpvpnd sends it (test_ike_pki's
    # test_intermediate_sent_to_charon); not big: charon has it, dpvpnd leaves it out
    scert, skey = pki.leaf("swan.example.org", "rsa", issuer="root" if big else "mid")
    setup_lab(sl, pki, "rsa", scert, skey, start="yes" if initiator == "dpvpnd" else "no",
              swan_mid=not big)
    # the tunnel is the config's last section: its keys go at the end (of the
    # gateway's copy, lab.Gateway's, which dpvpnd reads)
    with open(sl.gw.config, "a") as f:
        f.write(f"fragmentation = {dpvpnd_frag}\nfragment-size = {FRAG}\n")
    sl.swan.strongswan["charon"]["fragment_size"] = FRAG
    sl.swan.write_config()


@pytest.mark.parametrize("initiator", ["charon", "dpvpnd"])
def test_fragmented_ike_auth(initiator):
    """IKE_AUTH as fragments both ways, a ping through, nothing dropped."""
    need_swan()
    with swan.SwanLab("aes128gcm16") as sl:
        frag_lab(sl, initiator)
        bring_up(sl, initiator)
        log = sl.swan.log_text()
        # charon's own IKE_AUTH message split, and dpvpnd's put together
        split = [int(n) for n in re.findall(r"splitting IKE message \(\d+ bytes\) into "
                                            r"(\d+) fragments", log)]
        assert split and max(split) > 1, log[-4000:]
        got = re.findall(r"received fragment #(\d+) of (\d+), reassembled fragmented IKE "
                         r"message \((\d+) bytes\)", log)
        assert got and int(got[0][1]) > 1, log[-4000:]
        assert int(got[0][2]) > 1500, got     # dpvpnd's IKE_AUTH, put together
        assert re.search(r"IKE_AUTH (request|response) 1 \[ EF\(1/\d+\) \]", log), log[-4000:]
        frags = sl.gw.ctl("show", "ike")["stats"]["fragments"]
        assert frags["tx"] >= int(got[0][1]), frags
        assert frags["rx"] >= max(split), frags
        assert frags["reassembled"] >= 1, frags
        assert sum(frags["dropped"].values()) == 0, frags
        assert ike_sas(sl)[0]["state"] == "established"
        text = lab.sh(lab.DPVPNCTL, "-s", sl.gw.ctl_sock, "show", "ike").stdout
        assert f"fragments: tx {frags['tx']} rx {frags['rx']} reassembled" in text, text
        for side in ("s", "d"):
            sl.ping(side, count=1)
            r = sl.ping(side, count=3)
            assert " 0% packet loss" in r.stdout, r.stdout + r.stderr
        print(f"test_ike_frag: {initiator} initiated: charon split into {split}, "
              f"reassembled dpvpnd's {got[0][1]} fragments ({got[0][2]} bytes); "
              f"dpvpnd: {frags['tx']} sent, {frags['rx']} received, "
              f"{frags['reassembled']} reassembled; pings both ways")


def test_fragmentation_off():
    """fragmentation = no on dpvpnd: it does not offer it, so both send
    IKE_AUTH whole.  dpvpnd's (an RSA leaf and an RSA intermediate, over
    1500 bytes) leaves as IP fragments (the dataplane fragments an IKE
    datagram over the port's MTU, as a kernel's UDP socket would, for peers
    without RFC 7383), which charon's kernel reassembles; charon's comes
    back the same way; the SA comes up and carries pings."""
    need_swan()
    with swan.SwanLab("aes128gcm16") as sl:
        frag_lab(sl, "dpvpnd", dpvpnd_frag="no", big=True)
        bring_up(sl, "dpvpnd")
        log = sl.swan.log_text()
        assert "splitting IKE message" not in log, log[-4000:]
        assert "fragment" not in " ".join(re.findall(r"IKE_AUTH \w+ 1 \[[^]]*\]", log))
        assert not re.search(r"EF\(\d+/\d+\)", log), log[-4000:]
        sizes = [int(n) for n in re.findall(r"received packet: from \S+ to \S+ \((\d+) "
                                            r"bytes\)", log)]
        assert max(sizes) > 1500, sizes        # dpvpnd's IKE_AUTH, IP-fragmented
        frags = sl.gw.ctl("show", "ike")["stats"]["fragments"]
        assert frags["tx"] == 0 and frags["rx"] == 0, frags
        c = sl.gw.ctl("show", "counters")
        assert c["fragmented"] >= 1 and c["fragments"] >= 2, c
        r = sl.ping("s", count=3)
        assert " 0% packet loss" in r.stdout, r.stdout + r.stderr
        print(f"test_ike_frag: fragmentation = no: IKE_AUTH whole both ways, dpvpnd's "
              f"{max(sizes)} bytes in {c['fragments']} IP fragments; SA up")
