# SPDX-License-Identifier: BSD-3-Clause
"""The docs a newcomer reads hold together ([deploy] issue 17, requirement 5):
README.md stays short (10 KiB at most), every relative link in README.md and
doc/*.md leads to a file (and a #anchor to a heading of it), every drop
reason of DPVPN_DROP_REASONS is explained in doc/troubleshooting.md, and
every key the config parser takes (control/config*.c's key tables) is in
dpvpn.conf(5); and ([house] issue 29, requirement 5) every file and
function doc/architecture.md names exists, and its table of where each drop
reason is decided has every reason.  Text only: no lab, no root needed, well under a second.
Each checker is also run on a broken input (test_*_can_fail), so that none
of them passes whatever the docs say."""
import ast
import glob
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.deploy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README_MAX = 10240


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# ---- checkers: each returns what is wrong, [] when nothing is ----

def too_big(path, limit=README_MAX):
    n = os.path.getsize(path)
    return [f"{path}: {n} bytes, over {limit}"] if n > limit else []


def prose(text):
    """Markdown without fenced code blocks and `code spans` (no links there)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def slugs(text):
    """The anchors GitHub gives a file's headings: lower case, punctuation out,
    spaces to '-', a repeated one suffixed -1, -2, ..."""
    seen, out = {}, set()
    for h in re.findall(r"^#{1,6}\s+(.*?)\s*#*\s*$", prose_headings(text), re.M):
        s = re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def prose_headings(text):
    """Headings keep their code spans' text (GitHub keeps it in the anchor)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S).replace("`", "")


def bad_links(path):
    """Relative links of one Markdown file that lead nowhere."""
    text, here, bad = read(path), os.path.dirname(path), []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(text)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):      # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(here, file)) if file else path
        if not os.path.exists(dest):
            bad.append(f"{os.path.relpath(path, ROOT)}: ({target}): no {file}")
        elif anchor and dest.endswith(".md") and anchor not in slugs(read(dest)):
            bad.append(f"{os.path.relpath(path, ROOT)}: ({target}): no heading #{anchor} "
                       f"in {os.path.relpath(dest, ROOT)}")
    return bad


def drop_reasons(header_text):
    body = re.search(r"#define DPVPN_DROP_REASONS\(X\)(.*?)\n\n", header_text, re.S).group(1)
    return re.findall(r'X\(\w+,\s*"([a-z0-9-]+)"', body)


def undocumented_reasons(header_text, page_text):
    return [r for r in drop_reasons(header_text) if f"`{r}`" not in page_text]


def config_keys(src_text):
    keys = []
    for table in re.findall(r"static const struct key_def \w+\[\] = \{(.*?)\};", src_text, re.S):
        keys += re.findall(r'\{ "([a-z0-9-]+)",', table)
    return sorted(set(keys))


def undocumented_keys(src_text, page_text):
    return [k for k in config_keys(src_text)
            if not re.search(rf"(^|[\s,]){re.escape(k)}([\s,]|$)", page_text, re.M)]


def md_files():
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "doc", "*.md")))


def config_sources():
    return "".join(read(f) for f in sorted(glob.glob(os.path.join(ROOT, "control", "config*.c"))))


def pytest_command(script_text):
    """The options of the end-to-end pytest line in scripts/test (the one that
    runs `pytest tests`), as a list of words."""
    for line in script_text.splitlines():
        m = re.search(r"-m pytest (tests\b.*)", line)
        if m and not line.lstrip().startswith("#"):
            words = m.group(1).split()
            ends = [i for i, w in enumerate(words) if w in ("||", "&&", "|", ";")]
            return words[:ends[0]] if ends else words
    return None


NARROWING = ("-m", "-k", "--ignore", "--ignore-glob", "--deselect", "--lf", "--last-failed",
             "--sw", "--stepwise", "-x", "--exitfirst", "--maxfail")


def narrowing(words):
    """What in a pytest command line would leave tests out of a pass."""
    return [w for w in words if w.split("=")[0] in NARROWING or w.startswith("-p")]


def defined_tests(paths):
    """{file name: [test function names]} of test files (top level and Test* classes)."""
    out = {}
    for path in paths:
        tree = ast.parse(read(path))
        names = [n.name for n in tree.body
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name.startswith("test")]
        for c in tree.body:
            if isinstance(c, ast.ClassDef) and c.name.startswith("Test"):
                names += [f"{c.name}::{n.name}" for n in c.body
                          if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
        out[os.path.basename(path)] = names
    return out


def uncollected(defined, nodeids, listed):
    """Tests defined in a file that the collection does not hold and that
    ON_REQUEST (the `listed` function) does not name."""
    got = {n.split("[")[0] for n in nodeids}
    return [f"{f}::{t}" for f, tests in defined.items() for t in tests
            if f"{f}::{t}" not in got and not listed(f"{f}::{t}")]


def default_collection():
    """Node ids that scripts/test's own pytest line collects, no DPVPN_* set."""
    words = pytest_command(read(os.path.join(ROOT, "scripts", "test")))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DPVPN_")}
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                        "-p", "no:cacheprovider"] + [w for w in words if w != '"$@"'],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return [ln for ln in r.stdout.splitlines() if "::" in ln]


# ---- the repository's docs ----

def test_readme_short():
    assert not too_big(os.path.join(ROOT, "README.md"))


def test_links_resolve():
    files = md_files()
    assert len(files) > 8
    bad = [b for f in files for b in bad_links(f)]
    assert not bad, "\n".join(bad)


def test_every_drop_reason_in_troubleshooting():
    header = read(os.path.join(ROOT, "include", "dpvpn_proto.h"))
    assert len(drop_reasons(header)) > 40
    missing = undocumented_reasons(header, read(os.path.join(ROOT, "doc", "troubleshooting.md")))
    assert not missing, missing


def test_every_config_key_in_man_page():
    src = config_sources()
    assert len(config_keys(src)) > 60
    missing = undocumented_keys(src, read(os.path.join(ROOT, "doc", "dpvpn.conf.5")))
    assert not missing, missing


@pytest.mark.ci
def test_default_pass_collects_every_test():
    """[ci] issue 31: CI's default pass (scripts/test with no arguments) runs
    every test; what it may leave out is listed in conftest.ON_REQUEST with why
    (conftest fails the pass itself on an unlisted deselection or skip)."""
    import conftest
    words = pytest_command(read(os.path.join(ROOT, "scripts", "test")))
    assert words and words[0] == "tests", words
    assert not narrowing(words), f"scripts/test narrows its pytest line: {narrowing(words)}"
    files = sorted(glob.glob(os.path.join(ROOT, "tests", "test_*.py")))
    defined = defined_tests(files)
    assert sum(map(len, defined.values())) > 300
    nodeids = default_collection()
    missing = uncollected(defined, nodeids, conftest.listed)
    assert not missing, "out of the default pass without a line in ON_REQUEST:\n" + \
        "\n".join(missing)
    for key in conftest.ON_REQUEST:
        assert conftest.listed(key), key
        assert any(n == key or n.startswith(key) for n in nodeids), \
            f"ON_REQUEST names {key}, which is no test"


# ---- each checker finds what it is for ----

def test_checks_can_fail(tmp_path):
    big = tmp_path / "README.md"
    big.write_text("x" * (README_MAX + 1))
    assert too_big(str(big))
    big.write_text("x" * README_MAX)
    assert not too_big(str(big))

    (tmp_path / "there.md").write_text("# There\n\n## A `code` heading: yes\n\n## Twice\n\n## Twice\n")
    page = tmp_path / "page.md"
    ok = ("[a](there.md) [b](there.md#a-code-heading-yes) [c](there.md#twice-1) "
          "[d](#local) [e](https://example.org/x) `[f](nowhere.md)`\n\n# Local\n\n"
          "```\n[g](nowhere.md)\n```\n")
    page.write_text(ok)
    assert not bad_links(str(page))
    for broken in ("[x](missing.md)", "[x](there.md#nope)", "[x](#nope)", "[x](sub/there.md)"):
        page.write_text(ok + broken + "\n")
        assert len(bad_links(str(page))) == 1, broken

    header = read(os.path.join(ROOT, "include", "dpvpn_proto.h"))
    names = drop_reasons(header)
    page_text = " ".join(f"`{n}`" for n in names)
    assert not undocumented_reasons(header, page_text)
    assert undocumented_reasons(header, page_text.replace("`no-mbuf`", "no-mbuf")) == ["no-mbuf"]

    script = 'x\n/usr/bin/python3 -m pytest tests --durations=20 "$@" ||\n'
    assert pytest_command(script) == ["tests", "--durations=20", '"$@"']
    assert not narrowing(pytest_command(script))
    for narrow in ('-m "not frr"', "-k bgp", "--ignore=tests/test_bgp.py", "-p no:x"):
        words = pytest_command(script.replace("--durations", narrow + " --durations"))
        assert narrowing(words), narrow
    (tmp_path / "test_a.py").write_text("def test_x():\n    pass\n\n\n"
                                        "class TestC:\n    def test_y(self):\n        pass\n")
    defined = defined_tests([str(tmp_path / "test_a.py")])
    assert defined == {"test_a.py": ["test_x", "TestC::test_y"]}
    never = lambda n: None      # noqa: E731
    assert not uncollected(defined, ["test_a.py::test_x[1]", "test_a.py::TestC::test_y"], never)
    assert uncollected(defined, ["test_a.py::test_x"], never) == ["test_a.py::TestC::test_y"]
    assert not uncollected(defined, ["test_a.py::test_x"], lambda n: "why" if "TestC" in n else None)

    src = config_sources()
    man = "\n".join(f".B {k}" for k in config_keys(src))
    assert not undocumented_keys(src, man)
    assert undocumented_keys(src, man.replace(".B esn\n", ".B esn-x\n")) == ["esn"]


# ---- [ops] issue 27, requirement 7: no doc calls missing what the parser takes ----

# a sentence that says a feature is missing ("not yet valid" and the like,
# a state, not a claim, are not)
MISSING_CLAIM = re.compile(r"\bnot yet\b(?!\s+(?:valid|\w+ed)\b)|not in dpvpn|work in progress|"
                           r"\bpsk only\b|not supported|\bunsupported\b|not built|"
                           r"no support for|not implemented", re.I)
# features the parser takes under names other than their keys
FEATURE_WORDS = ("certificate", "pfs", "virtual ip", "vips", "road warrior", "road-warrior",
                 "remote access")


def claim_clause(lines, i, m):
    """The clause of lines[i] that holds the match m: a table row's cell, a
    sentence's part between '.' or ';' (the line and the next)."""
    line = lines[i]
    start, text = 0, line + " " + (lines[i + 1] if i + 1 < len(lines) else "")
    if line.lstrip().startswith("|"):
        start = line.rfind(" | ", 0, m.start()) + 1
        end = line.find(" | ", m.end())
        text = line[:end] if end >= 0 else line
    cuts = [x.end() for x in re.finditer(r"[.;]\s", text[start:m.start()])]
    start += cuts[-1] if cuts else 0
    end = re.search(r"[.;]\s|$", text[m.end():])
    return text[start:m.end() + end.start()]


def man_entry_key(lines, i):
    """In a man page, the key whose .TP entry line i is in (its first .B word)."""
    for j in range(i, 0, -1):
        if lines[j - 1].startswith(".TP") and lines[j].startswith((".B ", ".BR ", ".BI ")):
            return lines[j].split()[1].strip('"')
        if lines[j].startswith(".SH"):
            return None
    return None


def false_missing_claims(paths, keys):
    """file:line of each sentence that says a feature is missing ("not yet",
    "not in dpvpn", "work in progress", "PSK only", "not supported", ...)
    and names a key the config parser takes (`key`, \\fBkey, a hyphenated
    key as a word, a man page entry's key) or a feature word of FEATURE_WORDS.
    A clause that says the key is refused agrees with the parser."""
    out = []
    for path in paths:
        lines = read(path).splitlines()
        man = path.endswith((".5", ".8"))
        for i, line in enumerate(lines):
            for m in MISSING_CLAIM.finditer(line):
                clause = claim_clause(lines, i, m)
                if re.search(r"\brefuse[sd]?\b", clause):
                    continue
                low = clause.lower()
                hits = [w for w in FEATURE_WORDS if w in low]
                if m.group(0).lower() == "psk only":     # certificates missing
                    hits.append("auth")
                hits += [k for k in keys if re.search(
                    rf"`{re.escape(k)}`|\\fB{re.escape(k)}\b|^\.BR? {re.escape(k)}\b", clause, re.M)
                    or ("-" in k and re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", clause))]
                entry = man_entry_key(lines, i) if man else None
                if entry in keys:
                    hits.append(entry)
                if hits:
                    out.append(f"{os.path.relpath(path, ROOT)}:{i + 1}: {m.group(0)!r} about "
                               f"{', '.join(sorted(set(hits)))}: {clause.strip()[:120]}")
    return out


def doc_pages():
    return md_files() + sorted(glob.glob(os.path.join(ROOT, "doc", "*.[58]")))


def test_no_doc_calls_an_accepted_feature_missing():
    keys = config_keys(config_sources())
    pages = doc_pages()
    assert len(pages) > 15
    bad = false_missing_claims(pages, keys)
    assert not bad, "docs that call missing what the config parser takes:\n" + "\n".join(bad)


def test_missing_claim_check_can_fail(tmp_path):
    keys = config_keys(config_sources())
    assert {"auth", "virtual-ip", "esp-proposals", "cert"} <= set(keys)
    page = tmp_path / "page.md"
    ok = ("Certificates: `auth = pubkey`. A cert not yet valid is refused.\n"
          "| `compress` | not supported: the key is refused |\n"
          "| `trap` | initiate on traffic: not in dpvpn |\n")
    page.write_text(ok)
    assert not false_missing_claims([str(page)], keys)
    for claim in ("Not yet: certificates, PFS.", "dpvpnd has PSK only.",
                  "| `pools` | a pool; dpvpnd as a client (`vips = 0.0.0.0`): not in dpvpn |",
                  "`virtual-ip` is not supported.", "Road warriors: work in progress."):
        page.write_text(ok + claim + "\n")
        assert len(false_missing_claims([str(page)], keys)) == 1, claim
    man = tmp_path / "x.5"
    man.write_text(".SH KEYS\n.TP\n.B auth\nHow peers prove who they are.  Work in progress.\n")
    assert false_missing_claims([str(man)], keys) == [
        f"{os.path.relpath(str(man), ROOT)}:4: 'Work in progress' about auth: Work in progress"]


# ---- [house] issue 29, requirement 5: doc/architecture.md keeps its file and function names true ----

ARCHITECTURE = os.path.join(ROOT, "doc", "architecture.md")
SOURCE_DIRS = ("dataplane", "control", "ike", "include")
# a repository path: one or more directories, then a file with an extension
# or nothing (`dataplane/worker.c`, `ike/`); not `/run/...`, `a/b`, `0/0`
REPO_PATH = re.compile(r"(?:[\w.-]+/)+(?:[\w-][\w.-]*\.\w+)?")
SOURCE_NAME = re.compile(r"[\w-]+\.[ch]")         # a bare source file: `worker.c`
FUNCTION = re.compile(r"([A-Za-z_]\w*)\(\)")       # `esp_decap_burst()`
# where a definition may start: at a line's start, the name, or a return type
# on the same line and then the name ("static inline uint64_t mono_ms(void)")
DEF_HEAD = re.compile(r"^(?:[A-Za-z_][\w \t*]*?[ \t*])?([A-Za-z_]\w*)\(", re.M)
MACRO_HEAD = re.compile(r"^#[ \t]*define[ \t]+([A-Za-z_]\w*)\(", re.M)
END_OF_HEAD = re.compile(r"[;{]")


def code_spans(text):
    """The `code spans` of Markdown, fenced code blocks left out."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.findall(r"`([^`\n]+)`", text)


def source_files(root):
    return sorted(p for d in SOURCE_DIRS
                  for p in glob.glob(os.path.join(root, d, "**", "*.[ch]"), recursive=True))


def defined_functions(root):
    """Names of the functions defined in SOURCE_DIRS' .c and .h files (a name
    at a line's start, its parameters, then '{' before any ';': a prototype is
    no definition) and of their function-like macros."""
    names = set()
    for path in source_files(root):
        text = re.sub(r"/\*.*?\*/", " ", read(path), flags=re.S)
        names.update(MACRO_HEAD.findall(text))
        for m in DEF_HEAD.finditer(text):
            end = END_OF_HEAD.search(text, m.end())
            if end is not None and end.group() == "{":
                names.add(m.group(1))
    return names


def stale_names(page, root=ROOT):
    """What a page names that the repository at root does not hold: each
    backticked repository path (`dataplane/worker.c`, `ike/`) that does not
    exist, each bare source file name (`worker.c`) found in none of
    SOURCE_DIRS, each `name()` defined in none of them."""
    spans = code_spans(read(page))
    where = os.path.relpath(page, ROOT)
    bare = {os.path.basename(p) for p in source_files(root)}
    defined = defined_functions(root)
    bad = []
    for s in dict.fromkeys(spans):          # each once, in page order
        if REPO_PATH.fullmatch(s):
            path = os.path.join(root, s)
            if not (os.path.isdir(path) if s.endswith("/") else os.path.exists(path)):
                bad.append(f"{where}: `{s}`: no such path")
        elif SOURCE_NAME.fullmatch(s) and s not in bare:
            bad.append(f"{where}: `{s}`: in none of {', '.join(SOURCE_DIRS)}")
        elif FUNCTION.fullmatch(s) and FUNCTION.fullmatch(s).group(1) not in defined:
            bad.append(f"{where}: `{s}`: defined in none of {', '.join(SOURCE_DIRS)}")
    return bad


def test_architecture_names_exist():
    """Every file, directory and function doc/architecture.md names is there,
    and its table of where each drop reason is decided has every reason."""
    text = read(ARCHITECTURE)
    spans = code_spans(text)
    assert sum(bool(FUNCTION.fullmatch(s)) for s in spans) > 100
    assert sum(bool(REPO_PATH.fullmatch(s)) for s in spans) > 50
    bad = stale_names(ARCHITECTURE)
    assert not bad, "doc/architecture.md names what is not there:\n" + "\n".join(bad)
    header = read(os.path.join(ROOT, "include", "dpvpn_proto.h"))
    table = text[text.index("## Where each drop reason is decided"):]
    missing = undocumented_reasons(header, table)
    assert not missing, f"drop reasons without a row in doc/architecture.md: {missing}"


def test_architecture_check_can_fail(tmp_path):
    (tmp_path / "dataplane").mkdir()
    (tmp_path / "ike").mkdir()
    (tmp_path / "dataplane" / "a.c").write_text(
        "/* a.c - b() is only declared: static int b(int x) { */\n"
        "#include \"a.h\"\n\n"
        "static void\nfoo(int x,\n    int y)\n{\n}\n\n"
        "int bar(int x);\n\n"
        "static inline uint64_t baz(void) { return 0; }\n\n"
        "void __attribute__((format(printf, 1, 2)))\nqux(const char *f, ...)\n{\n}\n")
    (tmp_path / "dataplane" / "a.h").write_text(
        "#define STEP(x) do { } while (0)\nint b(int x);\nvoid\nc(int x);\n")
    assert {"foo", "baz", "qux", "STEP"} <= defined_functions(str(tmp_path))
    assert not {"b", "bar", "c"} & defined_functions(str(tmp_path))
    page = tmp_path / "page.md"
    ok = ("`dataplane/a.c`, `dataplane/`, `ike/`, `a.h`, `foo()`, `baz()`, `qux()`, `STEP()`,\n"
          "`/run/dpvpn/x.sock`, `0/0`, `IKE_RX/IKE_TX`, `time(NULL)`, `struct dp_out`\n\n"
          "```\nnothing() here: dataplane/gone.c\n```\n")
    page.write_text(ok)
    assert not stale_names(str(page), str(tmp_path))
    for broken in ("`dataplane/gone.c`", "`control/`", "`gone.c`", "`bar()`", "`gone()`"):
        page.write_text(ok + broken + "\n")
        assert len(stale_names(str(page), str(tmp_path))) == 1, broken


def test_feature_index_current():
    """doc/tests.md, the index of features to tests, is what
    tests/helpers/feature_index.py makes of the test files' docstrings now:
    a test file added, renamed or redescribed shows there (regenerate it with
    `/usr/bin/python3 tests/helpers/feature_index.py --write`)."""
    import feature_index
    now = feature_index.index(os.path.join(ROOT, "tests"))
    assert read(os.path.join(ROOT, "doc", "tests.md")) == now, \
        "doc/tests.md is stale: run tests/helpers/feature_index.py --write"


def test_feature_index_follows_the_files(tmp_path):
    """The index lists a feature file, its markers, its docstring's first
    sentence (without the issue it came with) and each test with its own."""
    import feature_index
    (tmp_path / "test_widget.py").write_text(
        '"""Issue 99, item 1: the widget turns.  More."""\nimport pytest\n\n'
        'pytestmark = [pytest.mark.ops, pytest.mark.nosan]\n\n\n'
        'def test_turns():\n    """It turns once. Then stops."""\n\n\n'
        'class TestBack:\n    def test_back(self):\n        pass\n')
    text = feature_index.index(str(tmp_path))
    assert "| [widget](#test_widget) | nosan, ops | the widget turns. | 2 |" in text
    assert "- `test_turns`: It turns once." in text and "- `test_back`\n" in text
