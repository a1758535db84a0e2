"""``--cost FILE.csv``: the cost matrix read from a CSV file (one row per line, no
header) is the matrix given inline; a bad file is one error naming ``--cost`` and it."""
from __future__ import annotations

import numpy as np
import pytest

from cartjit import CARTClassifier
from cartjit.__main__ import _fit_from_args, build_parser, main
from cartjit.datasets import load_dataset
from cartjit.export import export_text

COST = [[0, 1, 1], [5, 0, 1], [1, 8, 0]]


def fitted(*argv):
    args = build_parser().parse_args(list(argv))
    out = _fit_from_args(args, args.command)
    assert not isinstance(out, int), out
    return out[0]


def test_cost_file_is_the_inline_matrix(tmp_path, monkeypatch):
    (tmp_path / "costs.csv").write_text("0,1,1\n5, 0, 1\n\n1,8,0\n")
    monkeypatch.chdir(tmp_path)
    from_file = fitted("show", "iris", "--cost", "costs.csv", "--max-depth", "3")
    inline = fitted("show", "iris", "--cost", "0,1,1;5,0,1;1,8,0", "--max-depth", "3")
    assert np.array_equal(from_file.get_params()["cost"], np.asarray(COST, dtype=float))
    ds = load_dataset("iris")
    ref = CARTClassifier(cost=np.asarray(COST, dtype=float), max_depth=3).fit(
        ds.frame[list(ds.features)], ds.frame[ds.target])
    assert export_text(from_file) == export_text(inline) == export_text(ref)
    # a path without the .csv ending is read as a file too
    (tmp_path / "costs").write_text("0,1,1\n5,0,1\n1,8,0\n")
    assert export_text(fitted("show", "iris", "--cost", str(tmp_path / "costs"),
                              "--max-depth", "3")) == export_text(ref)


@pytest.mark.parametrize("content, expected", [
    ("0,1\n1,0,3\n", "cartjit show: error: --cost: the cost matrix of 'c.csv' must be "
                     "square, one row per line, but it has 2 rows of 2/3 entries"),
    ("0,x\n1,0\n", "cartjit show: error: --cost: 'c.csv', line 1: must hold numbers "
                   "separated by ',': 'x' is not a number"),
    ("\n\n", "cartjit show: error: --cost: the cost matrix file 'c.csv' is empty"),
    (None, "cartjit show: error: --cost: cannot read the cost matrix file 'c.csv': No "
           "such file or directory"),
    ("0,1\n1,0\n", "cartjit show: error: --cost: cost must have shape (3, 3)"),
])
def test_bad_cost_file_is_one_error_naming_the_option_and_file(tmp_path, monkeypatch,
                                                                capsys, content, expected):
    monkeypatch.chdir(tmp_path)
    if content is not None:
        (tmp_path / "c.csv").write_text(content)
    assert main(["show", "iris", "--cost", "c.csv"]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if ": error: " in line]
    assert len(lines) == 1 and lines[0].startswith(expected), err
    assert "Traceback" not in err
