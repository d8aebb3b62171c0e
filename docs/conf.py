"""Sphinx configuration of the jupyter-px documentation (Sphinx, the PyData theme, MyST Markdown).

Build: `sphinx-build -W --keep-going -b html docs docs/_build/html` (what .ci/run runs). Every page
is a Markdown file in this folder; a new `docs/<topic>.md` joins the navigation through the glob at
the end of index.md's toctree (add its name above the glob to place it). Every code block in the
pages is checked by tests/test_docs.py (the convention is in development.md).
"""

from __future__ import annotations

project = "jupyter-px"
copyright = "the jupyter-px authors"
author = "the jupyter-px authors"

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# `[text](page.md#a-heading)` links resolve, and a link to a heading that is gone fails the build.
myst_heading_anchors = 3
myst_enable_extensions = ["deflist"]

# Warnings are errors (.ci/run), except one that says nothing wrong: a `%%px_topology` cell is YAML
# under a magic line, which Pygments' YAML lexer stops at before it highlights the cell in its
# relaxed mode. (The glob that ends index.md's toctree always matches a page, development.md at
# least, which it is left to: an empty glob is a warning Sphinx 9.0 gives no type to suppress.)
suppress_warnings = ["misc.highlighting_failure"]

html_theme = "pydata_sphinx_theme"
html_title = "jupyter-px"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    "secondary_sidebar_items": ["page-toc"],
}
# The pages are one flat level (the header lists them): no left sidebar of sub-pages to show.
html_sidebars = {"**": []}
