# SPDX-License-Identifier: BSD-3-Clause
"""IKEv2 with certificates against strongSwan ([ikepki] issue 16,
requirement 1): charon and dpvpnd authenticate each other with X.509
certificates made here (Python `cryptography`), in both roles, with RSA,
ECDSA and Ed25519 keys, each end's certificate issued by an intermediate CA
under one root; and the peers dpvpnd must refuse (expired, not yet valid,
from another CA, revoked, another identity), each with AUTHENTICATION_FAILED,
its counter and one log line naming the certificate.

    host S     strongSwan gw (netns)          peer gw (netns)           host D
               charon, kernel-libipsec         dpvpnd + dataplane
    eth0 ==veth== sw-in      sw-out ==veth== pe-out        pe-in ==veth== eth0
                             198.19.0.1      198.19.0.2
                             swan.example.org peer.example.org

(tests/helpers/swan.py builds the namespaces; its charon #2 is never started.)
charon's swanctl.conf is tests/helpers/swan.py's swanctl_conf with a certificate
(`auth = pubkey`); dpvpnd's tunnel has `auth = pubkey`, its certificate file
holds the leaf and the intermediate.
"""
import datetime
import os
import re

import pytest

import lab
import swan

pytestmark = [pytest.mark.ike, pytest.mark.strongswan, pytest.mark.ikepki]

PEER_CONF = """; dpvpn.conf of tests/test_ike_pki.py
[port inside]
id = 0
role = inside
address = {gw_in}/24

[port outside]
id = 1
role = outside
address = {out}/24

[tunnel to-swan]
local = {out}
remote = {swan_out}
local-ts = {peer_net}
remote-ts = {swan_net}
cipher = aes128-gcm
keying = ike
auth = pubkey
cert = {dir}/peer.pem
private-key = {dir}/peer.key
ca = {dir}/ca.pem
{crl}local-id = fqdn:peer.example.org
remote-id = {remote_id}
start = {start}
encap = udp
"""

# ---- certificates ------------------------------------------------------------

def _x509():
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    from cryptography.x509.oid import NameOID
    return x509, hashes, serialization, ec, ed25519, rsa, NameOID


def keygen(kind):
    x509, hashes, serialization, ec, ed25519, rsa, NameOID = _x509()
    if kind == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    if kind == "ecdsa":
        return ec.generate_private_key(ec.SECP256R1())
    if kind == "ecdsa384":
        return ec.generate_private_key(ec.SECP384R1())
    return ed25519.Ed25519PrivateKey.generate()


def name(cn):
    x509, _, _, _, _, _, NameOID = _x509()
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example")])


def issue(cn, key, issuer=None, ca=False, san=None, serial=None, days=(-1, 365), subject=None):
    """A certificate for CN=cn, O=Example (or subject: [(NameOID name, value)]);
    issuer (cert, key) or self-signed."""
    x509, hashes, _, _, ed25519, _, NameOID = _x509()
    now = datetime.datetime.utcnow()
    icert, ikey = issuer if issuer else (None, key)
    subj = name(cn) if subject is None else x509.Name(
        [x509.NameAttribute(getattr(NameOID, k), v) for k, v in subject])
    b = (x509.CertificateBuilder().subject_name(subj)
         .issuer_name(icert.subject if icert else name(cn))
         .public_key(key.public_key())
         .serial_number(serial or x509.random_serial_number())
         .not_valid_before(now + datetime.timedelta(days=days[0]))
         .not_valid_after(now + datetime.timedelta(days=days[1])))
    b = b.add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    if san:
        b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(san)]), critical=False)
    algo = None if isinstance(ikey, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    return b.sign(ikey, algo)


def pem(obj):
    _, _, serialization, _, _, _, _ = _x509()
    if hasattr(obj, "private_bytes"):
        return obj.private_bytes(serialization.Encoding.PEM,
                                 serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())
    return obj.public_bytes(serialization.Encoding.PEM)


def crl_of(issuer, serials):
    x509, hashes, _, _, _, _, _ = _x509()
    now = datetime.datetime.utcnow()
    b = (x509.CertificateRevocationListBuilder().issuer_name(issuer[0].subject)
         .last_update(now - datetime.timedelta(days=1))
         .next_update(now + datetime.timedelta(days=30)))
    for s in serials:
        b = b.add_revoked_certificate(x509.RevokedCertificateBuilder().serial_number(s)
                                      .revocation_date(now - datetime.timedelta(hours=1))
                                      .build())
    return b.sign(issuer[1], hashes.SHA256())


write = swan.write_file


class Pki:
    """root -> mid -> leaves; 'other' is an unrelated root of the same name."""

    def __init__(self):
        self.root_key = keygen("ecdsa")
        self.root = issue("Root CA", self.root_key, ca=True, days=(-10, 3650))
        self.mid_key = keygen("ecdsa")
        self.mid = issue("Intermediate CA", self.mid_key, (self.root, self.root_key),
                         ca=True, days=(-10, 3650))
        self.other_key = keygen("ecdsa")
        self.other = issue("Root CA", self.other_key, ca=True, days=(-10, 3650))

    def leaf(self, cn, kind, issuer="mid", **kw):
        key = keygen(kind)
        iss = {"mid": (self.mid, self.mid_key), "other": (self.other, self.other_key),
               "root": (self.root, self.root_key)}[issuer]
        return issue(cn, key, iss, san=cn, **kw), key


# ---- the lab -------------------------------------------------------------------

def setup_lab(sl, pki, peer_kind, swan_cert, swan_key, start="no", crl=None,
              remote_id="fqdn:*.example.org", swan_id="swan.example.org", swan_mid=True,
              peer_days=(-1, 365), peer_subject=None, peer_id="peer.example.org"):
    """charon with swan_cert, told peer_id as dpvpnd's identity; dpvpnd (not
    started) with a peer_kind key."""
    pe = sl.ns_pe
    for dev in ("pe-in", "pe-out"):
        sl.ip(pe, "addr", "flush", "dev", dev)
    sl.ns(pe, "sysctl", "-qw", "net.ipv4.ip_forward=0")
    # dpvpnd's files
    pcert, pkey = pki.leaf("peer.example.org", peer_kind, days=peer_days,
                           subject=peer_subject)
    w = sl.workdir
    write(os.path.join(w, "peer.pem"), pem(pcert) + pem(pki.mid))
    write(os.path.join(w, "peer.key"), pem(pkey), 0o600)
    write(os.path.join(w, "ca.pem"), pem(pki.root))
    if crl is not None:
        write(os.path.join(w, "ca.crl"), crl.public_bytes(
            _x509()[2].Encoding.PEM))
    path = os.path.join(w, "peer.conf")
    write(path, PEER_CONF.format(gw_in=swan.PEER_GW_IN, out=swan.PEER_OUT,
                                 swan_out=swan.SWAN_OUT, peer_net=swan.PEER_NET,
                                 swan_net=swan.SWAN_NET, start=start,
                                 remote_id=remote_id, dir=w,
                                 crl=f"crl = {w}/ca.crl\n" if crl is not None else "").encode(),
          0o600)
    # charon's files: its certificate with the intermediate, the root as its CA
    cas = {"root.pem": pem(pki.root)}
    if swan_mid:    # charon has the intermediate: its CERTREQ names it, we leave it out
        cas["mid.pem"] = pem(pki.mid)
    sl.swan.add_credentials(pem(swan_cert), pem(swan_key), cas)
    sl.swan.swanctl_conf = swan.swanctl_conf(
        "dpsw", swan_id, peer_id, {"net": swan.child(swan.SWAN_NET, swan.PEER_NET)},
        local_addrs=swan.SWAN_OUT, remote_addrs=swan.PEER_OUT, cert="swan.pem")
    sl.swan.write_config()
    sl.gw = lab.Gateway("gw-peer", path,
                        ["net_af_packet0,iface=pe-in",
                         "net_af_packet1,iface=pe-out,qdisc_bypass=0"],
                        w, ["-l", "0-1", "--main-lcore", "0"], pe)
    return pcert


def ike_sas(sl):
    return sl.gw.ctl("show", "ike")["sas"]


def established(sl):
    sas = ike_sas(sl)
    return sas and sas[0]["state"] == "established" and sas[0]["child"]


def need_swan():
    why = swan.ensure_installed()
    if why:
        pytest.skip(f"strongSwan interop: {why}")


def bring_up(sl, initiator):
    """Both ends started, the IKE SA up: charon initiating (swanctl) or
    dpvpnd (start = yes), failing with both ends' logs."""
    if initiator == "charon":
        sl.gw.start()
        sl.swan.start()
        out = sl.swan.swanctl("--initiate", "--child", "net", "--timeout", "20",
                              timeout=30, check=False)
        assert "initiate completed successfully" in out, \
            out + sl.swan.log_text()[-4000:] + sl.gw.dpvpnd.output()[-3000:]
    else:
        sl.swan.start()
        sl.gw.start()
        try:
            lab.wait_for(lambda: established(sl), 25, "dpvpnd's IKE SA with charon")
        except Exception:
            print(sl.swan.log_text()[-4000:], sl.gw.dpvpnd.output()[-3000:],
                  sl.gw.ctl("show", "ike"))
            raise


@pytest.mark.parametrize("peer_kind,swan_kind", [("rsa", "ecdsa"), ("ecdsa", "rsa"),
                                                 ("ed25519", "ed25519")])
@pytest.mark.parametrize("initiator", ["charon", "dpvpnd"])
def test_certificates_with_charon(initiator, peer_kind, swan_kind):
    """Up with certificates (both issued by an intermediate CA), a ping each
    way through the tunnel, nothing refused."""
    need_swan()
    pki = Pki()
    scert, skey = pki.leaf("swan.example.org", swan_kind)
    with swan.SwanLab("aes128gcm16") as sl:
        setup_lab(sl, pki, peer_kind, scert, skey,
                  start="yes" if initiator == "dpvpnd" else "no")
        bring_up(sl, initiator)
        st = ike_sas(sl)[0]
        assert st["state"] == "established", st
        for side in ("s", "d"):
            sl.ping(side, count=2)
            r = sl.ping(side, count=3)
            assert " 0% packet loss" in r.stdout, r.stdout + r.stderr
        stats = sl.gw.ctl("show", "ike")["stats"]
        assert sum(stats["auth_fail_cert"].values()) == 0, stats
        log = sl.swan.log_text()
        assert "authentication of 'peer.example.org'" in log and "successful" in log, log[-3000:]
        how = re.findall(r"authentication of '[^']*' with (\S+) successful", log)
        print(f"test_ike_pki: {initiator} initiated, dpvpnd {peer_kind}, charon {swan_kind}: "
              f"up, pings both ways; charon's view: {how}")


# 7 RDNs, 186 bytes as DER: over the 128 that identities were capped at
LONG_DN = [("COUNTRY_NAME", "CH"), ("STATE_OR_PROVINCE_NAME", "Canton of Zurich"),
           ("LOCALITY_NAME", "Zurich"), ("ORGANIZATION_NAME", "Example"),
           ("ORGANIZATIONAL_UNIT_NAME", "Network Operations and Engineering"),
           ("ORGANIZATIONAL_UNIT_NAME", "Site-to-site VPN gateways"),
           ("COMMON_NAME", "peer.example.org")]


def test_long_subject_dn_is_the_identity():
    """dpvpnd's certificate has an enterprise-style subject of 186 bytes; with
    no local-id, the subject is its identity (ID_DER_ASN1_DN), which used to
    be refused over 128 bytes ('give a local-id').  charon, told that DN as
    the peer's id, authenticates it and the tunnel carries pings."""
    need_swan()
    pki = Pki()
    scert, skey = pki.leaf("swan.example.org", "ecdsa")
    dn = ", ".join(f"{k}={v}" for k, v in (
        ("C", "CH"), ("ST", "Canton of Zurich"), ("L", "Zurich"), ("O", "Example"),
        ("OU", "Network Operations and Engineering"), ("OU", "Site-to-site VPN gateways"),
        ("CN", "peer.example.org")))
    with swan.SwanLab("aes128gcm16") as sl:
        pcert = setup_lab(sl, pki, "ecdsa", scert, skey, peer_subject=LONG_DN,
                          peer_id=f'"{dn}"')
        assert len(pcert.subject.public_bytes()) == 186
        with open(sl.gw.config) as f:
            conf = f.read()
        with open(sl.gw.config, "w") as f:
            f.write(conf.replace("local-id = fqdn:peer.example.org\n", ""))
        bring_up(sl, "charon")
        log = sl.swan.log_text()
        assert f"authentication of '{dn}' with" in log, log[-3000:]
        r = sl.ping("s", count=3)
        assert " 0% packet loss" in r.stdout, r.stdout + r.stderr
        print(f"test_ike_pki: a 186-byte subject DN as dpvpnd's identity: charon "
              f"authenticated '{dn}'")


def test_intermediate_sent_to_charon():
    """charon knows only the root (its own certificate is the root's): it must
    build dpvpnd's chain from the intermediate dpvpnd sends in a CERT."""
    need_swan()
    pki = Pki()
    scert, skey = pki.leaf("swan.example.org", "ecdsa", issuer="root")
    with swan.SwanLab("aes128gcm16") as sl:
        setup_lab(sl, pki, "ecdsa", scert, skey, swan_mid=False)
        sl.gw.start()
        sl.swan.start()
        out = sl.swan.swanctl("--initiate", "--child", "net", "--timeout", "20",
                              timeout=30, check=False)
        log = sl.swan.log_text()
        assert "initiate completed successfully" in out, \
            out + log[-4000:] + sl.gw.dpvpnd.output()[-3000:]
        assert re.search(r"parsed IKE_AUTH response 1 \[.*CERT CERT", log), log[-3000:]
        r = sl.ping("s", count=3)
        assert " 0% packet loss" in r.stdout, r.stdout
        print("test_ike_pki: charon took dpvpnd's intermediate from its CERT payloads")


REFUSALS = [
    # (what, swan cert args, dpvpn remote-id, counter, words of the log line)
    ("expired", {"days": (-30, -1)}, "fqdn:*.example.org", "cert-expired", "expired"),
    ("not-yet-valid", {"days": (2, 30)}, "fqdn:*.example.org", "cert-not-yet-valid",
     "not yet valid"),
    ("wrong-ca", {"issuer": "other"}, "fqdn:*.example.org", "cert-untrusted",
     "cert-untrusted"),
    ("revoked", {"serial": 4242}, "fqdn:*.example.org", "cert-revoked", "revoked"),
    ("wrong-identity", {}, "fqdn:*.example.net", "cert-identity", "remote-id"),
]


@pytest.mark.parametrize("what,kw,remote_id,counter,words", REFUSALS,
                         ids=[r[0] for r in REFUSALS])
def test_charon_refused(what, kw, remote_id, counter, words):
    """charon initiates with a certificate dpvpnd must refuse: charon hears
    AUTHENTICATION_FAILED, dpvpnd counts the cause and logs one line with
    the certificate's subject and serial, and no SA is installed."""
    need_swan()
    pki = Pki()
    scert, skey = pki.leaf("swan.example.org", "ecdsa", **kw)
    crl = crl_of((pki.mid, pki.mid_key), [4242]) if what == "revoked" else None
    with swan.SwanLab("aes128gcm16") as sl:
        setup_lab(sl, pki, "ecdsa", scert, skey, crl=crl, remote_id=remote_id)
        sl.gw.start()
        sl.swan.start()
        out = sl.swan.swanctl("--initiate", "--child", "net", "--timeout", "15",
                              timeout=25, check=False)
        assert "initiate completed successfully" not in out, out
        log = sl.swan.log_text()
        assert "AUTHENTICATION_FAILED" in log, log[-3000:]
        stats = sl.gw.ctl("show", "ike")["stats"]
        assert stats["auth_fail_cert"][counter] == 1, stats
        assert stats["rejected"]["auth-fail"] == 1, stats
        assert not [s for s in sl.gw.ctl("show", "sa")["sas"] if s["name"] == "to-swan"]
        lines = [ln for ln in sl.gw.dpvpnd.output().splitlines() if counter in ln]
        assert len(lines) == 1, sl.gw.dpvpnd.output()[-3000:]
        serial = format(scert.serial_number, "X")
        assert "CN=swan.example.org" in lines[0] and serial in lines[0].replace(":", ""), \
            lines[0]
        assert words in lines[0], lines[0]
        assert "PRIVATE" not in sl.gw.dpvpnd.output()
        print(f"test_ike_pki: {what}: refused: {lines[0].strip()}")


def test_charon_refuses_our_expired_certificate():
    """dpvpnd initiates with an expired certificate: charon answers
    AUTHENTICATION_FAILED, dpvpnd ends the IKE SA (peer-error), installs
    nothing and tries again later (start = yes)."""
    need_swan()
    pki = Pki()
    scert, skey = pki.leaf("swan.example.org", "ecdsa")
    with swan.SwanLab("aes128gcm16") as sl:
        setup_lab(sl, pki, "ecdsa", scert, skey, start="yes", peer_days=(-30, -1))
        sl.swan.start()
        sl.gw.start()
        lab.wait_for(lambda: "AUTHENTICATION_FAILED" in sl.gw.dpvpnd.output(), 20,
                     "charon's AUTHENTICATION_FAILED")
        log = sl.swan.log_text()
        assert "subject certificate invalid" in log, log[-3000:]
        assert sl.gw.ctl("show", "ike")["stats"]["rejected"]["peer-error"] >= 1
        assert not [s for s in sl.gw.ctl("show", "sa")["sas"] if s["name"] == "to-swan"]
        line = [ln for ln in sl.gw.dpvpnd.output().splitlines()
                if "AUTHENTICATION_FAILED" in ln][0]
        print(f"test_ike_pki: charon refused our expired certificate: {line.strip()}")


def test_reload_keeps_or_renegotiates():
    """A reload with the certificate files unchanged leaves the IKE SA alone;
    after a new certificate and key are written to the same files, the
    tunnel counts as changed and is negotiated anew with them."""
    need_swan()
    pki = Pki()
    scert, skey = pki.leaf("swan.example.org", "ecdsa")
    with swan.SwanLab("aes128gcm16") as sl:
        setup_lab(sl, pki, "ecdsa", scert, skey, start="yes")
        sl.swan.start()
        sl.gw.start()
        lab.wait_for(lambda: established(sl), 25, "dpvpnd's IKE SA with charon")
        spi = ike_sas(sl)[0]["spi_i"]
        r = lab.sh(lab.DPVPNCTL, "-s", sl.gw.ctl_sock, "reload", check=False)
        assert r.returncode == 0 and "0 added, 0 removed, 0 changed" in r.stdout, \
            (r.stdout, r.stderr)
        assert ike_sas(sl)[0]["spi_i"] == spi
        pcert, pkey = pki.leaf("peer.example.org", "ed25519")
        write(os.path.join(sl.workdir, "peer.pem"), pem(pcert) + pem(pki.mid))
        write(os.path.join(sl.workdir, "peer.key"), pem(pkey), 0o600)
        r = lab.sh(lab.DPVPNCTL, "-s", sl.gw.ctl_sock, "reload", check=False)
        assert r.returncode == 0 and "1 changed" in r.stdout, (r.stdout, r.stderr)
        lab.wait_for(lambda: established(sl) and ike_sas(sl)[0]["spi_i"] != spi, 25,
                     "the IKE SA with the new certificate")
        assert re.search(r"authentication of 'peer.example.org' with ED25519 successful",
                         sl.swan.log_text())
        r = sl.ping("s", count=3)
        assert " 0% packet loss" in r.stdout, r.stdout
        print("test_ike_pki: reload: unchanged files kept the IKE SA; a new certificate "
              "and key renegotiated it")
