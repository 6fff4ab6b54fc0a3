#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""ikebench: IKE SA set-up rate and capacity of one dpvpnd (or strongSwan's
charon) on one core, remote-access clients from dpvpn's tester ([ikepki]
issue 16, requirement 6; ike/NEXT-DESIGN.md B.3).

  generator (tester/tester.py Plan)          DUT
  dpvpnd + dataplane, N IKE tunnels          dpvpnd (taskset: one CPU) + dataplane
  t-b ============== veth ================== d-out
  198.19.0.2 (+ a NAT-T port per client,     198.19.0.1
   or an address per client)

Clients: N tunnels t0..tN-1 of the generator's dpvpnd, each its own IKE SA
to the DUT.  --auth cert: an ECDSA P-256 certificate per client (made once,
cached by count in --workdir), each asking for its address (virtual-ip =
request); the DUT has one connection, remote = %any, pool 10.64.0.0/N.
--auth psk: a [tunnel] per client on both sides, told apart by identity
(dpvpnd's remote = %any is certificates only).

Fill: the clients initiated over the generator's operator socket, at most
--window in progress at once (closed loop: a new one when one is up or has
failed; no overload, no retransmission storm) or, --rate R, R a second (open
loop); a client is up when the generator's dpvpnd logs its CHILD_SA up
(stamped to the ms), failed if not within --deadline s.  Then --hold s, and
how many the DUT still holds (its inbound SAs).  Per row: the set-up rate
(clients up / wall time from the first initiation to the last up), the DUT
dpvpnd's CPU seconds over the fill and SAs per DUT CPU-second (its one core's
capacity, whoever else was slower), the rate over each thousand up in turn
(per_thousand: does it fall as the tables fill?), its RSS, and the generator dpvpnd's CPU
share (at >= 95 % the row is "generator bound").  --restart-dpvpnd: then the
DUT's dpvpnd is killed (-9) and started again; the row says how long the new
one took to take every IKE SA up and whether any tunnel was negotiated again.

Results are appended to --json (perf/results/ike-setup.json); perf/tables.py
ike renders them.  Not a test: run it by hand (perf/run ike), as root.
"""
import argparse
import datetime
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "helpers"))
sys.path.insert(0, os.path.join(ROOT, "tester"))
import lab  # noqa: E402
import tester as T  # noqa: E402

UP_RE = re.compile(rb"^(\S+) dpvpnd: tunnel t(\d+): IKE CHILD_SA up", re.M)
TICKS = os.sysconf("SC_CLK_TCK")
SHOW_MAX = 100          # clients up to which a row lists the leases (tests)


def link(ns, a, b):
    """A veth pair a <-> b in ns, up, no offloads, no IPv6 chatter."""
    lab.sh("ip", "-n", ns, "link", "add", a, "type", "veth", "peer", "name", b)
    for dev in (a, b):
        lab.sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off", "tso", "off",
               "gso", "off", "gro", "off", check=False)
        lab.sh("ip", "netns", "exec", ns, "sysctl", "-qw",
               f"net.ipv6.conf.{dev}.disable_ipv6=1", check=False)
        lab.sh("ip", "-n", ns, "link", "set", dev, "up")


def start_gateway(g, ns, timeout=120):
    """lab.Gateway.start, dpvpnd in ns too: the IKE channel's queue is that
    namespace's net.unix.max_dgram_qlen (10 by default: a dpvpnd busy for
    the time of 10 messages loses the 11th as punt-full), raised there."""
    g.start_dataplane(timeout)
    g.dpvpnd = lab.Proc(g.name + "-dpvpnd", [lab.DPVPND, "-c", g.config, "-D", g.dp_sock,
                                             "-s", g.ctl_sock], g.dir, ns)
    g.wait_dpvpnd(timeout)
    # "ready" comes before IKE has its connections (10 000 certificates: ~20 s)
    lab.wait_for(lambda: "channel open" in g.dpvpnd.output() or not g.dpvpnd.alive(),
                 600, f"{g.name} dpvpnd's IKE")


CHARON_CONF = """\
# strongswan.conf of perf/ikebench.py's charon DUT (ike/NEXT-DESIGN.md B.1 c)
charon {{
    load_modular = yes
    install_routes = no
    install_virtual_ip = no
    keep_alive = 0s
    ikesa_table_size = 16384
    ikesa_table_segments = 16
    init_limit_half_open = 0
    cookie_threshold = {cookie}
    block_threshold = 1000000
    plugins {{
        include /etc/strongswan.d/charon/*.conf
    }}
    plugins {{
        kernel-libipsec {{
            load = yes
        }}
        vici {{
            socket = unix://{dir}/run/charon.vici
        }}
    }}
    filelog {{
        swan {{
            path = {dir}/charon.log
            append = no
            default = 0
        }}
    }}
    syslog {{
    }}
}}
swanctl {{
    load = random nonce openssl pem pkcs1 pkcs8 x509 pubkey
}}
"""


def swanctl_ra(plan, psk):
    """charon as the DUT: one connection for every client (remote_addrs
    %any, a pool), certificates (the tester's CA) or one PSK for any id."""
    auth = ("            auth = pubkey\n            certs = dut.pem\n" if plan.ike_auth == "cert"
            else "            auth = psk\n")
    rauth = ("            auth = pubkey\n            cacerts = ca.pem\n"
             if plan.ike_auth == "cert" else "            auth = psk\n")
    return (f"connections {{\n    rw {{\n        version = 2\n"
            f"        local_addrs = {plan.dut_outer}\n        remote_addrs = %any\n"
            f"        pools = rw\n        encap = yes\n        mobike = no\n"
            f"        dpd_delay = 0s\n        rekey_time = 0s\n        reauth_time = 0s\n"
            f"        proposals = {plan.ike_proposal}\n"
            f"        local {{\n{auth}            id = dut.dpvpn.test\n        }}\n"
            f"        remote {{\n{rauth}            id = %any\n        }}\n"
            f"        children {{\n            rw {{\n                mode = tunnel\n"
            f"                local_ts = {plan.clear_net}\n"
            f"                esp_proposals = aes128gcm16\n                rekey_time = 0s\n"
            f"                start_action = none\n                dpd_action = none\n"
            f"            }}\n        }}\n    }}\n}}\n"
            f"pools {{\n    rw {{\n        addrs = {plan.ra_pool()}\n    }}\n}}\n"
            + (f"secrets {{\n    ike-any {{\n        secret = \"{psk}\"\n    }}\n}}\n"
               if plan.ike_auth == "psk" else ""))


def cpu_s(pid):
    """utime + stime of a process (all its threads), seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def heap_mb(g):
    """The DUT dataplane's hugepage heap in use (DPDK telemetry /eal/heap_info),
    MiB; None without one (charon)."""
    if g is None:
        return None
    import probe
    tel = probe.Telemetry(g.file_prefix)
    try:
        return round(sum(tel.cmd(f"/eal/heap_info,{h}")["Alloc_size"]
                         for h in tel.cmd("/eal/heap_list")) / 2**20, 1)
    finally:
        tel.close()


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def stamp_s(text):
    """dpvpnd's log stamp (logstamp.c: ISO 8601 with ms and offset) -> epoch s."""
    return datetime.datetime.fromisoformat(text.decode()).timestamp()


class UpWatch:
    """The generator dpvpnd's log, read as it grows: {tunnel: time up}."""

    def __init__(self, path):
        self.path, self.pos, self.up, self.rest = path, 0, {}, b""

    def poll(self):
        with open(self.path, "rb") as f:
            f.seek(self.pos)
            data = f.read()
        self.pos += len(data)
        data, cut = self.rest + data, (self.rest + data).rfind(b"\n") + 1
        self.rest = data[cut:]
        for m in UP_RE.finditer(data[:cut]):
            self.up.setdefault(int(m.group(2)), stamp_s(m.group(1)))
        return self.up


class Bench:
    """The namespace, the DUT (dpvpnd or charon) and the generator."""

    def __init__(self, a):
        self.a = a
        self.tag = secrets.token_hex(2)
        self.ns = f"dpvpn-{self.tag}-ikb"
        self.dir = tempfile.mkdtemp(prefix="dpvpn-ikebench-", dir=a.workdir)
        self.plan = T.Plan(a.clients, outer_addresses=a.outer_addresses,
                           nat_t_ports=None if a.outer_addresses else a.nat_t_ports)
        self.plan.use_ike(os.path.join(self.dir, "ike.psk"))
        self.plan.ike_start = False
        self.plan.ike_dpd = a.dpd
        if a.auth == "cert":
            self.plan.use_pki(a.workdir)
        if a.auth == "cert" or a.dut == "charon":
            self.plan.use_ra()
        if a.dut == "charon":
            self.plan.encap_udp = True      # kernel-libipsec: ESP in UDP only
        self.dut = self.gen = self.swan = None

    def __enter__(self):
        try:
            lab.sh("ip", "netns", "add", self.ns)
            link(self.ns, "t-a", "d-in")
            link(self.ns, "t-b", "d-out")
            lab.sh("ip", "netns", "exec", self.ns, "sysctl", "-qw",
                   f"net.unix.max_dgram_qlen={self.a.unix_qlen}")
            self.start_dut()
            gcfg = os.path.join(self.dir, "gen.conf")
            T.private_file(gcfg, self.plan.tester_config())
            self.gen = lab.Gateway("gen", gcfg, ["net_af_packet0,iface=t-a",
                                                 "net_af_packet1,iface=t-b"],
                                   self.dir, ["--lcores", f"0@{self.a.gen_core},"
                                              f"1@{self.a.gen_core}"], self.ns,
                                   dp_args=["--max-sa", str(2 * self.a.clients + 16),
                                            "--ike-rate", str(self.a.ike_rate),
                                            "--idle-sleep-us", str(self.a.idle_sleep_us)])
            start_gateway(self.gen, self.ns)
            os.sched_setaffinity(self.gen.dpvpnd.p.pid, {self.a.gen_core})
        except BaseException:
            self.close()
            raise
        return self

    def start_charon(self):
        """charon in a namespace of its own (d-in, d-out with the DUT's
        addresses), kernel-libipsec (ESP in userspace: UDP encapsulation),
        every thread on --dut-core (taskset)."""
        import swan
        a, p = self.a, self.plan
        self.dns = f"dpvpn-{self.tag}-ikd"
        lab.sh("ip", "netns", "add", self.dns)
        for dev, addr, net in (("d-in", p.dut_clear, p.clear_net),
                               ("d-out", p.dut_outer, p.outer_net)):
            lab.sh("ip", "-n", self.ns, "link", "set", dev, "netns", self.dns)
            lab.sh("ip", "-n", self.dns, "addr", "add", f"{addr}/{net.prefixlen}", "dev", dev)
            lab.sh("ip", "-n", self.dns, "link", "set", dev, "up")
        lab.sh("ip", "-n", self.dns, "link", "set", "lo", "up")
        if p.outer_addresses:
            lab.sh("ip", "-n", self.dns, "route", "add", str(p.outer_addresses), "via",
                   str(p.tester_outer))
        c = swan.Charon("charon", self.dns, self.dir, p.dut_outer, p.tester_outer,
                        p.clear_net, p.clear_net, "aes128gcm16")
        with open(c.conf, "w") as f:
            f.write(CHARON_CONF.format(dir=c.dir, cookie=a.cookie_threshold))
        d = os.path.join(c.dir, "swanctl")
        T.private_file(os.path.join(d, "swanctl.conf"),
                       swanctl_ra(p, p.psk_text() if p.ike_auth == "psk" else None))
        if p.ike_auth == "cert":
            for sub, src, dst in (("x509", "dut.pem", "dut.pem"),
                                  ("x509ca", "ca.pem", "ca.pem"),
                                  ("pkcs8", "dut.key", "dut.key")):
                os.makedirs(os.path.join(d, sub), exist_ok=True)
                shutil.copy(os.path.join(p.pki_dir, src), os.path.join(d, sub, dst))
        script = (f"mount --bind {c.dir}/run /run && "
                  f"exec env STRONGSWAN_CONF={c.conf} {swan.CHARON}")
        c.proc = lab.Proc("charon", ["taskset", "-c", str(a.dut_core), "unshare", "-m",
                                     "--propagation", "private", "sh", "-c", script],
                          c.dir, self.dns)
        sock = os.path.join(c.dir, "run", "charon.vici")
        lab.wait_for(lambda: os.path.exists(sock) or not c.proc.alive(), 30, "charon vici")
        if not c.proc.alive():
            raise RuntimeError(f"charon exited:\n{c.proc.output()}\n{c.log_text()}")
        c.swanctl("--load-all", "--noprompt")
        self.swan, self.dut_pid = c, c.proc.p.pid

    def start_dut(self):
        a = self.a
        if a.dut == "charon":
            self.start_charon()
            return
        cfg = os.path.join(self.dir, "dut.conf")
        T.private_file(cfg, self.plan.dut_config_dpvpn())
        os.environ["DPVPND_IKE_COOKIE_THRESHOLD"] = str(a.cookie_threshold)
        self.dut = lab.Gateway("dut", cfg, ["net_af_packet0,iface=d-in",
                                            "net_af_packet1,iface=d-out"],
                               self.dir, ["--lcores", f"0@{a.gen_core},1@{a.gen_core}"],
                               self.ns, dp_args=["--max-sa", str(a.max_sa),
                                                 "--ike-rate", str(a.ike_rate),
                                                 "--idle-sleep-us", str(a.idle_sleep_us)])
        start_gateway(self.dut, self.ns)
        self.dut_pid = self.dut.dpvpnd.p.pid
        os.sched_setaffinity(self.dut_pid, {a.dut_core})

    def losses(self):
        """Where IKE messages were lost: both dataplanes' non-zero drops, the
        DUT's IKE counters (retransmissions answered, half-open expired)."""
        out = {}
        for who, g in (("dut", self.dut), ("generator", self.gen)):
            if g is None:       # charon
                continue
            c = g.ctl("show", "counters")
            out[f"{who}_drops"] = {k: v for k, v in c.get("drops", {}).items() if v}
            if self.a.clients > SHOW_MAX:     # show ike lists every SA: over 1 MiB
                continue
            st = g.ctl("show", "ike").get("stats", {})
            out[f"{who}_ike"] = {k: st.get(k) for k in ("rx", "tx", "retransmits",
                                                       "resent_responses",
                                                       "half_open_expired")}
        return out

    def dut_held(self):
        """Clients the DUT holds now: its inbound ESP SAs (charon: its IKE SAs)."""
        if self.swan is not None:
            m = re.search(r"IKE_SAs: (\d+) total", self.swan.swanctl("--stats"))
            return int(m.group(1)) if m else None
        return sum(1 for sa in self.dut.ctl("show", "sa")["sas"] if sa["dir"] == "in")

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            for g in (self.gen, self.dut, self.swan):
                if g is not None:
                    try:
                        g.stop()
                    except Exception as e:    # the namespaces go whatever a stop said
                        print(f"ikebench: stopping {g}: {e}", file=sys.stderr)
        finally:
            self._drop_namespaces()

    def _drop_namespaces(self):
        lab.sh("ip", "netns", "del", self.ns, check=False)
        if getattr(self, "dns", None):
            lab.sh("ip", "netns", "del", self.dns, check=False)
        if not self.a.keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def fill(b, count, window=None, rate=None, deadline=5.0, progress=True, limit=None):
    """Initiate t0..t(count-1): window at most in progress, or rate a second.
    Returns the fill record (see the module docstring)."""
    watch = UpWatch(b.gen.dpvpnd.log)
    ctl = T.Ctl(b.gen.ctl_sock)
    started, failed, busy = {}, set(), set()
    dut_cpu0, gen_cpu0 = cpu_s(b.dut_pid), cpu_s(b.gen.dpvpnd.p.pid)
    t0 = time.time()
    nxt, shown, in_ctl, py0 = 0, t0, 0.0, time.process_time()
    try:
        while nxt < count or busy:
            if progress and time.time() - shown >= 5:
                shown = time.time()
                print(f"ikebench: {shown - t0:6.1f} s: {len(watch.up)} up, {len(busy)} in "
                      f"progress, {len(failed)} failed", file=sys.stderr, flush=True)
            up = watch.poll()
            now = time.time()
            for i in [i for i in busy if i in up or now - started[i] > deadline]:
                busy.discard(i)
                if i not in up:
                    failed.add(i)
            # the first alone: the generator resolves the DUT's address (ARP)
            # before a window of IKE_SA_INITs waits for it (no-neighbour drops)
            if limit and now - t0 > limit and nxt < count:
                print(f"ikebench: --time-limit {limit:g} s: {nxt} of {count} initiated",
                      file=sys.stderr, flush=True)
                count = nxt     # offered: those initiated; the rest never were
            cap = window if up else 1
            while nxt < count and (len(busy) < cap if rate is None else
                                   (up or not busy) and time.time() >= t0 + nxt / rate):
                started[nxt] = time.time()
                try:
                    ctl.ike("initiate", f"t{nxt}")
                    busy.add(nxt)
                except RuntimeError:
                    failed.add(nxt)
                in_ctl += time.time() - started[nxt]
                nxt += 1
            time.sleep(0.001)
    finally:
        ctl.close()
    time.sleep(0.2)
    up = watch.poll()
    wall = max(up.values()) - t0 if up else 0.0
    dut_cpu = cpu_s(b.dut_pid) - dut_cpu0
    gen_cpu = cpu_s(b.gen.dpvpnd.p.pid) - gen_cpu0
    late = [i for i in up if i not in started or up[i] - started[i] > deadline]
    lat = sorted(up[i] - started[i] for i in up if i in started)
    n_up = len(up) - len(late)
    return {"per_thousand": per_thousand(sorted(up.values()), t0), "offered": count, "up": n_up, "failed": count - n_up, "wall_s": round(wall, 2),
            "rate": round(n_up / wall, 1) if wall else None,
            "setup_s": {"p50": round(lat[len(lat) // 2], 4) if lat else None,
                        "p99": round(lat[len(lat) * 99 // 100], 4) if lat else None,
                        "max": round(lat[-1], 4) if lat else None},
            "dut_cpu_s": round(dut_cpu, 2),
            # the harness: its wall time in the generator's initiate calls, its own CPU
            "initiate_calls_s": round(in_ctl, 2),
            "harness_cpu_s": round(time.process_time() - py0, 2),
            "sas_per_cpu_s": round(n_up / dut_cpu, 1) if dut_cpu else None,
            "generator_cpu_pct": round(100 * gen_cpu / wall, 1) if wall else None}


TAKEN_RE = re.compile(rb"^(\S+) dpvpnd: IKE: (\d+) of (\d+) IKE SAs taken up again; "
                      rb"(\d+) SAs", re.M)


def restart_dpvpnd(b, watch_s):
    """--restart-dpvpnd ([scale] issue 28 req. 3, [ops] issue 27): kill -9 the
    DUT's dpvpnd with every tunnel up and start another against its running
    dataplane, as systemd would; it takes the IKE SAs up from the records the
    dataplane keeps.  Measured: the time from the kill to the log line that
    says how many were taken up (and to its operator socket answering), its
    CPU for that; then, over watch_s, whether any CHILD_SA was made again
    (the generator's log) and whether the dataplane's SAs are the same ones
    (same SPIs, none added or gone), and its drops that grew."""
    g = b.dut
    before, drops0 = b.dut.sa_ids(), g.ctl("show", "counters")["drops"]
    gen_pos = os.path.getsize(b.gen.dpvpnd.log)
    t_kill = time.time()
    g.dpvpnd.kill9()
    g.dpvpnd = lab.Proc("dut-dpvpnd-restarted", [lab.DPVPND, "-c", g.config, "-D", g.dp_sock,
                                                 "-s", g.ctl_sock], g.dir, g.dpvpnd_netns)
    os.sched_setaffinity(g.dpvpnd.p.pid, {b.a.dut_core})
    b.dut_pid = g.dpvpnd.p.pid
    lab.wait_for(lambda: TAKEN_RE.search(open(g.dpvpnd.log, "rb").read()) or
                 not g.dpvpnd.alive(), 300, "the new dpvpnd's take-up")
    m = TAKEN_RE.search(open(g.dpvpnd.log, "rb").read())
    if m is None:
        raise RuntimeError(f"the new dpvpnd:\n{g.dpvpnd.output()[-4000:]}")
    taken_s, cpu = stamp_s(m.group(1)) - t_kill, cpu_s(g.dpvpnd.p.pid)
    lab.wait_for(lambda: "ready" in g.dpvpnd.output() or not g.dpvpnd.alive(), 300,
                 "the new dpvpnd ready")
    ready_s = time.time() - t_kill
    time.sleep(watch_s)
    after, drops1 = b.dut.sa_ids(), g.ctl("show", "counters")["drops"]
    with open(b.gen.dpvpnd.log, "rb") as f:
        f.seek(gen_pos)
        again = len(UP_RE.findall(f.read()))
    return {"taken_up": int(m.group(2)), "records": int(m.group(3)),
            "left_to_replace": int(m.group(4)), "taken_up_s": round(taken_s, 3),
            "ready_s": round(ready_s, 3), "dpvpnd_cpu_s": round(cpu, 2),
            "watched_s": watch_s, "child_sas_made_again": again,
            "sas_before": len(before), "sas_same": before == after,
            "sas_gone": len(before - after), "sas_new": len(after - before),
            "drops_grew": {k: v - drops0.get(k, 0) for k, v in drops1.items()
                           if v != drops0.get(k, 0)}}


def per_thousand(ups, t0, block=1000):
    """Set-up rate over each thousand tunnels up, in the order they came up
    (the first from the first initiation): does it fall as the tables fill?
    last_vs_first: the last whole thousand's rate over the first's."""
    rates = []
    for k in range(len(ups) // block):
        start = t0 if k == 0 else ups[k * block - 1]
        span = ups[(k + 1) * block - 1] - start
        rates.append(round(block / span, 1) if span > 0 else None)
    ok = len(rates) >= 2 and rates[0] and rates[-1]
    return {"rates": rates, "last_vs_first": round(rates[-1] / rates[0], 3) if ok else None}


def run(a):
    row = {"machine": T.machine(), "commit": subprocess.run(
               ["git", "-C", ROOT, "describe", "--always", "--dirty"],
               capture_output=True, text=True).stdout.strip(),
           "dut": a.dut, "auth": a.auth, "clients": a.clients,
           "addressing": (f"outer addresses {a.outer_addresses}" if a.outer_addresses else
                          f"NAT-T ports {a.nat_t_ports}.."),
           "settings": {"window": a.window if a.rate is None else None, "rate": a.rate,
                        "deadline_s": a.deadline, "ike_rate": a.ike_rate,
                        "cookie_threshold": a.cookie_threshold, "max_sa": a.max_sa,
                        "dh": "x25519", "cert_key": "ECDSA P-256" if a.auth == "cert" else None,
                        "idle_sleep_us": a.idle_sleep_us, "unix_qlen": a.unix_qlen,
                        "dut_core": a.dut_core, "generator_core": a.gen_core, "dpd": a.dpd},
           "command": " ".join(["perf/ikebench.py", *sys.argv[1:]])}
    t0 = time.time()
    with Bench(a) as b:
        row["prepare_s"] = round(time.time() - t0, 1)
        rss0, heap0 = rss_mb(b.dut_pid), heap_mb(b.dut)
        f = fill(b, a.clients, None if a.rate else a.window, a.rate, a.deadline,
                 limit=a.time_limit)
        f["time_limited"] = f["offered"] < a.clients
        print(f"ikebench: fill {json.dumps(f)}", file=sys.stderr, flush=True)
        f["dut_rss_mb_filled"] = rss_mb(b.dut_pid)
        # memory per tunnel: the DUT daemon's growth (its IKE SA and CHILD_SA
        # bookkeeping) and its dataplane's heap growth (beyond what --max-sa
        # reserved at start), each over the tunnels up
        heap1 = heap_mb(b.dut)
        f["dut_rss_mb_empty"], f["dut_heap_mb_empty"], f["dut_heap_mb_filled"] = \
            rss0, heap0, heap1
        if f["up"]:
            f["dut_daemon_bytes_per_tunnel"] = round((f["dut_rss_mb_filled"] - rss0) * 2**20 /
                                                     f["up"])
            if heap0 is not None:
                f["dut_dataplane_heap_bytes_per_tunnel"] = round((heap1 - heap0) * 2**20 /
                                                                 f["up"])
        f.update(b.losses())
        time.sleep(a.hold)
        f["hold_s"] = a.hold
        f["held_after_hold"] = b.dut_held()
        f["dut_rss_mb"] = rss_mb(b.dut_pid)
        row["fill"] = f
        if a.restart_dpvpnd:
            row["restart_dpvpnd"] = restart_dpvpnd(b, a.restart_watch)
            print(f"ikebench: restart {json.dumps(row['restart_dpvpnd'])}", file=sys.stderr,
                  flush=True)
        # a smoke (few clients): who got which address
        if a.clients <= SHOW_MAX and b.plan.ike_ra and b.dut is not None:
            row["leases"] = sorted(c["vip"] for c in b.dut.ctl("show", "ike")["clients"])
            row["client_sources"] = sorted(p["src"] for p in
                                           b.gen.ctl("show", "policies")["policies"])
        row["generator_bound"] = (f["generator_cpu_pct"] or 0) >= 95
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dut", choices=("dpvpnd", "charon"), default="dpvpnd")
    ap.add_argument("--auth", choices=("cert", "psk"), default="cert")
    ap.add_argument("--clients", type=int, default=10000)
    ap.add_argument("--nat-t-ports", type=int, default=40000, metavar="PORT",
                    help="client i from UDP port PORT + i of one address (default)")
    ap.add_argument("--outer-addresses", metavar="PREFIX",
                    help="client i from address .1 + i of PREFIX instead")
    ap.add_argument("--dpd", type=int, metavar="SECONDS",
                    help="dpd = SECONDS on both sides' tunnels (dpvpnd's default 30: "
                         "at 100 000 idle clients 3 300 liveness checks a second each way)")
    ap.add_argument("--window", type=int, default=32,
                    help="clients in progress at once (closed loop; default 32)")
    ap.add_argument("--rate", type=float, help="open loop: clients initiated a second")
    ap.add_argument("--deadline", type=float, default=5.0,
                    help="a client not up this long after its initiation has failed [s]")
    ap.add_argument("--time-limit", type=float,
                    help="initiate no more after this long [s]: the row offers fewer")
    ap.add_argument("--hold", type=float, default=30.0, help="then held this long [s]")
    ap.add_argument("--cookie-threshold", type=int, default=1000000,
                    help="the DUT's half-open SAs before cookies (dpvpnd's default 32)")
    ap.add_argument("--ike-rate", type=int, default=200000,
                    help="both dataplanes' IKE punt limit a second (default 1000)")
    ap.add_argument("--idle-sleep-us", type=int, default=500,
                    help="both dataplanes' back-off once idle (their pollers share the "
                         "generator's CPU; default 500)")
    ap.add_argument("--unix-qlen", type=int, default=4096,
                    help="net.unix.max_dgram_qlen in the bench's namespace: the IKE "
                         "channel's queue (the kernel's default 10)")
    ap.add_argument("--max-sa", type=int, default=32768, help="the DUT dataplane's")
    ap.add_argument("--dut-core", type=int, default=1, help="the DUT dpvpnd's CPU")
    ap.add_argument("--gen-core", type=int, default=0,
                    help="the generator's and both dataplanes' CPU")
    ap.add_argument("--restart-dpvpnd", action="store_true",
                    help="after the hold: kill -9 the DUT's dpvpnd and start another; "
                         "how long until it took every IKE SA up, and whether any was "
                         "negotiated again (dpvpnd DUT only)")
    ap.add_argument("--restart-watch", type=float, default=10.0,
                    help="watch this long after the restart [s] (default 10)")
    ap.add_argument("--workdir", default="/var/tmp/dpvpn-ikebench")
    ap.add_argument("--keep", action="store_true", help="keep the run's logs and configs")
    ap.add_argument("--json", help="append the row to this JSON list")
    a = ap.parse_args(argv)
    if a.restart_dpvpnd and a.dut != "dpvpnd":
        ap.error("--restart-dpvpnd: a dpvpnd DUT only")
    os.makedirs(a.workdir, mode=0o700, exist_ok=True)
    row = run(a)
    print(json.dumps(row, indent=2))
    if a.json:
        rows = []
        if os.path.exists(a.json):
            with open(a.json) as f:
                rows = json.load(f)
        rows.append(row)
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
