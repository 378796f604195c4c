"""Sphinx configuration of relucore's documentation site.

Build (from the repository root, with ``pip install ".[docs]"`` done):

    sphinx-build -W --keep-going -b html docs docs/_build/html

The build is offline: no intersphinx, MathJax served from the site's own ``_static``
(the ``sphinx-mathjax-offline`` package), no web fonts. It documents the installed
``relucore`` (it never compiles the C++ extension). ``-W`` turns every warning, a broken
cross-reference included (``nitpicky``), into an error. The build also checks the API
reference (``docs/_ext/apicheck.py``): every public name has its numpydoc sections and is in
the table of docs/theory.md, and every docstring example runs (none may be skipped).
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

import relucore  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "_ext"))

import apicheck  # noqa: E402  (docs/_ext: the API reference's checks, shared with tests/docs)
from apicheck import API_PAGES  # noqa: E402

project = "relucore"
author = "the relucore developers"
copyright = "the relucore developers"
version = release = relucore.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "sphinxarg.ext",
]

# The C++ reference: Doxygen XML read by Breathe, when doxygen is installed (.ci/docs.sh
# installs it). Without doxygen the page says how to get it and the build still passes.
DOXYGEN = shutil.which("doxygen")
if DOXYGEN:
    extensions.append("breathe")
    breathe_projects = {"relucore": str(HERE / "_build" / "doxygen" / "xml")}
    breathe_default_project = "relucore"
    breathe_domain_by_extension = {"hpp": "cpp"}
    breathe_show_include = True
    breathe_show_define_initializer = False

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_templates", "screenshots", "sg_execution_times.rst", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]
nitpicky = True
# Type words in the docstrings and signatures that name no documented object.
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(numpy|np|pd|pandas|matplotlib|scipy|dask|distributed|argparse|pathlib|os|typing|inspect|concurrent)\..*",
    ),
    (r"py:.*", r"(Optional|Union|Sequence|Mapping|Callable|Iterable|Iterator|Any|Dict|List|Tuple|Set)"),
    (r"cpp:.*", r"(Eigen|std|omp)(::.*|<.*|)"),
    # compile-time checks of the engines' constructors (relucore/core/types.hpp), not API
    (r"cpp:.*", r"(dies_with_call|binds_as_view)<.*"),
    # relucore::simd (simd.hpp: levels, CPU checks, ThreadCap) is described in docs/cpp_reference.md
    (r"cpp:.*", r"simd(::.*)?"),
    # relucore::scaling (gd/scaling.hpp: the exact rescaling's rule and types) likewise
    (r"cpp:.*", r"scaling(::.*)?"),
    # the build-configuration namespace (core/abi.hpp), the borrow tag and relucore::defaults, which
    # Doxygen's unexpanded macros leave unresolved; described in docs/cpp_reference.md
    (r"cpp:.*", r"(relucore::)?RELUCORE_ABI_NAMESPACE(::.*)?"),
    (r"cpp:.*", r"(borrow_t|PrepareRequest|StartOptions|defaults(::.*)?)"),
    (r"py:.*", r"(int|float|str|bool|bytes|dict|list|tuple|object|None|callable|array_like|ndarray)"),
]

# -- autodoc / autosummary / numpydoc ---------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_show_inherited_class_members = False
numpydoc_xref_param_type = False

numpydoc_validation_checks = {"SS01"}  # every documented object has a summary line

# -- MyST: the existing Markdown pages (math.md's $...$ and $$...$$) render as they are --
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
# Links between the Markdown pages and to files of the repository (README -> docs/x.md,
# a page -> ../python/...): a link to a source file is not a page of the site.
suppress_warnings = ["myst.xref_missing"]

# -- sphinx-gallery: examples/*.py, run at build time ------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "min_reported_time": 1,
    # the execution-time pages load their table scripts from CDNs: not on an offline site
    "write_computation_times": False,
}

# -- HTML --------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"relucore {release}"
html_static_path = ["_static"]
html_css_files = ["relucore.css"]
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "header_links_before_dropdown": 7,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False
html_last_updated_fmt = None


def _run_doxygen(app):
    """Doxygen XML of relucore's headers (never Eigen), for Breathe."""
    if not DOXYGEN:
        return
    out = HERE / "_build" / "doxygen"
    out.mkdir(parents=True, exist_ok=True)
    conf = (HERE / "Doxyfile").read_text().replace("@ROOT@", str(ROOT)).replace("@OUT@", str(out))
    # Doxygen's own remarks (undocumented parameters) are not the site's warnings; a failure is.
    done = subprocess.run([DOXYGEN, "-"], input=conf.encode(), cwd=ROOT, capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"doxygen failed:\n{done.stderr.decode(errors='replace')}")


def _check_public_names(app):
    """A public name missing from its API page is a warning, so an error under -W."""
    import importlib

    from sphinx.util import logging

    log = logging.getLogger("relucore.docs")
    for module, page in API_PAGES.items():
        text = (HERE / page).read_text()
        listed = set(re.findall(r"^   (\w+)$", text, flags=re.M)) | set(
            re.findall(r"^\.\. data:: (\w+)$", text, flags=re.M)
        )
        for name in importlib.import_module(module).__all__:
            if name not in listed:
                log.warning(f"{module}.{name} is public (in __all__) but not listed on docs/{page}")


def _check_docstrings(app):
    """Every public name's numpydoc sections and paper reference (docs/_ext/apicheck.py); each gap is a warning."""
    from sphinx.util import logging

    log = logging.getLogger("relucore.docs")
    for problem in apicheck.docstring_problems():
        log.warning(f"API docstring: {problem}")
    for problem in apicheck.reference_problems(HERE):
        log.warning(f"API paper reference: {problem}")


def _run_docstring_examples(app):
    """Runs every ``>>>`` example of the package's docstrings; a failure or a +SKIP is a warning."""
    from sphinx.util import logging

    log = logging.getLogger("relucore.docs")
    tests = apicheck.docstring_tests()
    for skipped in apicheck.skipped_examples(tests):
        log.warning(f"docstring example marked +SKIP (every example must run): {skipped}")
    for test in tests:
        report = apicheck.run_docstring_test(test)
        if report:
            log.warning(f"docstring example of {test.name} failed:\n{report}")
    log.info(f"relucore.docs: ran the docstring examples of {len(tests)} docstrings")


#: Pages of docs/ that are not user-guide pages.
NOT_GUIDE = {"index", "cite", "changelog"}


def _edit_sources(app, docname, source):
    """Fill in what the sources leave to the build.

    - Without doxygen the C++ reference page keeps only its note.
    - A Markdown page of docs/ that the user guide's toctree does not list yet (a new page)
      is appended to it, so that a new page is on the site and the strict build, which
      refuses a page in no toctree, still passes (CI builds afresh; an incremental build
      needs ``-E`` once after a page is added); listing it in docs/guide/index.md puts it
      in its place.
    """
    if docname == "api/cpp" and not DOXYGEN:
        source[0] = re.sub(r"\.\. BEGIN-BREATHE.*?\.\. END-BREATHE", "", source[0], flags=re.S)
    if docname == "guide/index":
        listed = set(re.findall(r"^/(\w+)$", source[0], flags=re.M))
        extra = [p.stem for p in sorted(HERE.glob("*.md")) if p.stem not in listed | NOT_GUIDE]
        if extra:
            toc = re.search(r"```\{toctree\}.*?\n```", source[0], flags=re.S)
            end = toc.end() - 3
            source[0] = source[0][:end] + "".join(f"/{stem}\n" for stem in extra) + source[0][end:]


def setup(app):
    app.connect("builder-inited", _run_doxygen)
    app.connect("builder-inited", _check_public_names)
    app.connect("builder-inited", _check_docstrings)
    app.connect("builder-inited", _run_docstring_examples)
    app.connect("source-read", _edit_sources)
