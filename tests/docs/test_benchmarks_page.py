"""docs/benchmarks.md stays a reference a reader can rerun.

Every command of a ```bash block names a script or command that exists here (a script of
asv_bench/, ``cartjit ...``, ``python -m MODULE``, ``asv ...`` from asv_bench/,
``Rscript FILE``, the dask extra's ``dask``) and passes only options that command
accepts: our scripts' options are read from their argparse definitions (the
``add_argument`` calls, parsed, not run), cartjit's command line parses the command
with its own parser. Every row of the table "Where each target stands" links to a
heading of the page, and every section with a figure names the CPU and the load it was
measured on. Each check is also run on small bad pages, which it must refuse.
"""
import ast
import contextlib
import importlib.util
import io
import re
import shlex
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "benchmarks.md"
TARGETS = "Where each target stands"

_spec = importlib.util.spec_from_file_location("_links", Path(__file__).with_name("test_links.py"))
_links = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_links)

ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")
CPU = re.compile(r"Intel\(R\) Xeon\(R\)|Intel Xeon|AMD EPYC")
LOAD = re.compile(r"\bload\b", re.IGNORECASE)
FIGURE = re.compile(r"\d(?:[\d.,]*\d)?\s?(?:s|ms|µs|GiB|MiB)\b")
HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
FENCE = re.compile(r"^\s*(```|~~~)\s*(\S*)")


# --- reading the page ------------------------------------------------------------------

def _sections(text):
    """(title, lines) of the page's top part and of each level-2 section (its level-3
    subsections included); headings inside code fences are not headings."""
    sections, title, lines, inside = [], "(top of the page)", [], False
    for line in text.splitlines():
        if FENCE.match(line):
            inside = not inside
        m = None if inside else HEADING.match(line)
        if m and len(m.group(1)) <= 2:
            sections.append((title, lines))
            title, lines = m.group(2).strip(), []
        else:
            lines.append(line)
    sections.append((title, lines))
    return sections


def _bash_commands(text):
    """(section title, command line) of every ```bash block, continuation lines joined."""
    found = []
    for title, lines in _sections(text):
        block = None
        for line in lines:
            m = FENCE.match(line)
            if m:
                if block is None:
                    block = [] if m.group(2) in ("bash", "sh", "shell", "console") else False
                else:
                    if block:
                        found.extend((title, cmd) for cmd in _join(block))
                    block = None
            elif block is not False and block is not None:
                block.append(line)
    return found


def _join(lines):
    out, pending = [], ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return [c for c in out if c.strip()]


# --- what our commands accept ------------------------------------------------------------

@lru_cache(maxsize=None)
def script_options(path):
    """The option strings a script's argparse accepts, from its ``add_argument`` calls
    (options hidden with ``help=argparse.SUPPRESS`` are internal and left out), each with
    its ``choices`` when the source spells them as a literal tuple or list (None
    otherwise); None when the script has no ``add_argument`` at all."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    options, parses = {"-h": None, "--help": None}, False
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        parses = True
        keywords = {k.arg: k.value for k in node.keywords}
        hidden = keywords.get("help")
        if isinstance(hidden, ast.Attribute) and hidden.attr == "SUPPRESS":
            continue
        try:
            choices = tuple(ast.literal_eval(keywords["choices"]))
        except (KeyError, ValueError):
            choices = None
        for arg in node.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) \
                    and arg.value.startswith("-"):
                options[arg.value] = choices
    return options if parses else None


def _cartjit_problem(argv):
    """None if ``cartjit ARGV`` parses with cartjit's own command-line parser."""
    from cartjit.__main__ import build_parser

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            args = build_parser().parse_args(argv)
    except SystemExit as exc:
        if exc.code in (0, None):
            return None
        return err.getvalue().strip().splitlines()[-1]
    if args.command is None:
        return "no command"
    return None


def _pyproject_extras():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    part = text.split("[project.optional-dependencies]", 1)[-1].split("\n[", 1)[0]
    return part


def _script_problem(script, rest, cwd):
    path = (cwd / script).resolve()
    if not path.is_file():
        return f"no script {script}"
    try:
        path.relative_to(ROOT)
    except ValueError:
        return f"{script} is not in the repository"
    options = script_options(str(path))
    for i, word in enumerate(rest):
        if not word.startswith("-") or word == "-":
            continue
        name, eq, value = word.partition("=")
        if options is None:
            return f"{script} takes no options, given {name}"
        if name not in options:
            return f"{script} does not accept {name}"
        value = value if eq else (rest[i + 1] if i + 1 < len(rest) else None)
        if options[name] is not None and value not in options[name]:
            return f"{script} {name} takes one of {options[name]}, given {value!r}"
    return None


def command_problem(command, cwd=None):
    """What is wrong with one shell command of the page (None if nothing); ``cwd`` is
    the directory a preceding ``cd`` of the same line moved to."""
    cwd = cwd or ROOT
    try:
        words = shlex.split(command, comments=True)
    except ValueError as exc:
        return f"cannot split: {exc}"
    while words and ENV.match(words[0]):
        words = words[1:]
    while words and words[0] in ("/usr/bin/time", "time"):
        words = words[1:]
    if not words:
        return None
    head, rest = words[0], words[1:]
    if head in ("python", "python3"):
        if rest[:1] == ["-m"] and len(rest) >= 2:
            module, args = rest[1], rest[2:]
            if module == "cartjit":
                return _cartjit_problem(args)
            if importlib.util.find_spec(module) is None:
                return f"no module {module}"
            return None
        if rest and rest[0].endswith(".py"):
            return _script_problem(rest[0], rest[1:], cwd)
        return f"python without a script or -m MODULE: {command}"
    if head == "cartjit":
        return _cartjit_problem(rest)
    if head == "asv":
        if not (cwd / "asv.conf.json").is_file():
            return "asv runs from asv_bench/ (cd asv_bench && asv ...)"
        if "--bench" in rest[:-1]:
            pattern = rest[rest.index("--bench") + 1]
            # asv matches the pattern against "module.Class.method": a module or a class
            names = []
            for path in (cwd / "benchmarks").glob("*.py"):
                names.append(path.stem)
                names += [f"{path.stem}.{node.name}" for node in
                          ast.parse(path.read_text(encoding="utf-8")).body
                          if isinstance(node, ast.ClassDef)]
            if not any(re.search(pattern, m) for m in names):
                return (f"asv --bench {pattern} matches no module or class of "
                        "asv_bench/benchmarks")
        return None
    if head == "Rscript":
        files = [w for w in rest if not w.startswith("-")]
        if "-e" in rest:
            return None
        if not files or not (cwd / files[0]).is_file():
            return f"no R script {files[:1]}"
        return None
    if head == "cd":
        if not rest or not (cwd / rest[0]).is_dir():
            return f"no directory {rest[:1]}"
        return None
    if head == "dask":
        if "dask" not in _pyproject_extras():
            return "dask is not an extra of pyproject.toml"
        return None
    return f"unknown command {head!r}"


def line_problems(line):
    """Problems of one line of a bash block, split at ``&&``, ``;`` and ``|``."""
    problems, cwd = [], ROOT
    for part in re.split(r"&&|;|\|", line):
        if not part.strip():
            continue
        problem = command_problem(part, cwd)
        if problem:
            problems.append(f"{part.strip()}: {problem}")
            continue
        words = shlex.split(part, comments=True)
        if words[:1] == ["cd"] and len(words) > 1:
            cwd = (cwd / words[1]).resolve()
    return problems


def command_problems(text):
    return [f"[{title}] {p}" for title, line in _bash_commands(text) for p in line_problems(line)]


# --- the targets table and the sections --------------------------------------------------

def _anchors_of(text):
    anchors, seen, inside = set(), {}, False
    for line in text.splitlines():
        if FENCE.match(line):
            inside = not inside
            continue
        m = None if inside else HEADING.match(line)
        if m:
            slug = _links._slug(m.group(2))
            n = seen.get(slug, 0)
            anchors.add(slug if n == 0 else f"{slug}-{n}")
            seen[slug] = n + 1
    return anchors


def table_problems(text):
    """Every row of the targets table links, in its last cell, to a heading of the page."""
    lines = dict(_sections(text)).get(TARGETS)
    if lines is None:
        return [f"no section {TARGETS!r}"]
    rows = [l for l in lines if l.startswith("|")]
    body = [r for r in rows[2:] if not re.match(r"^\|[\s|:-]+\|$", r)]
    if not body:
        return ["the targets table has no rows"]
    anchors, problems = _anchors_of(text), []
    for row in body:
        last = [c.strip() for c in row.strip().strip("|").split("|")][-1]
        links = re.findall(r"\[[^\]]+\]\(#([^)]+)\)", last)
        if not links:
            problems.append(f"row names no section: {row[:70]}")
        problems += [f"row links to #{a}, no such heading: {row[:70]}"
                     for a in links if a not in anchors]
    return problems


def section_problems(text):
    """Every section with a figure or a command, the targets table apart, names a CPU and
    the load."""
    problems = []
    for title, lines in _sections(text)[1:]:
        if title == TARGETS:
            continue
        body = "\n".join(lines)
        if not (FIGURE.search(body) or "```bash" in body):
            continue
        if not CPU.search(body):
            problems.append(f"section {title!r} has figures but names no CPU")
        if not LOAD.search(body):
            problems.append(f"section {title!r} has figures but says nothing of the load")
    return problems


# --- the tests -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def page():
    return PAGE.read_text(encoding="utf-8")


def test_every_command_names_something_that_exists_with_options_it_accepts(page):
    assert _bash_commands(page), "no ```bash block on the page"
    problems = command_problems(page)
    assert not problems, "\n".join(problems)


def test_every_target_row_names_a_section_of_the_page(page):
    problems = table_problems(page)
    assert not problems, "\n".join(problems)


def test_every_figure_section_names_its_cpu_and_load(page):
    problems = section_problems(page)
    assert not problems, "\n".join(problems)


def test_the_page_says_where_its_history_is(page):
    top = page.split("\n## ", 1)[0]
    assert re.search(r"git show [0-9a-f]{7,40}:docs/benchmarks\.md", top), \
        "the introduction must name the commit of the old log (git show COMMIT:docs/benchmarks.md)"


@pytest.mark.parametrize("script", ["peers.py", "ab.py"])
def test_options_read_from_the_source_are_those_of_help(script):
    """The ``add_argument`` reading agrees with what argparse itself lists in ``--help``."""
    out = subprocess.run([sys.executable, str(ROOT / "asv_bench" / script), "--help"],
                         capture_output=True, text=True, timeout=60, cwd=ROOT, check=True).stdout
    usage = out.split("\n\n", 1)[0]
    listed = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", usage.split(":", 1)[1]))
    listed = (listed - {script.removesuffix(".py")}) | {"--help"}
    assert listed == set(script_options(str(ROOT / "asv_bench" / script)))


# --- the checks refuse bad pages ---------------------------------------------------------------

GOOD = """# Benchmarks

`git show 0123abc:docs/benchmarks.md`

## Where each target stands

| work | cartjit | target | measured in |
|---|---:|---:|---|
| fit | 0.1 s | met | [Fits](#fits) |

## Fits

Intel Xeon (2 cores), git 0123abc, load average 1.0.

```bash
CARTJIT_SIMD=0 NUMBA_NUM_THREADS=2 python asv_bench/peers.py --n 100000 --threads 2 \\
    --criterion entropy
python -m cartjit run experiments/monograph.toml --out /tmp/x --quiet --backend serial
cd asv_bench && asv run --quick --bench runner --python=same
```

| fit | 0.127 s |
"""


def test_a_good_small_page_passes():
    assert command_problems(GOOD) == []
    assert table_problems(GOOD) == []
    assert section_problems(GOOD) == []


@pytest.mark.parametrize("bad, expected", [
    ("python asv_bench/peers.py --n 100000 --no-such-option", "does not accept --no-such-option"),
    ("python asv_bench/peers.py --child memory-cartjit", "does not accept --child"),
    ("python asv_bench/no_such_script.py --n 3", "no script"),
    ("python asv_bench/peers_cv.py --n 100000 --fold 10", "does not accept --fold"),
    ("python asv_bench/peers.py --criterion gain", "takes one of"),
    ("python asv_bench/peers.py --task=ranking", "takes one of"),
    ("python asv_bench/mixed_data.py --size 10", "takes no options"),
    ("[CARTJIT_SIMD=0] python asv_bench/peers.py --n 100000", "unknown command"),
    ("cartjit rnu experiments/monograph.toml", "invalid choice"),
    ("cartjit run experiments/monograph.toml --backend gpu", "invalid choice"),
    ("python -m cartjit run experiments/monograph.toml --bogus", "unrecognized arguments"),
    ("python -m no_such_module_of_ours", "no module"),
    ("asv run --quick --bench runner", "asv runs from asv_bench"),
    ("cd asv_bench && asv run --bench no_such_bench", "matches no module"),
    ("cd asv_bench && asv run --bench runner.NoSuchClass", "matches no module"),
    ("Rscript no_such_script.R", "no R script"),
    ("make bench", "unknown command"),
])
def test_a_bad_command_is_refused(bad, expected):
    page = GOOD.replace("python -m cartjit run experiments/monograph.toml --out /tmp/x "
                        "--quiet --backend serial", bad)
    problems = command_problems(page)
    assert problems and expected in problems[0], problems


def test_a_target_row_without_a_section_is_refused():
    assert table_problems(GOOD.replace("[Fits](#fits)", "[Fits](#no-such-section)"))
    assert table_problems(GOOD.replace("[Fits](#fits)", "the section above"))
    assert table_problems(GOOD.replace("## Where each target stands", "## Targets"))


def test_a_figure_section_without_cpu_or_load_is_refused():
    no_cpu = GOOD.replace("Intel Xeon (2 cores)", "A host (2 cores)")
    assert any("names no CPU" in p for p in section_problems(no_cpu))
    no_load = GOOD.replace(", load average 1.0", "")
    assert any("load" in p for p in section_problems(no_load))
