# SPDX-License-Identifier: BSD-3-Clause
"""[ops] issue 27, requirement 6: doc/tester.md's worked example works as
written.  The example is a script, tester/example (topology, a dpvpn DUT,
the search, clean-up); these tests run it in its short mode and check that
it prints a report and leaves no namespace, process, EAL runtime directory
or work directory behind, that the doc shows that script and its commands,
that the tester's programs are committed executable, and that the DUT config
--emit-peer-config writes is one dpvpnd takes (mode 0600).  Needs root and
the build in build/ (about 20 s)."""
import os
import re
import subprocess

import pytest

import lab

pytestmark = [pytest.mark.ops, pytest.mark.nosan]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "tester", "example")
TESTER = os.path.join(ROOT, "tester", "tester.py")
DOC = os.path.join(ROOT, "doc", "tester.md")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def section(text, heading):
    """The markdown text under `## heading`, up to the next `## `."""
    m = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    return m.group(1) if m else ""


def code_blocks(text):
    return re.findall(r"^```\w*\n(.*?)^```", text, re.M | re.S)


def commands(block):
    """The commands of a shell block: comments out, continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", block)
    return [re.sub(r"\s+#.*", "", line).strip() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def options(cmd):
    """A command line's --long options with their values (the next word), as a dict."""
    words = cmd.split()
    return {w: (words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("-") else "")
            for i, w in enumerate(words) if w.startswith("--")}


def leftovers(ns, wd, prefix):
    """What a finished run must not leave: its namespace, a process that names
    its namespace or work directory, its DUT's EAL runtime directory, the
    work directory."""
    out = []
    if ns in lab.sh("ip", "netns", "list").stdout.split():
        out.append(f"namespace {ns}")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if wd in cmd or ns in cmd:
            out.append(f"process {pid}: {cmd}")
    for path in (f"/var/run/dpdk/{prefix}", wd):
        if os.path.exists(path):
            out.append(path)
    return out


# ---- the doc shows the script, the script what the doc says ----

def test_doc_worked_example_is_the_script():
    """The worked example's first command is tester/example; its step-by-step
    commands are the script's: every program and every option (with its
    value where the script has a fixed one) of the doc's tester.py,
    dpvpn-dataplane and dpvpnd lines is in the script."""
    text = section(read(DOC), "A worked example")
    blocks = code_blocks(text)
    assert len(blocks) >= 2, "doc/tester.md: the worked example has lost its commands"
    assert commands(blocks[0]) == ["tester/example"], blocks[0]
    script = read(EXAMPLE)
    steps = commands(blocks[1])
    programs = ("tester/tester.py", "dpvpn-dataplane", "dpvpnd", "ip netns add", "ethtool -K",
                "link add t-a type veth peer name d-in", "link add t-b type veth peer name d-out")
    for prog in programs:
        assert any(prog in c for c in steps), f"doc: no {prog!r} step"
        if not prog.startswith("link add"):
            assert prog in script, f"tester/example: no {prog!r}"
    defaults = {"--tunnels": "4", "--sizes": "64,1400", "--trial": "0.5", "--duration-sum": "1",
                "--min-load": "1e4", "--max-load": "2e6", "--lcores": "0-1"}
    for name, value in defaults.items():
        assert re.search(rf"\b{name[2:].upper().replace('-', '_')}=\S*{re.escape(value)}|"
                         rf"{re.escape(name)} {re.escape(value)}\b", script), (name, value)
    for cmd in steps:
        if not any(p in cmd for p in ("tester.py", "dpvpn-dataplane", "dpvpnd")):
            continue
        for opt, value in options(cmd).items():
            assert opt in script, f"doc's {opt} ({cmd[:40]}...) is not in tester/example"
            if opt in defaults:
                assert value == defaults[opt], (opt, value)
    assert "--emit-peer-config dpvpn" in script and "-o " in script
    assert "not in the .deb" in text or "does not carry it" in read(DOC)


def test_tester_programs_executable():
    """tester/tester.py and tester/example have their run bit in git (not
    only in this checkout)."""
    out = lab.sh("git", "-C", ROOT, "ls-files", "-s", "tester/tester.py", "tester/example").stdout
    modes = dict((line.split()[3], line.split()[0]) for line in out.splitlines())
    assert modes == {"tester/tester.py": "100755", "tester/example": "100755"}, out


def test_emitted_config_private_and_taken(tmp_path):
    """--emit-peer-config dpvpn, to -o FILE and to a shell redirection under
    umask 022: the file is 0600 and dpvpnd -n takes it."""
    wd = str(tmp_path / "wd")
    out1, out2 = str(tmp_path / "dut1.conf"), str(tmp_path / "dut2.conf")
    sh = (f"umask 022 && {TESTER} --tunnels 3 --emit-peer-config dpvpn --workdir {wd} -o {out1}"
          f" && {TESTER} --tunnels 3 --emit-peer-config dpvpn --workdir {wd} > {out2}")
    lab.sh("bash", "-c", sh)
    for path in (out1, out2):
        assert os.stat(path).st_mode & 0o777 == 0o600, oct(os.stat(path).st_mode)
        r = lab.sh(lab.DPVPND, "-n", "-c", path, check=False)
        assert r.returncode == 0, r.stderr
    assert read(out1) == read(out2)     # the keys of the plan kept in wd


# ---- the script itself ----

def test_worked_example_runs_and_cleans_up():
    """tester/example --quick: a report with the NDR and PDR of 64-byte
    frames through the DUT, within a minute; nothing of it left behind."""
    r = subprocess.run([EXAMPLE, "--quick"], capture_output=True, text=True, timeout=120)
    m = re.search(r"config (\S+)/dut\.conf, namespace (\S+)", r.stderr)
    assert m, r.stderr[-3000:]
    wd, ns = m.groups()
    print(r.stdout)
    assert r.returncode == 0, r.stderr[-3000:]
    for goal in ("NDR", "PDR"):
        row = re.search(rf"^\| 64 \| dut_encap\+dut_decap \| {goal} \| ([\d,]+) \|", r.stdout, re.M)
        assert row and int(row.group(1).replace(",", "")) > 1e4, r.stdout
    assert "trial " in r.stderr and " Mpps " in r.stderr     # the progress lines
    left = leftovers(ns, wd, f"{ns}-dut")
    assert not left, left
