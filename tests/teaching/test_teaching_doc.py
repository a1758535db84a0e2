"""docs/teaching.md runs: its ``>>>`` examples are executed and their printed tables
compared with the page (whitespace-insensitive), so the page cannot drift from the
functions."""
from __future__ import annotations

import doctest
from pathlib import Path

import cartjit

PAGE = Path(__file__).resolve().parents[2] / "docs" / "teaching.md"


def test_the_examples_of_docs_teaching_md():
    # a fence ends an example's expected output, as a blank line does
    text = "\n".join("" if line.startswith("```") else line
                     for line in PAGE.read_text(encoding="utf-8").splitlines())
    globs = {name: getattr(cartjit, name) for name in cartjit.__all__}
    test = doctest.DocTestParser().get_doctest(text, globs, "teaching.md", str(PAGE), 0)
    assert len(test.examples) >= 10
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} example(s) of docs/teaching.md differ"
