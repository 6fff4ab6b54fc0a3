# SPDX-License-Identifier: BSD-3-Clause
"""FRR (Debian 12's frr 8.4) for one network namespace, without systemd.

    with Frr("gwa", bgpd=CONF) as r:
        r.wait_established("169.254.10.2", timeout=20)
        r.vtysh("show ip bgp")
        r.configure("router bgp 65001", "address-family ipv4 unicast",
                    "no network 198.18.1.0/24")

zebra and bgpd run in the foreground (no -d) as children of this process,
each under `ip netns exec NS` (which execs, so the pid is the daemon's), with
every path in a temporary directory of their own, so any number of
namespaces can each have theirs and nothing in /etc/frr or /run/frr is used:

    ip netns exec NS /usr/lib/frr/zebra -f DIR/zebra.conf -i DIR/zebra.pid
        -z DIR/zserv.api --vty_socket DIR -u frr -g frr -P 0 --log stdout
    ip netns exec NS /usr/lib/frr/bgpd  -f DIR/bgpd.conf  -i DIR/bgpd.pid
        -z DIR/zserv.api --vty_socket DIR -u frr -g frr -P 0 --log stdout
    vtysh --vty_socket DIR -c CMD...

Found with 8.4's --help and by trying: `-u root -g root` is refused
("user(root) is not part of vty group specified(frrvty)": Debian builds FRR
with --enable-vty-group=frrvty), so the daemons run as frr (which is in
frrvty) and DIR belongs to frr; they keep the capabilities they need (FRR's
privs code).  `-P 0` turns the TCP vty off (each daemon would listen on
localhost:2601/2605 of its namespace otherwise).  `-N` (pathspace) would
put the files under /etc/frr/NAME and /var/run/frr/NAME: not needed when
every path is given.  vtysh reaches the daemons through the unix sockets
DIR/zebra.vty and DIR/bgpd.vty (a path: no namespace needed).

Every wait is bounded; exit stops bgpd then zebra (SIGTERM, then SIGKILL
after 10 s) and removes DIR (kept if DPVPN_KEEP_LAB is set), even after a
failure half-way through start.
"""
import json
import os
import pwd
import shutil
import subprocess
import tempfile

from lab import Managed, Proc, wait_for

FRR_LIB = "/usr/lib/frr"
ZEBRA = os.path.join(FRR_LIB, "zebra")
BGPD = os.path.join(FRR_LIB, "bgpd")
BFDD = os.path.join(FRR_LIB, "bfdd")
VTYSH = "/usr/bin/vtysh"
DAEMONS = ("zebra", "bfdd", "bgpd")     # started in this order (those configured), stopped
                                        # in reverse
BFD_FAST = """\
bfd
 profile fast
  transmit-interval 100
  receive-interval 100
  detect-multiplier 3
 exit
exit
"""


def bgpd_conf(asn, peer_asn, router_id, peers, prefix, bfd=None, peers6=(), prefix6=None):
    """bgpd.conf for eBGP with timers 1/3 to each of peers, announcing
    prefix, ECMP over two paths; bfd: a bfdd profile (BFD_FAST's "fast")
    each session follows (bfdd must run: Frr(..., bfdd=BFD_FAST)); peers6:
    IPv6 sessions (over IPv6 addresses) for the IPv6 unicast family only,
    announcing prefix6."""
    nbr = "".join(f""" neighbor {p} remote-as {peer_asn}
 neighbor {p} timers 1 3
 neighbor {p} timers connect 1
""" + (f" neighbor {p} bfd profile {bfd}\n" if bfd else "") for p in (*peers, *peers6))
    v6 = ""
    if peers6:
        v6 = (" address-family ipv6 unicast\n" +
              "".join(f"  neighbor {p} activate\n" for p in peers6) +
              f"  network {prefix6}\n  maximum-paths 2\n exit-address-family\n")
    no4 = "".join(f"  no neighbor {p} activate\n" for p in peers6)
    return f"""\
router bgp {asn}
 bgp router-id {router_id}
 no bgp ebgp-requires-policy
 no bgp network import-check
 timers bgp 1 3
{nbr} address-family ipv4 unicast
  network {prefix}
  maximum-paths 2
{no4} exit-address-family
{v6}"""


def available():
    """FRR installed (the `frr` marked tests skip without it)."""
    return all(os.access(p, os.X_OK) for p in (ZEBRA, BGPD, BFDD, VTYSH))


class Frr(Managed):
    """zebra + bgpd in namespace ns, configured from strings."""

    def __init__(self, ns, bgpd, zebra=None, timeout=15, bfdd=None):
        self.ns = ns
        self.conf = {"zebra": zebra if zebra is not None else f"hostname {ns}\n",
                     "bgpd": bgpd}
        if bfdd is not None:
            self.conf["bfdd"] = bfdd
        self.daemons = tuple(d for d in DAEMONS if d in self.conf)
        self.timeout = timeout
        self.dir = None
        self.procs = {}

    def open(self):
        self._start()

    def argv(self, daemon):
        d = self.dir
        own = ["--bfdctl", f"{d}/bfdd.sock"] if daemon == "bfdd" else []
        return [os.path.join(FRR_LIB, daemon), "-f", f"{d}/{daemon}.conf",
                "-i", f"{d}/{daemon}.pid", "-z", f"{d}/zserv.api", "--vty_socket", d,
                "-u", "frr", "-g", "frr", "-P", "0", "--log", "stdout", *own]

    def _start(self):
        frr = pwd.getpwnam("frr")
        self.dir = tempfile.mkdtemp(prefix=f"frr-{self.ns}-")
        os.chmod(self.dir, 0o755)
        os.chown(self.dir, frr.pw_uid, frr.pw_gid)
        for daemon in self.daemons:
            path = os.path.join(self.dir, f"{daemon}.conf")
            with open(path, "w") as f:
                f.write(self.conf[daemon])
            os.chown(path, frr.pw_uid, frr.pw_gid)
        for daemon in self.daemons:
            p = Proc(daemon, self.argv(daemon), self.dir, netns=self.ns)
            self.procs[daemon] = p
            sock = os.path.join(self.dir, f"{daemon}.vty")
            wait_for(lambda: os.path.exists(sock) or not p.alive(), self.timeout,
                     f"{daemon} in {self.ns} ({sock})")
            if not p.alive():
                raise RuntimeError(f"{daemon} in {self.ns} exited:\n{p.output()}")

    def vtysh(self, *cmds, timeout=10):
        """The output of vtysh -c CMD... (CalledProcessError if it fails)."""
        argv = [VTYSH, "--vty_socket", self.dir]
        for c in cmds:
            argv += ["-c", c]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise subprocess.CalledProcessError(r.returncode, argv, r.stdout, r.stderr)
        return r.stdout

    def json(self, cmd):
        return json.loads(self.vtysh(cmd))

    def configure(self, *lines):
        """Lines typed after `configure terminal` (one context per line)."""
        return self.vtysh("configure terminal", *lines)

    def bgp_summary(self):
        return self.json("show bgp summary json")

    def peer_state(self, peer, afi="ipv4Unicast"):
        return self.bgp_summary().get(afi, {}).get("peers", {}).get(peer, {}).get("state")

    def bfd_peer(self, peer):
        """bfdd's session to peer ({"status": "up"|"down"|..., ...}), or {}."""
        return next((p for p in self.json("show bfd peers json") if p.get("peer") == peer), {})

    def wait_established(self, peer, timeout=20, afi="ipv4Unicast"):
        wait_for(lambda: self.peer_state(peer, afi) == "Established", timeout,
                 f"BGP session {self.ns} -> {peer} Established", interval=0.3)

    def log(self, daemon):
        return self.procs[daemon].output() if daemon in self.procs else ""

    def close(self):
        for daemon in reversed(DAEMONS):
            if daemon in self.procs:
                self.procs[daemon].stop()
        self.procs = {}
        if self.dir and not os.environ.get("DPVPN_KEEP_LAB"):
            shutil.rmtree(self.dir, ignore_errors=True)
