# SPDX-License-Identifier: BSD-3-Clause
"""Gateway A of the lab on two net_pcap ports, for the scapy-oracle tests.

scapy writes what arrives on the inside (port 0) and outside (port 1) into
pcap files; the real dpvpn-dataplane, configured by the real dpvpnd from
configs/lab-a.conf (plus static neighbours, since nobody answers ARP in a
file), reads them and writes what it sends into other pcap files; the test
then checks those with scapy.
"""
import os

from scapy.all import IP, UDP, Raw, rdpcap, wrpcap
from scapy.layers.ipsec import ESP, SecurityAssociation

import lab

# From configs/lab-a.conf (gateway A).
KEY_AB = bytes.fromhex("0123456789abcdef0123456789abcdef01020304")  # out, SPI 0x1001
KEY_BA = bytes.fromhex("fedcba9876543210fedcba987654321005060708")  # in, SPI 0x2001
GW_A, GW_B = "198.19.0.1", "198.19.0.2"
HOST_A, HOST_B = "198.18.1.2", "198.18.2.2"
# net_pcap ports are given MACs 02:70:63:61:70:<n> ("pcap") in creation order.
MAC_IN, MAC_OUT = "02:70:63:61:70:00", "02:70:63:61:70:01"
MAC_HOST_A, MAC_GW_B = "02:00:00:00:0a:02", "02:00:00:00:0b:01"

NEIGHBOURS = f"""
[neighbor host-a]
port = inside
address = {HOST_A}
mac = {MAC_HOST_A}

[neighbor gw-b]
port = outside
address = {GW_B}
mac = {MAC_GW_B}
"""


def ports_conf(inside="198.18.1.1/24", outside=f"{GW_A}/24"):
    """The two [port] sections of gateway A on net_pcap (address lists)."""
    return (f"\n[port inside]\nid = 0\nrole = inside\naddress = {inside}\n"
            f"\n[port outside]\nid = 1\nrole = outside\naddress = {outside}\n")


def sa(spi, key, src, dst, **kw):
    return SecurityAssociation(ESP, spi=spi, crypt_algo="AES-GCM", crypt_key=key,
                               auth_algo="NULL", tunnel_header=IP(src=src, dst=dst), **kw)


def inner(i, size, src=HOST_A, dst=HOST_B):
    pad = max(0, size - 28)
    return IP(src=src, dst=dst, id=i, ttl=64) / UDP(sport=1000 + i, dport=5000) / \
        Raw(bytes((i + k) & 0xff for k in range(pad)))


def forwarded(pkt):
    """The inner packet as a gateway forwards it: TTL one less, checksum redone."""
    p = IP(bytes(pkt))
    p.ttl -= 1
    del p.chksum
    return bytes(IP(bytes(p)))


def out_sa(gw):
    return [s for s in gw.ctl("show", "sa")["sas"] if s["dir"] == "out"][0]


def run(d, inside, outside, tunnel_extra="", settle=None, conf=None, neighbours=NEIGHBOURS):
    """Frames in (lists of Ether frames), a run, what came out.

    tunnel_extra: lines for [tunnel to-b] (the last section of lab-a.conf).
    conf: a whole config instead of lab-a.conf + tunnel_extra (NEIGHBOURS is
    still appended).  neighbours: the static neighbour sections appended
    (default NEIGHBOURS: host A and gateway B).
    settle(gw): an extra wait before the counters are read.
    Returns counters, sas, dpvpnd's log and the frames sent (out0 inside,
    out1 outside)."""
    wrpcap(os.path.join(d, "in0.pcap"), inside)
    wrpcap(os.path.join(d, "in1.pcap"), outside)
    if conf is None:
        with open(os.path.join(lab.CONFIGS, "lab-a.conf")) as f:
            conf = f.read() + tunnel_extra
    conf += neighbours
    cfg = os.path.join(d, "gw.conf")
    with open(cfg, "w") as f:
        f.write(conf)
    vdevs = [f"net_pcap0,rx_pcap={d}/in0.pcap,tx_pcap={d}/out0.pcap",
             f"net_pcap1,rx_pcap={d}/in1.pcap,tx_pcap={d}/out1.pcap"]
    gw = lab.Gateway("pcap-a", cfg, vdevs, d, ["-l", "0-1"])
    total = len(inside) + len(outside)
    try:
        gw.start()
        lab.wait_for(lambda: gw.ctl("show", "counters")["rx_packets"] >= total, 20,
                     "the dataplane to read every input packet")
        if settle:
            settle(gw)
        state = {"counters": gw.ctl("show", "counters"), "sas": gw.ctl("show", "sa")["sas"],
                 "ports": gw.ctl("show", "ports")["ports"], "log": gw.dpvpnd.output(),
                 "total": total}
    finally:
        codes = gw.stop()
    assert codes["dataplane"] == 0, gw.dataplane.output()
    state.update(out0=rdpcap(os.path.join(d, "out0.pcap")),
                 out1=rdpcap(os.path.join(d, "out1.pcap")))
    return state
