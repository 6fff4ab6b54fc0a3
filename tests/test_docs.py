# SPDX-License-Identifier: BSD-3-Clause
"""The docs a newcomer reads hold together ([deploy] issue 17, requirement 5):
README.md stays short (10 KiB at most), every relative link in README.md and
doc/*.md leads to a file (and a #anchor to a heading of it), every drop
reason of DPVPN_DROP_REASONS is explained in doc/troubleshooting.md, and
every key the config parser takes (control/config*.c's key tables) is in
dpvpn.conf(5).  Text only: no lab, no root needed, well under a second.
Each checker is also run on a broken input (test_*_can_fail), so that none
of them passes whatever the docs say."""
import glob
import os
import re

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

    src = config_sources()
    man = "\n".join(f".B {k}" for k in config_keys(src))
    assert not undocumented_keys(src, man)
    assert undocumented_keys(src, man.replace(".B esn\n", ".B esn-x\n")) == ["esn"]
