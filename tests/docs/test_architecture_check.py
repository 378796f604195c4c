"""The layout rules of docs/architecture.md hold, and .ci/check_architecture.py can see a violation of each.

CI runs the checker (.ci/lint.sh); these tests run it on the tree and feed each of its
detectors a small violation, so a checker that stopped finding anything would fail here.
"""

import ast
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location("check_architecture", ROOT / ".ci" / "check_architecture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tree_follows_the_rules(check, capsys):
    assert check.main() == 0, capsys.readouterr().out


# Written in pieces: the checker reads this file too, and whole they would be violations.
@pytest.mark.parametrize(
    "line",
    [
        "see SP" + "EC §4 for the rule",
        "as DES" + "IGN.md says",
        "fixed in iss" + "ue 16",
        "Iss" + "ue #12: the step size",
        "the sweep columns (iss" + "ue 7)",
    ],
)
def test_outside_documents_and_issue_numbers_are_found(check, line):
    assert check.FORBIDDEN.search(line)


@pytest.mark.parametrize("line", ["docs/math.md §5", "Lai et al. (2026), Theorem 3", "spec = GramSampleSpec()"])
def test_citations_of_the_papers_and_math_md_pass(check, line):
    assert not check.FORBIDDEN.search(line)


def test_a_long_cpp_function_is_found(check):
    body = "\n".join(f"    x += {i};" for i in range(101))
    text = f"inline int f(int x) {{\n{body}\n    return x;\n}}\n"
    assert len(check.long_cpp_functions(text, "a.hpp")) == 1
    short = "inline int f(int x) {\n" + "\n".join(f"    x += {i};" for i in range(99)) + "\n}\n"
    assert check.long_cpp_functions(short, "a.hpp") == []


def test_an_import_cycle_is_found(check):
    assert check.cycles({"relucore.a": {"relucore.b"}, "relucore.b": {"relucore.a"}})
    assert not check.cycles({"relucore.a": {"relucore.b"}, "relucore.b": set()})


def test_a_long_python_function_is_found(check):
    def tree(n):
        body = "\n".join(f"    x += {i}" for i in range(n))
        return ast.parse(f'def f(x):\n    """Doc."""\n{body}\n    return x\n')

    # def + docstring + n + return: n + 2 lines that count
    assert check.long_python_functions(tree(98), "a.py") == []
    assert len(check.long_python_functions(tree(99), "a.py")) == 1


def test_a_long_positional_call_into_the_extension_is_found(check):
    tree = ast.parse("_core.qp_box(H, c, lower, upper, z, r, state)\n_core.gram_batch(X, K, n_threads=1)\n")
    assert check.positional_binding_calls(tree, "a.py") == [
        "a.py:1: _core.qp_box takes 7 positional arguments (limit 3; pass the rest by keyword)"
    ]
    keywords = ast.parse("_core.qp_box(H, c, lower, upper=upper, z=z, r=r, state=state)\n")
    assert check.positional_binding_calls(keywords, "a.py") == []


def test_an_upward_import_is_found(check):
    tree = ast.parse("from relucore.gd.train import train\n\ndef f():\n    from relucore.cli import main\n")
    assert check.upward_imports(tree, "relucore.experiments.x", "x.py") == [
        "x.py:4: relucore.experiments.x (layer 4) imports relucore.cli (layer 5)"
    ]
    assert check.upward_imports(tree, "relucore.cli.x", "x.py") == []


def test_layers_order_the_packages(check):
    assert check.layer_of("relucore._core") < check.layer_of("relucore.gd.train")
    assert check.layer_of("relucore.gd") < check.layer_of("relucore.theory.limits")
    assert check.layer_of("relucore.sweeps.api") < check.layer_of("relucore.experiments._base")
    assert check.layer_of("relucore.experiments") < check.layer_of("relucore.cli.app")
