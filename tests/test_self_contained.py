"""The repository stands on its own: no file points at notes a user does not have.

Every tracked text file is read; references to the team's private notes, to issue
numbers of a tracker users cannot see, and phrases that only make sense to whoever
wrote them on a given day ("this machine", "both cores", ...) fail the test. The
mathematics is cited as a section of docs/maths.md or of the book instead.
"""
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Spelled in pieces so that this file does not match itself. The names of the notes are
# matched in capitals only ("spec" and "style" are ordinary words in code).
_NAMES = [
    r"\bSP" r"EC\b",                  # the team's maths notes
    r"\bST" r"YLE\b",                 # the team's code notes
]
_PHRASES = [
    r"\.\./sh" r"ared",
    r"\biss" r"ue\s*#?\d+",           # "issue 9", "issue #9"
    r"\bthis ro" r"und\b",
    r"\bthe cou" r"rse's",
    r"\bthis mach" r"ine\b",
    r"\bboth co" r"res\b",
]
_NAMES_RE = re.compile("|".join(_NAMES))
_PHRASES_RE = re.compile("|".join(f"(?:{p})" for p in _PHRASES), re.IGNORECASE)


class PATTERN:
    """Either kind of reference."""

    @staticmethod
    def search(text):
        return _NAMES_RE.search(text) or _PHRASES_RE.search(text)
BINARY = {".png", ".parquet", ".npz", ".pkl", ".jpg", ".gz", ".zip"}


def _tracked_files():
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", "__pycache__", ".asv", "results"}
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                 if p.is_file() and not skip.intersection(p.relative_to(ROOT).parts)]
    return [ROOT / n for n in names if Path(n).suffix.lower() not in BINARY]


def test_pattern_catches_each_phrase():
    samples = ["see SP" "EC §4", "ST" "YLE habit 3", "../sh" "ared/x.md", "iss" "ue 12",
               "Iss" "ue #3", "in this ro" "und", "the cou" "rse's tables",
               "on this mach" "ine", "run on both co" "res"]
    for text in samples:
        assert PATTERN.search(text), text
    for text in ["specification", "lifestyle", "shared memory", "tissue 4",
                 "the course of the fit", "a machine with 2 cores", "for spec in specs",
                 "scikit-learn style estimators"]:
        assert not PATTERN.search(text), text


def test_no_tracked_file_points_outside_the_repository():
    found = []
    files = _tracked_files()
    assert len(files) > 20  # the walk really saw the repository
    for path in files:
        if not path.is_file() or path == Path(__file__).resolve():  # names the phrases
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            if PATTERN.search(line):
                found.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()[:100]}")
    assert not found, "lines that point outside the repository:\n" + "\n".join(found)
