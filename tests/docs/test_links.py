"""Every relative link of the README and of docs/*.md points at a file that exists, and
every ``#anchor`` at a heading of its target (GitHub's rule for heading anchors), so
that the links resolve on GitHub and in the documentation site alike."""
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def _text_outside_code(path, inline=False):
    """The lines outside code fences; without inline code spans unless ``inline``."""
    lines, inside = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line.strip()):
            inside = not inside
            continue
        if not inside:
            lines.append(line if inline else re.sub(r"`[^`]*`", "", line))
    return lines


def _slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    kept = [ch for ch in text
            if ch in " -_" or unicodedata.category(ch)[0] in "LN"]
    return "".join(kept).replace(" ", "-")


def _anchors(path):
    seen, anchors = {}, set()
    for line in _text_outside_code(path, inline=True):
        m = re.match(r"^(#{1,6})\s+(.*)$", line)
        if m:
            slug = _slug(m.group(2))
            n = seen.get(slug, 0)
            anchors.add(slug if n == 0 else f"{slug}-{n}")
            seen[slug] = n + 1
    return anchors


def _links(path):
    for line in _text_outside_code(path):
        for m in LINK.finditer(line):
            yield m.group(1) or m.group(2)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page):
    broken = []
    for target in _links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        file_part, _, anchor = target.partition("#")
        if page.name == "index.md" and file_part.startswith("auto_examples/"):
            continue  # the gallery's pages, generated when the site is built
        dest = page if not file_part else (page.parent / file_part).resolve()
        if not dest.exists():
            broken.append(f"{target}: no file {dest}")
            continue
        if page.parent == DOCS and DOCS not in dest.parents and dest != DOCS:
            # the site is built from docs/ alone: Sphinx cannot resolve such a link
            broken.append(f"{target}: outside docs/ (name the file as code text instead)")
            continue
        if anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading with anchor #{anchor} in {dest.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_slug_follows_githubs_rule():
    assert _slug("Running on an existing Dask cluster") == "running-on-an-existing-dask-cluster"
    assert _slug("`[cv]`") == "cv"
    assert _slug("Cells, seeds and determinism") == "cells-seeds-and-determinism"
    assert _slug("§6 Worked examples") == "6-worked-examples"
