"""Sphinx configuration of cartjit's documentation site.

Build it from the repository's root with the ``docs`` extra installed::

    python -m pip install -e ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

``-W`` turns every warning into an error: a broken link, a docstring numpydoc cannot
parse, or a gallery example that fails (every example runs and asserts its numbers on
every build).
"""

import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import cartjit  # noqa: E402

project = "cartjit"
author = "the cartjit developers"
copyright = "the cartjit developers, BSD-3-Clause"
release = cartjit.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "sphinxcontrib.mermaid",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "gallery/README.md", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip", "**.md5",
                    "images/make_plot_images.py"]

# Markdown pages (the user guide is written in MyST Markdown, GitHub-compatible).
myst_enable_extensions = ["dollarmath", "deflist"]
myst_heading_anchors = 4
# ```mermaid fences (docs/design.md) are drawn as diagrams, as GitHub draws them.
myst_fence_as_directive = ["mermaid"]

# API reference: numpydoc docstrings, one page per public object.
autosummary_generate = True
# scikit-learn's metadata-routing setters (set_fit_request, ...) are its own API.
autodoc_default_options = {
    "members": True,
    "inherited-members": False,
    "exclude-members": "set_fit_request, set_predict_request, set_score_request, "
                       "set_predict_proba_request, set_transform_request",
}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

# The gallery: every example runs on every build and asserts its numbers.
sphinx_gallery_conf = {
    "examples_dirs": "gallery",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "plot_gallery": "True",
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "reference_url": {},
    "within_subsection_order": "FileNameSortKey",
}

html_theme = "pydata_sphinx_theme"
html_title = f"cartjit {release}"
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "navbar_align": "left",
}
html_static_path = []
