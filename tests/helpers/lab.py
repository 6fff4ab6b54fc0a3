# SPDX-License-Identifier: BSD-3-Clause
"""The dpvpn lab: real processes in real network namespaces.

    host A (netns)            gateways (netns "gw")               host B (netns)
    eth0 198.18.1.2 ==veth== gwa-in [dpvpn A] gwa-out ==veth== gwb-out [dpvpn B] gwb-in ==veth== eth0 198.18.2.2
                              port 0  inside    port 1 outside        port 1          port 0
                                      198.18.1.1   198.19.0.1         198.19.0.2      198.18.2.1

Both dataplanes drive their veth ends with net_af_packet inside the "gw"
namespace, so the gateway-to-gateway link is a Linux link tshark can watch,
and nothing of the lab is visible in the root namespace.  Used by the
end-to-end tests (pytest) and by scripts/demo (`python3 tests/helpers/lab.py demo`).
Every wait is bounded; Lab.close() removes processes and namespaces even
after a failure.
"""
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("DPVPN_BUILD", os.path.join(ROOT, "build"))
DATAPLANE = os.path.join(BUILD, "dataplane", "dpvpn-dataplane")
DPVPND = os.path.join(BUILD, "control", "dpvpnd")
DPVPNCTL = os.path.join(BUILD, "control", "dpvpnctl")
CONFIGS = os.path.join(ROOT, "configs")
HOST_MTU = 1400     # leaves room for ESP on the 1500-byte gateway link


def eal_mem_args():
    """--in-memory when hugepages are reserved, else --no-huge (scripts/setup)."""
    mem = os.environ.get("DPVPN_EAL_MEM")
    if mem:
        return mem.split()
    with open("/proc/meminfo") as f:
        m = re.search(r"HugePages_Free:\s+(\d+)", f.read())
    return ["--in-memory"] if m and int(m.group(1)) >= 256 else ["--no-huge", "-m", "512"]


def sh(*cmd, check=True, timeout=30, **kw):
    return subprocess.run(cmd, check=check, timeout=timeout, text=True,
                          capture_output=True, **kw)


def wait_for(pred, timeout, what, interval=0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")


class Proc:
    """A background process whose output goes to a log file."""

    def __init__(self, name, argv, logdir, netns=None):
        self.name = name
        self.log = os.path.join(logdir, name + ".log")
        if netns:
            argv = ["ip", "netns", "exec", netns] + argv
        self._f = open(self.log, "w")
        self.p = subprocess.Popen(argv, stdout=self._f, stderr=subprocess.STDOUT,
                                  start_new_session=True)

    def output(self):
        with open(self.log) as f:
            return f.read()

    def alive(self):
        return self.p.poll() is None

    def kill9(self):
        """SIGKILL, as a crash would; returns the exit code."""
        if self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait(5)
        self._f.close()
        return self.p.returncode

    def stop(self, timeout=10):
        """SIGTERM, then SIGKILL; returns the exit code."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait(5)
        self._f.close()
        return self.p.returncode


class Gateway:
    """One dpvpn-dataplane plus the dpvpnd that configures it."""

    def __init__(self, name, config, vdevs, workdir, lcores, netns=None,
                 extra_config="", dp_args=(), replace=()):
        self.name = name
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self.dp_sock = os.path.join(self.dir, "dataplane.sock")
        self.ctl_sock = os.path.join(self.dir, "dpvpnd.sock")
        self.config = os.path.join(self.dir, "dpvpn.conf")
        with open(config) as f:
            text = f.read()
        for old, new in replace:    # (old line, new line) edits of the config
            assert old in text, old
            text = text.replace(old, new)
        with open(self.config, "w") as f:
            f.write(text + "\n" + extra_config)
        os.chmod(self.config, 0o600)
        self.file_prefix = f"dpvpn-{os.getpid()}-{name}"
        eal = ["--no-pci", "--file-prefix", self.file_prefix,
               "--log-level", "lib.eal:error", *lcores, *eal_mem_args(),
               *os.environ.get("DPVPN_EAL_EXTRA", "").split()]
        for v in vdevs:
            eal += ["--vdev", v]
        self.argv = [DATAPLANE, *eal, "--", "--socket", self.dp_sock, *dp_args]
        self.netns = netns
        self.dpvpnd_netns = None    # Lab(split=True): dpvpnd beside its dataplane
        self.dataplane = self.dpvpnd = None

    def start(self, timeout=30):
        """Start the dataplane, then dpvpnd; returns once dpvpnd installed all."""
        self.start_dataplane(timeout)
        self.start_dpvpnd(timeout)

    def start_dpvpnd(self, timeout=30, wait=True):
        """wait=False: return at once (perf/dpbench.py watches the dataplane
        from the first packet on); wait_dpvpnd() then checks it came up."""
        self.dpvpnd = Proc(self.name + "-dpvpnd",
                           [DPVPND, "-c", self.config, "-D", self.dp_sock,
                            "-s", self.ctl_sock], self.dir, self.dpvpnd_netns)
        if wait:
            self.wait_dpvpnd(timeout)

    def wait_dpvpnd(self, timeout=30):
        wait_for(lambda: "ready" in self.dpvpnd.output() or not self.dpvpnd.alive(),
                 timeout, f"{self.name} dpvpnd ready")
        if not self.dpvpnd.alive():
            raise RuntimeError(f"{self.name} dpvpnd failed:\n{self.dpvpnd.output()}")

    def restart_dpvpnd(self, tag, timeout=60, prefix=()):
        """kill -9 dpvpnd and start a new one against the running dataplane,
        as systemd would; returns once it is ready (it took up the IKE SAs
        the dataplane keeps records of first).  prefix: a command to run it
        under (nice -n 19: the scheduler favours the workers it shares CPUs
        with)."""
        self.dpvpnd.kill9()
        self.dpvpnd = Proc(f"{self.name}-dpvpnd-{tag}",
                           [*prefix, DPVPND, "-c", self.config, "-D", self.dp_sock,
                            "-s", self.ctl_sock], self.dir, self.dpvpnd_netns)
        self.wait_dpvpnd(timeout)

    def restart_whole(self, tag, timeout=60):
        """kill -9 dpvpnd and the dataplane (the gateway lost power, say) and
        start both again, nothing kept (a new dataplane holds no SA and no
        IKE SA record); returns once the new dpvpnd is ready.  Its tunnels
        with start = yes then initiate, with INITIAL_CONTACT."""
        self.dpvpnd.kill9()
        self.dataplane.kill9()
        if os.path.exists(self.dp_sock):
            os.unlink(self.dp_sock)
        self.start_dataplane(timeout, log_suffix=f"-{tag}")
        self.dpvpnd = Proc(f"{self.name}-dpvpnd-{tag}",
                           [DPVPND, "-c", self.config, "-D", self.dp_sock,
                            "-s", self.ctl_sock], self.dir, self.dpvpnd_netns)
        self.wait_dpvpnd(timeout)

    def crash_dataplane(self, timeout=30):
        """kill -9 the dataplane and start a new one; dpvpnd (still running)
        must notice and install everything again.  Returns once it has."""
        self.dataplane.kill9()
        if os.path.exists(self.dp_sock):
            os.unlink(self.dp_sock)
        backs = self.dpvpnd.output().count("dataplane back")
        self.start_dataplane(timeout, log_suffix=f"-{backs + 1}")
        wait_for(lambda: self.dpvpnd.output().count("dataplane back") > backs, timeout,
                 f"{self.name} dpvpnd to reinstall")

    def start_dataplane(self, timeout=30, log_suffix=""):
        for attempt in range(3):
            self.dataplane = Proc(self.name + "-dataplane" + log_suffix, self.argv, self.dir,
                                  self.netns)
            wait_for(lambda: os.path.exists(self.dp_sock) or not self.dataplane.alive(),
                     timeout, f"{self.name} dataplane socket")
            # net_af_packet names its fanout group pid ^ ifindex: two
            # dataplanes whose pids differ in the low bits can collide, and
            # the port is then missing (the process may even run on without
            # it).  A new process gets a new pid.
            fanout = "PACKET_FANOUT" in self.dataplane.output()
            if self.dataplane.alive() and not fanout:
                break
            if not fanout or attempt == 2:
                raise RuntimeError(f"{self.name} dataplane failed:\n{self.dataplane.output()}")
            self.dataplane.stop()
            if os.path.exists(self.dp_sock):
                os.unlink(self.dp_sock)

    def ctl(self, *args):
        """dpvpnctl --json ARGS, parsed."""
        r = sh(DPVPNCTL, "-s", self.ctl_sock, "--json", *args, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"dpvpnctl {' '.join(args)}: {r.stderr.strip()}")
        return json.loads(r.stdout)

    def sa_ids(self):
        """The dataplane's SAs, {(spi, dir)} (dpvpnctl show sa)."""
        return {(s["spi"], s["dir"]) for s in self.ctl("show", "sa")["sas"]}

    def ctl_text(self, *args):
        return sh(DPVPNCTL, "-s", self.ctl_sock, *args).stdout

    def stop(self):
        codes = {}
        if self.dpvpnd:
            codes["dpvpnd"] = self.dpvpnd.stop()
        if self.dataplane:
            codes["dataplane"] = self.dataplane.stop()
        return codes


class Managed:
    """A lab helper as a context manager: __enter__ runs open() and, should it
    fail part way, close() (which undoes whatever open() got to) before the
    error goes on; __exit__ runs close()."""

    def open(self):
        raise NotImplementedError

    def __enter__(self):
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()


class Lab(Managed):
    """host A == gateway A == gateway B == host B, see the module docstring."""

    def __init__(self, extra_a="", ipv6=False, workers=1, replay_window=None, mtu=None,
                 seq_block=None, replace_a=(), dp_args_a=(), ike=None, vdev_args_b_out="",
                 replace_b=(), split=False, dp_args_b=()):
        """extra_a: lines appended to gateway A's config, i.e. to its last
        section, [tunnel to-b] (e.g. lifetimes).  ipv6: the dual-stack lab
        (configs/lab6-*.conf): hosts get 2001:db8:18:N::2/64 as well, and
        the gateways tunnel over IPv6 (IPv4 4o6, IPv6 6o6).  workers: per
        gateway, each polling its own queue pair of every port (net_af_packet
        qpairs), all lcores mapped onto the two CPUs.  replay_window: both
        gateways' (lab-*.conf say 1024).  mtu: every link and port of the
        lab at this MTU, hosts included (default: hosts and inside links at
        HOST_MTU, the gateway link at 1500); over 1500 the dataplanes get
        --jumbo and net_af_packet frames big enough.  dp_args_a: extra
        options for gateway A's dataplane (after --socket).  ike: the tunnel
        keyed by IKEv2 instead of static keys (IPv4 lab): a dict with "psk"
        (a file, 0600) or "psk_a"/"psk_b", and optional "a" / "b": more lines
        for that gateway's tunnel (e.g. "start = no").  vdev_args_b_out: more
        net_af_packet arguments for gateway B's outside port (",framecnt=64":
        a small socket ring, that overflows sooner).  split: each gateway in a
        namespace of its own (A in ns_gw, B in ns_gwb), the gateway link a veth
        between them, and each dpvpnd beside its dataplane: each gateway
        namespace is that box's Linux host, for host-interface twins
        (tests/test_host.py); IPv6 off there unless ipv6."""
        self.ike = ike
        self.mtu = mtu
        self.replace = (() if replay_window is None else
                        (("replay-window = 1024", f"replay-window = {replay_window}"),))
        if seq_block is not None:   # dpvpnd's sequence reservations, per block
            self.replace += (("[control]\n", f"[control]\nseq-block = {seq_block}\n"),)
        if mtu is not None:
            self.replace += (("role = inside\n", f"role = inside\nmtu = {mtu}\n"),
                             ("role = outside\n", f"role = outside\nmtu = {mtu}\n"))
        self.extra_a = extra_a
        self.replace_a = replace_a     # (old, new) edits of gateway A's config only
        self.replace_b = replace_b     # and of gateway B's
        self.dp_args_a = tuple(dp_args_a)
        self.dp_args_b = tuple(dp_args_b)
        self.ipv6 = ipv6
        self.vdev_args_b_out = vdev_args_b_out
        self.workers = workers
        self.tag = secrets.token_hex(2)
        self.ns_a, self.ns_b, self.ns_gw = (f"dpvpn-{self.tag}-{x}" for x in ("a", "b", "gw"))
        self.split = split
        self.ns_gwb = f"dpvpn-{self.tag}-gwb" if split else self.ns_gw
        # logs, sockets, captures; kept after close() if DPVPN_KEEP_LAB is set
        self.workdir = tempfile.mkdtemp(prefix="dpvpn-lab-")
        self.gws = []
        self.procs = []

    def open(self):
        self._net()
        self._gateways()

    def ip(self, ns, *args):
        return sh("ip", "-n", ns, *args)

    def ns(self, ns, *args, **kw):
        return sh("ip", "netns", "exec", ns, *args, **kw)

    def _quiet(self, ns, dev):
        """No offloads (DPDK sees full frames with real checksums), no IPv6 chatter."""
        self.ns(ns, "ethtool", "-K", dev, "tx", "off", "tso", "off", "gso", "off",
                "gro", "off", check=False)
        off = "0" if self.ipv6 and ns not in (self.ns_gw, self.ns_gwb) else "1"
        self.ns(ns, "sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6={off}", check=False)
        if off == "0":      # no DAD delay, no router solicitations
            self.ns(ns, "sysctl", "-qw", f"net.ipv6.conf.{dev}.accept_dad=0", check=False)
            self.ns(ns, "sysctl", "-qw", f"net.ipv6.conf.{dev}.router_solicitations=0",
                    check=False)

    def _deaf(self, ns, dev):
        """Split lab: the namespace's kernel takes nothing from a port's veth
        (nftables ingress, after the dataplane's packet sockets got their copy),
        as a kernel takes nothing from a NIC that DPDK owns: what it gets, it
        gets through the port's twin."""
        chain = dev.replace("-", "_")
        self.ns(ns, "nft", "add table netdev dpvpn_lab", check=False)
        self.ns(ns, "nft", f"add chain netdev dpvpn_lab {chain} {{ type filter hook ingress "
                f"device \"{dev}\" priority 0; policy drop; }}")

    def _net(self):
        g, gb = self.ns_gw, self.ns_gwb
        for n in dict.fromkeys((self.ns_a, self.ns_b, g, gb)):
            sh("ip", "netns", "add", n)
            self.ip(n, "link", "set", "lo", "up")
            if self.split and n in (g, gb) and not self.ipv6:   # twins made later: quiet
                self.ns(n, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
        self.ip(g, "link", "add", "gwa-in", "type", "veth", "peer", "name", "eth0",
                "netns", self.ns_a)
        self.ip(gb, "link", "add", "gwb-in", "type", "veth", "peer", "name", "eth0",
                "netns", self.ns_b)
        self.ip(g, "link", "add", "gwa-out", "type", "veth", "peer", "name", "gwb-out",
                "netns", gb)
        host_mtu = self.mtu or HOST_MTU
        for dev in ("gwa-in", "gwb-in", "gwa-out", "gwb-out"):
            ns = gb if dev.startswith("gwb") else g
            self._quiet(ns, dev)
            if dev.endswith("-in") or self.mtu:
                self.ip(ns, "link", "set", dev, "mtu", str(host_mtu))
            self.ip(ns, "link", "set", dev, "up")
            if self.split:
                self._deaf(ns, dev)
        for ns, net in ((self.ns_a, 1), (self.ns_b, 2)):
            self._quiet(ns, "eth0")
            self.ip(ns, "link", "set", "eth0", "mtu", str(host_mtu), "up")
            self.ip(ns, "addr", "add", f"198.18.{net}.2/24", "dev", "eth0")
            self.ip(ns, "route", "add", "default", "via", f"198.18.{net}.1")
            if self.ipv6:
                self.ip(ns, "addr", "add", f"2001:db8:18:{net}::2/64", "dev", "eth0",
                        "nodad")
                self.ip(ns, "-6", "route", "add", "default", "via", f"2001:db8:18:{net}::1")

    def _gateways(self):
        # qdisc_bypass=0 on the gateway link: frames the dataplanes send pass
        # the kernel's taps, so tcpdump on gwa-out sees both directions.
        # Two workers on two vCPUs: A's worker on CPU 0, B's on CPU 1, and
        # both main lcores on the other; idle back-off lets them share.
        conf = "lab6-{}.conf" if self.ipv6 else "lab-{}.conf"
        q = f",qpairs={self.workers}" if self.workers > 1 else ""
        dp_args = ()
        if self.mtu and self.mtu > 1500:    # frames of a jumbo link in one slot each
            q += ",framesz=10240,blocksz=20480,framecnt=512"
            dp_args = ("--jumbo",)
        if self.workers == 1:
            lc_a, lc_b = ["-l", "0-1", "--main-lcore", "1"], ["-l", "0-1", "--main-lcore", "0"]
        else:   # lcore 0 is the main one; workers alternate over the two CPUs
            lc_a = ["--lcores", ",".join(["0@1"] + [f"{i}@{(i + 1) % 2}"
                                                    for i in range(1, self.workers + 1)]),
                    "--main-lcore", "0"]
            lc_b = ["--lcores", ",".join(["0@0"] + [f"{i}@{i % 2}"
                                                    for i in range(1, self.workers + 1)]),
                    "--main-lcore", "0"]
        ike_a, ike_b = self._ike_edits()
        a = Gateway("gw-a", os.path.join(CONFIGS, conf.format("a")),
                    [f"net_af_packet0,iface=gwa-in{q}",
                     f"net_af_packet1,iface=gwa-out,qdisc_bypass=0{q}"],
                    self.workdir, lc_a, self.ns_gw, extra_config=self.extra_a,
                    replace=self.replace + tuple(self.replace_a) + ike_a,
                    dp_args=dp_args + self.dp_args_a)
        self.gws.append(a)
        b = Gateway("gw-b", os.path.join(CONFIGS, conf.format("b")),
                    [f"net_af_packet0,iface=gwb-in{q}",
                     f"net_af_packet1,iface=gwb-out,qdisc_bypass=0{q}{self.vdev_args_b_out}"],
                    self.workdir, lc_b, self.ns_gwb,
                    replace=self.replace + tuple(self.replace_b) + ike_b,
                    dp_args=dp_args + self.dp_args_b)
        self.gws.append(b)
        if self.split:
            a.dpvpnd_netns, b.dpvpnd_netns = self.ns_gw, self.ns_gwb
        for gw in self.gws:     # one after the other: see Gateway.start
            gw.start()
        self.a, self.b = a, b

    STATIC_A = ("out-spi = 0x00001001\nout-key = 0x0123456789abcdef0123456789abcdef01020304\n"
                "in-spi = 0x00002001\nin-key = 0xfedcba9876543210fedcba987654321005060708\n")
    STATIC_B = ("out-spi = 0x00002001\nout-key = 0xfedcba9876543210fedcba987654321005060708\n"
                "in-spi = 0x00001001\nin-key = 0x0123456789abcdef0123456789abcdef01020304\n")

    def _ike_edits(self):
        """The static SPI and key lines of lab-a/b.conf become keying = ike."""
        if not self.ike:
            return (), ()
        edits = []
        for side, static in (("a", self.STATIC_A), ("b", self.STATIC_B)):
            psk = self.ike.get("psk_" + side, self.ike.get("psk"))
            psk_line = f"psk-file = {psk}\n" if psk else ""    # none: auth = pubkey
            edits.append(((static, f"keying = ike\n{psk_line}"
                                   f"{self.ike.get(side, '')}"),))
        return tuple(edits[0]), tuple(edits[1])

    def bg(self, name, ns, *argv):
        p = Proc(name, list(argv), self.workdir, ns)
        self.procs.append(p)
        return p

    def ping(self, count=5, timeout=15, dst="198.18.2.2", ns=None, size=None):
        """size: ICMP payload bytes, sent with DF (-M do)."""
        extra = ["-s", str(size), "-M", "do"] if size is not None else []
        return self.ns(ns or self.ns_a, "ping", "-c", str(count), "-i", "0.2", "-W", "2",
                       *extra, dst, check=False, timeout=timeout)

    def iperf(self, seconds=10, dst="198.18.2.2", streams=1, rate=None):
        """iperf3 from host A to host B; returns the parsed JSON report.
        rate: per stream (iperf3 -b), e.g. "200M"."""
        srv = self.bg("iperf3-server", self.ns_b, "iperf3", "-s", "-1", "-B", dst)
        wait_for(lambda: self.ns(self.ns_b, "ss", "-ltn", check=False).stdout.count(":5201") > 0,
                 10, "iperf3 server")
        r = self.ns(self.ns_a, "iperf3", "-c", dst, "-t", str(seconds), "-J",
                    "-P", str(streams), *(["-b", rate] if rate else []),
                    check=False, timeout=seconds + 30)
        srv.stop()
        if r.returncode != 0:
            raise RuntimeError(f"iperf3 failed: {r.stdout[-2000:]} {r.stderr[-2000:]}")
        return json.loads(r.stdout)

    def capture(self, dev="gwa-out", snaplen=0, name=None):
        """Start tcpdump on a gateway link; returns (proc, pcap path).
        snaplen > 0 keeps only the headers (long iperf3 runs)."""
        path = os.path.join(self.workdir, f"{name or dev}.pcap")
        p = self.bg("tcpdump-" + (name or dev), self.ns_gw, "tcpdump", "-i", dev,
                    "--immediate-mode", "-s", str(snaplen), "-U", "-w", path)
        wait_for(lambda: "listening" in p.output(), 10, "tcpdump")
        return p, path

    @staticmethod
    def stop_capture(p):
        time.sleep(0.5)         # the last frames still on their way
        p.stop()

    def close(self):
        for p in self.procs:
            p.stop()
        for gw in self.gws:
            gw.stop()
        for n in dict.fromkeys((self.ns_a, self.ns_b, self.ns_gw, self.ns_gwb)):
            sh("ip", "netns", "del", n, check=False)
        if os.environ.get("DPVPN_KEEP_LAB"):
            print(f"lab: kept {self.workdir}")
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)


LAB_SAS = [  # configs/lab-a.conf and lab-b.conf: (outer src, dst, SPI, key + salt)
    ("198.19.0.1", "198.19.0.2", 0x1001,
     bytes.fromhex("0123456789abcdef0123456789abcdef01020304")),
    ("198.19.0.2", "198.19.0.1", 0x2001,
     bytes.fromhex("fedcba9876543210fedcba987654321005060708")),
]


def tshark_esp(pcap, sas=LAB_SAS):
    """Decode ESP with tshark given the SAs; returns one dict per ESP packet.

    sas: (src, dst, spi, key+salt bytes) tuples, AES-GCM with 16-byte ICV."""
    args = ["tshark", "-r", pcap, "-o", "esp.enable_encryption_decode:TRUE",
            "-o", "esp.enable_authentication_check:TRUE"]
    for src, dst, spi, key in sas:
        args += ["-o", f'uat:esp_sa:"IPv4","{src}","{dst}","0x{spi:08x}",'
                       f'"AES-GCM with 16 octet ICV [RFC4106]","0x{key.hex()}","NULL",""']
    r = sh(*args, "-Y", "esp", "-T", "fields", "-e", "esp.spi", "-e", "esp.sequence",
           "-e", "esp.icv_good", "-e", "ip.src", "-e", "ip.dst", "-E", "separator=;",
           timeout=60)
    rows = []
    for line in r.stdout.splitlines():
        spi, seq, good, src, dst = line.split(";")
        rows.append({"spi": spi, "seq": seq, "icv_good": good, "ip_src": src, "ip_dst": dst})
    return rows


def frames(pcap, display_filter):
    """Number of frames in pcap that match a tshark display filter."""
    return len(sh("tshark", "-r", pcap, "-Y", display_filter, "-T", "fields",
                  "-e", "frame.number", timeout=120).stdout.split())


def esp_accounting(src, dst, timeout=10):
    """Where the ESP packets gateway src encrypted (to dst) went, once the
    counters settle: decrypted by dst, missed by dst's outside port (frames
    its Linux link received that never reached the dataplane), not sent by
    src or refused by dst (counted drops); gap: what no counter explains."""
    last = None
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        now = (src.ctl("show", "counters"), dst.ctl("show", "counters"),
               dst.ctl("show", "ports")["ports"])
        if last and (now[1]["rx_packets"], [p["rx_missed"] for p in now[2]]) == \
                (last[1]["rx_packets"], [p["rx_missed"] for p in last[2]]):
            break
        last = now
        time.sleep(0.2)
    a, b, ports = now
    acct = {"enc": a["encrypted"], "dec": b["decrypted"],
            "missed": sum(p["rx_missed"] for p in ports if p["role"] == "outside"),
            "unsent": a["drops"]["tx-full"] + a["drops"]["no-neighbour"] +
            a["drops"].get("neigh-timeout", 0),
            "refused": sum(b["drops"][k] for k in ("replay", "bad-icv", "no-mbuf",
                                                   "unknown-spi"))}
    acct["gap"] = acct["enc"] - acct["dec"] - acct["missed"] - acct["unsent"] - acct["refused"]
    return acct


def demo():
    """scripts/demo: the lab, ping, iperf3, counters, the wire proof; then
    the dataplane's own per-core capacity, measured with perf/dpbench.py."""
    with Lab() as lab:
        print(f"demo: lab up (namespaces {lab.ns_a}, {lab.ns_gw}, {lab.ns_b})")
        lab.ping(count=3)       # resolves ARP along the path
        cap, ping_pcap = lab.capture(name="ping")
        r = lab.ping(count=5)
        lab.stop_capture(cap)
        print(r.stdout)
        if r.returncode != 0:
            raise SystemExit("demo: FAILED: ping through the tunnel")
        rows = tshark_esp(ping_pcap)
        bad = [x for x in rows if x["icv_good"] != "1"]
        print(f"demo: tshark, given the SA keys, decodes {len(rows)} ESP packets of the "
              f"ping on gwa-out: {len(rows) - len(bad)} with a correct ICV")
        if not rows or bad:
            raise SystemExit("demo: FAILED: tshark could not verify the ESP ICVs")
        cap, pcap = lab.capture(snaplen=96, name="iperf3")
        rep = lab.iperf(10)
        lab.stop_capture(cap)
        gbps = rep["end"]["sum_received"]["bits_per_second"] / 1e9
        print(f"demo: iperf3 10 s host A -> host B: {gbps:.2f} Gbit/s")
        for gw in lab.gws:
            print(f"--- {gw.name}: dpvpnctl show sa")
            print(gw.ctl_text("show", "sa"))
        print("--- gw-a: dpvpnctl show counters")
        print(lab.a.ctl_text("show", "counters"))
        print("--- gw-b: dpvpnctl show ports")
        print(lab.b.ctl_text("show", "ports"))
        acct = esp_accounting(lab.a, lab.b)
        print("demo: every ESP packet gw-a encrypted is accounted for: {enc} encrypted = "
              "{dec} decrypted by gw-b + {missed} rx_missed on gw-b's outside port (its "
              "af_packet ring overflowed) + {unsent} not sent by gw-a (tx-full, "
              "no-neighbour, neigh-timeout) + {refused} refused by gw-b; unexplained: {gap}"
              .format(**acct))
        if abs(acct["gap"]) > 8:
            raise SystemExit("demo: FAILED: ESP packets lost without a counter")
        esp, other = frames(pcap, "esp"), frames(pcap, "not esp and not arp")
        print(f"demo: tcpdump on gwa-out during iperf3: {esp} ESP frames, "
              f"{other} other frames (ARP aside)")
        if not esp or other:
            raise SystemExit("demo: FAILED: the gateway link carried non-ESP traffic")
    caps = capacity()       # after the lab is gone: its pollers no longer share the CPUs
    print(f"demo: end to end, iperf3 host A -> host B through the lab: {gbps:.2f} Gbit/s "
          "(bounded by the lab: kernel veth links through af_packet, both hosts, both "
          f"gateways and tcpdump on {os.cpu_count()} shared CPUs, not by dpvpn)")
    print("demo: the dataplane's own capacity per core, same binaries on DPDK-native "
          "links (perf/dpbench.py: net_pcap -> dpvpn-dataplane, one worker -> net_null, "
          "AES-128-GCM encap, 1.5 s each): " +
          "; ".join(f"{r['size']} B {r['mpps']:.2f} Mpps = {r['gbps']:.1f} Gbit/s" +
                    (f" (worker off its CPU {r['sched']['rq_wait_share'] * 100:.0f} % of the "
                     "time: low)" if r["sched"].get("rq_wait_share", 0) > 0.01 else "")
                    for r in caps))
    print(f"demo: OK {gbps:.2f}")


def capacity(sizes=(64, 1420), seconds=1.5, warmup=0.5):
    """One worker's encap rate at each size on perf/dpbench.py's harness."""
    sys.path.insert(0, os.path.join(ROOT, "perf"))
    import dpbench
    return [dpbench.run_case("aes128-gcm", "encap", s, 1, seconds, warmup) for s in sizes]


if __name__ == "__main__":
    if sys.argv[1:] == ["demo"]:
        demo()
    else:
        sys.exit("usage: lab.py demo")


def counters_balance(c):
    """A gateway's packet conservation from `show counters` (JSON), once idle:
    (received + made, sent + counted drops + consumed), equal when every
    packet is accounted for.  Made: ARP/ND frames and ICMP errors the
    dataplane built, the extra packets fragmentation made (fragments minus the
    packets split), the packets reassembly completed.  Consumed: ARP/ND frames
    handled on the main lcore, outer fragments taken for reassembly (those
    given up are counted as reass_dropped among them).  IKE: messages built
    for IKE_TX are made, those pushed to the IKE channel consumed.  Packets
    held for a next hop being resolved (neigh_held) are sent or dropped
    within 3 s; until then they count as gone.  Host twins: frames the host
    sent through one are made (host_out), those written to one consumed
    (host_in; the ARP / ND replies a twin gets a copy of are arp_in)."""
    made = (c["arp_out"] + c["icmp_out"] + c["fragments"] - c["fragmented"] + c["reassembled"] +
            c.get("ike_out", 0) + c.get("host_out", 0))
    gone = (c["tx_packets"] + sum(c["drops"].values()) + c["arp_in"] + c["frag_in"] +
            c.get("ike_in", 0) + c.get("neigh_held", 0) + c.get("host_in", 0))
    return c["rx_packets"] + made, gone
