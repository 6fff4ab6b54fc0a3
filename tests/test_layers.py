# SPDX-License-Identifier: BSD-3-Clause
"""The IKE engine stays in layers ([house] issue 29, requirement 1): no file
of ike/ calls a file that calls it, directly or round a longer loop.  The
transport (ike/ike_transport.c) is below the exchanges, the SA table above
it, the exchanges (one file each) above both, and the dispatcher and the
timer (ike/ike_sa.c, ike/ike_timer.c) on top, deciding the next exchange;
a call back up from a lower file makes a cycle in the file-level call graph,
which this test prints.  Text only: no build, no root, well under a second.
The checker is run on two tiny files that call each other too
(test_call_cycle_check_can_fail), so that it cannot pass whatever the code
says."""
import glob
import os
import re

import pytest

pytestmark = pytest.mark.house

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IKE = os.path.join(ROOT, "ike")

COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"' r"|'(?:\\.|[^'\\\n])*'")
# a definition's head: at a line's start, a return type (or nothing, when it
# is on the line above) and the name, then its parameters and '{' before ';'
DEF_HEAD = re.compile(r"^((?:[A-Za-z_][\w \t*]*?[ \t*])?)([A-Za-z_]\w*)\(", re.M)
END_OF_HEAD = re.compile(r"[;{]")
# a call by name: not a member (ops.send(), ops->log()), not a keyword
CALL = re.compile(r"(?<![\w.>])([A-Za-z_]\w*)\s*\(")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "_Static_assert",
            "__attribute__", "defined", "_Alignof", "alignof", "offsetof"}


def code_of(path):
    """A C file without its comments and with its literals emptied (line breaks kept)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = COMMENT.sub(lambda m: "\n" * m.group().count("\n"), text)
    return LITERAL.sub('""', text)


def definitions(code):
    """{name: static?} for the functions a file defines."""
    out = {}
    for m in DEF_HEAD.finditer(code):
        end = END_OF_HEAD.search(code, m.end())
        if end is None or end.group() != "{":
            continue
        above = code[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        specifiers = m.group(1) if m.group(1).strip() else above
        out[m.group(2)] = re.search(r"\bstatic\b", specifiers) is not None
    return out


def call_graph(directory):
    """{(caller file, callee file): names}: a function defined (not static) in
    one .c file of directory and called by name in another, test_*.c left
    out.  Function pointers and callbacks are no edge: they are not called
    by the name of the function."""
    files = sorted(p for p in glob.glob(os.path.join(directory, "*.c"))
                   if not os.path.basename(p).startswith("test_"))
    code = {os.path.basename(p): code_of(p) for p in files}
    defs = {f: definitions(c) for f, c in code.items()}
    owner = {name: f for f, d in defs.items() for name, static in d.items() if not static}
    edges = {}
    for f, c in code.items():
        for name in set(CALL.findall(c)) - KEYWORDS:
            if name in defs[f] or owner.get(name, f) == f:
                continue
            edges.setdefault((f, owner[name]), set()).add(name)
    return edges


def shortest_cycle(start, succ):
    """The shortest loop from start back to it, as a list of files, or None."""
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for node in frontier:
            for s in sorted(succ.get(node, ())):
                if s == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return path[::-1] + [start]
                if s not in prev:
                    prev[s] = node
                    nxt.append(s)
        frontier = nxt
    return None


def call_cycles(directory):
    """The loops of the file-level call graph of directory's .c files, each
    a line 'a.c -> b.c (b_fn) -> a.c (a_fn)': every two files that call
    each other, then the shortest other loop through each file; [] when
    there is none."""
    edges = call_graph(directory)
    succ = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)
    loops = [[a, b, a] for a, b in sorted(edges) if a < b and (b, a) in edges]
    for start in sorted(succ):
        loop = shortest_cycle(start, succ)
        if loop is not None and len(loop) > 3:
            loops.append(loop)
    seen, out = set(), []
    for loop in loops:
        key = frozenset(zip(loop, loop[1:]))
        if key in seen:
            continue
        seen.add(key)
        out.append(loop[0] + "".join(f" -> {b} ({', '.join(sorted(edges[(a, b)]))})"
                                     for a, b in zip(loop, loop[1:])))
    return out


def test_ike_files_call_no_file_that_calls_them():
    """No file of ike/ calls a file that calls it: the file-level call graph
    of ike/*.c (test files left out) has no cycle; each one found is printed
    with the functions called on each step."""
    edges = call_graph(IKE)
    assert len({f for e in edges for f in e}) >= 15 and len(edges) >= 40   # the parser reads
    cycles = call_cycles(IKE)
    assert not cycles, "ike/ files that call each other:\n" + "\n".join(cycles)


def test_call_cycle_check_can_fail(tmp_path):
    """Two files calling each other are reported, round a longer loop too; a
    static function, a name in a comment or a string, a member call and a
    callback passed by name make no edge."""
    (tmp_path / "a.c").write_text(
        "int\nb_fn(int x);\n\nint\na_fn(int x)\n{\n\treturn b_fn(x);\n}\n")
    (tmp_path / "b.c").write_text(
        "static int\nhelper(int x)\n{\n\treturn x;\n}\n\n"
        "int b_fn(int x)\n{\n\treturn a_fn(helper(x));\n}\n")
    (tmp_path / "c.c").write_text(
        "/* a_fn() and b_fn() named in a comment */\n"
        "static int\nhelper(int x)\n{\n\treturn x;\n}\n\n"
        "void\nc_fn(struct ops *ops)\n{\n\tops->b_fn(1);\n\tops.a_fn(2);\n"
        "\tputs(\"b_fn(3)\");\n\tregister_cb(a_fn);\n\thelper(4);\n}\n")
    (tmp_path / "test_a.c").write_text("void\nt(void)\n{\n\tc_fn(0);\n}\n")
    assert call_graph(str(tmp_path)) == {("a.c", "b.c"): {"b_fn"}, ("b.c", "a.c"): {"a_fn"}}
    assert call_cycles(str(tmp_path)) == ["a.c -> b.c (b_fn) -> a.c (a_fn)"]
    (tmp_path / "b.c").write_text("int\nb_fn(int x)\n{\n\treturn c_fn(0), x;\n}\n")
    (tmp_path / "c.c").write_text("int\nc_fn(int x)\n{\n\treturn a_fn(x);\n}\n")
    assert call_cycles(str(tmp_path)) == [
        "a.c -> b.c (b_fn) -> c.c (c_fn) -> a.c (a_fn)"]
    (tmp_path / "c.c").write_text("int\nc_fn(int x)\n{\n\treturn x;\n}\n")
    assert call_cycles(str(tmp_path)) == []
