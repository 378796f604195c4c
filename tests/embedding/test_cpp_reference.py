"""docs/cpp_reference.md names every public C++ name the headers declare.

The headers are scanned by tests/embedding/_cpp_names.py: every free name (class,
struct, enum, alias, function, constant) must appear in backticks somewhere in the
reference; every public member of a class or struct, and every value of an enum, must
appear in backticks inside the section whose heading names that type (a nested type's
members in the section of the type that encloses it); the version macros must appear
too. A name added to a header without a word in the reference fails here.
"""

import re
from pathlib import Path

import pytest
from _cpp_names import public_names, version_macros

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "cpp_reference.md"
INCLUDE = ROOT / "cpp" / "include" / "relucore"

pytestmark = pytest.mark.skipif(not INCLUDE.exists(), reason="not running from a source checkout")


def _in_backticks(name: str, text: str) -> bool:
    """Whether a code span of text (paired backticks, as Markdown reads them) contains name as a word."""
    word = re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)")
    return any(word.search(span) for span in re.findall(r"`([^`]*)`", text))


def _section(name: str, text: str) -> str:
    """The text under the heading that names `name`, up to the next heading of its level or above."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(#+)\s", line)
        if m and f"`{name}`" in line:
            level = len(m.group(1))
            end = next(
                (j for j in range(i + 1, len(lines)) if re.match(rf"^#{{1,{level}}}\s", lines[j])),
                len(lines),
            )
            return "\n".join(lines[i:end])
    return ""


def test_scanner_finds_the_known_names():
    types, free = public_names(INCLUDE)
    assert {"DualGD", "DenseGD", "WeightGD", "Status", "minnorm_single_gram", "gram_statistics"} <= free
    assert {"Start", "PositiveStart", "positive_start", "gram"} <= types["DualGD"].members
    assert {"outer", "alpha", "beta"} == types["DualGD::Start"].members
    assert {
        "status",
        "nit",
        "loss",
        "grad_norm",
        "pattern_stable_step",
        "n_records",
        "n_unfit",
        "unresolved_bound",
    } == types["RunSummary"].members
    assert "converged" in types["Status"].members and "evaluate_relu_square" not in types["DualGD"].members
    assert "mulhilo64" not in free  # detail:: is internal


def test_every_free_name_is_in_the_reference():
    text = REFERENCE.read_text()
    _, free = public_names(INCLUDE)
    missing = sorted(n for n in free if not _in_backticks(n, text))
    assert not missing, f"docs/cpp_reference.md does not mention: {missing}"


def test_every_member_and_enum_value_is_in_its_section():
    text = REFERENCE.read_text()
    types, _ = public_names(INCLUDE)
    missing = []
    for qualified, scope in sorted(types.items()):
        outer = qualified.split("::")[0]
        section = _section(outer, text)
        if not section:
            missing.append(f"{qualified} (no heading)")
            continue
        missing += [f"{qualified}::{m}" for m in sorted(scope.members) if not _in_backticks(m, section)]
    assert not missing, f"docs/cpp_reference.md lacks, in the type's section: {missing}"


def test_version_macros_are_in_the_reference():
    text = REFERENCE.read_text()
    macros = version_macros(ROOT / "cpp" / "cmake" / "version.hpp.in")
    assert len(macros) >= 4
    assert all(_in_backticks(m, text) for m in macros)


def test_embedding_links_the_reference():
    assert "cpp_reference.md" in (ROOT / "docs" / "embedding.md").read_text()


def _public_headers() -> list[str]:
    """Every header under cpp/include/relucore, relative to relucore/."""
    return [p.relative_to(INCLUDE).as_posix() for p in sorted(INCLUDE.rglob("*.hpp"))]


def _umbrella_row(name: str, text: str) -> str:
    row = next((ln for ln in text.splitlines() if ln.startswith(f"| `relucore/{name}`")), "")
    assert row, f"no row for relucore/{name} in the umbrella table"
    return row


def test_every_header_is_listed():
    text = REFERENCE.read_text()
    headers = _public_headers()
    assert {"gd/dual_gd.hpp", "gd/certify.hpp", "core/abi.hpp", "core/checks.hpp"} <= set(headers)
    missing = [h for h in headers if h not in text]
    assert not missing, f"docs/cpp_reference.md does not list the headers {missing}"


def test_umbrella_contents_are_stated():
    text = REFERENCE.read_text()
    for umbrella in ("relucore.hpp", "analysis.hpp"):
        includes = re.findall(r'^#include "relucore/([\w/]+\.hpp)"', (INCLUDE / umbrella).read_text(), re.M)
        assert includes
        row = _umbrella_row(umbrella, text)
        missing = [h for h in includes if f"`{h}`" not in row and h != "relucore.hpp" and h != "version.hpp"]
        assert not missing, f"the row of {umbrella} does not list {missing}"
    # The headers in neither umbrella are said to be so.
    neither = next(ln for ln in text.splitlines() if ln.startswith("| neither |"))
    for h in ("gd/certify.hpp", "gd/flow.hpp", "gd/flow_follow.hpp", "gd/linear_phase.hpp"):
        assert f"`{h}`" in neither


def test_every_namespace_is_listed():
    text = REFERENCE.read_text()
    names = set()
    for p in INCLUDE.rglob("*.hpp"):
        names |= set(re.findall(r"^\s*namespace\s+(\w+)\s*\{", p.read_text(), re.M))
    assert {"blas", "lapack", "dual_kernels", "flow", "simd", "defaults", "detail"} <= names
    table = text[text.index("## Namespaces") : text.index("Conventions that hold throughout")]
    missing = sorted(n for n in names - {"relucore"} if not re.search(rf"`relucore::(\w+::)?{n}`", table))
    assert not missing, f"the namespace table lacks {missing}"


def test_conventions_state_exceptions_and_threads():
    text = REFERENCE.read_text()
    for phrase in ("std::invalid_argument", "std::logic_error", "moved from", "two threads", "EIGEN_DONT_PARALLELIZE"):
        assert phrase in text
