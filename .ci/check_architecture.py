#!/usr/bin/env python3
"""Checks the layout rules of docs/architecture.md; exits 1 and lists every violation.

- no source file over 600 lines (vendored Eigen and the generated _core.pyi aside);
- no function over 100 lines (a Python function's docstring aside; C++ bodies found by
  brace matching, a heuristic that knows comments and string literals);
- no reference to documents outside the repository ("SPEC", "DESIGN") or to issue numbers;
- the layers of relucore import only downwards, and no module-level import cycle;
- no call into the extension (``_core.f(...)``) with more than MAX_POSITIONAL positional
  arguments: the rest go by keyword, so two arguments of the same type cannot swap silently;
- no binding builds a Python dict (results are bound types): in cpp/bindings ``py::dict``
  appears only as a ``const py::dict&`` input, and in bind_blas.cpp for scipy's capsule tables.
"""

from __future__ import annotations

import ast
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 100
MAX_POSITIONAL = 3
SOURCE_DIRS = (
    "python",
    "cpp/include",
    "cpp/bindings",
    "cpp/tests",
    "cpp/examples",
    "tests",
    "bench",
    "examples",
    ".ci",
)
TEXT_DIRS = SOURCE_DIRS + ("docs",)
SOURCE_SUFFIXES = {".py", ".hpp", ".inc", ".cpp", ".h", ".sh", ".toml", ".txt", ".in"}
SKIP = ("cpp/third_party/", "python/relucore/_core.pyi", ".ci/check_architecture.py")
#: The layers, lowest first: a package may import its own layer and those below it.
LAYERS = [
    {
        "relucore._core",
        "relucore._validation",
        "relucore._inputs",
        "relucore._summary",
        "relucore._deprecation",
        "relucore._docstrings",
        "relucore._scipy_capi",
    },
    {"relucore.gd"},
    {"relucore.theory", "relucore.meanfield"},
    {"relucore.sweeps"},
    {"relucore.experiments", "relucore.plots"},
    {"relucore.cli"},
]
FORBIDDEN = re.compile(r"\bSPEC\b|\bDESIGN(\.md)?\b|\b[Ii]ssues? #?\d+|\(issue \d+\)")


def files(dirs, suffixes=None):
    for d in dirs:
        base = ROOT / d
        if not base.exists():
            continue
        for p in sorted(base.rglob("*")):
            rel = p.relative_to(ROOT).as_posix()
            if not p.is_file() or any(rel.startswith(s) for s in SKIP) or "__pycache__" in rel:
                continue
            if suffixes is None or p.suffix in suffixes or p.name in ("run", "CMakeLists.txt"):
                yield p, rel


def layer_of(module: str) -> int:
    for i, group in enumerate(LAYERS):
        if any(module == g or module.startswith(g + ".") for g in group):
            return i
    return -1


def module_name(rel: str) -> str:
    parts = rel[len("python/") : -3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def top_level_imports(tree: ast.Module, module: str, is_package: bool, modules: set, *, anywhere: bool = False):
    """Modules imported at import time (module level, outside functions), or with ``anywhere``
    also inside functions (the lazy imports).

    ``from P import a`` is an import of the module ``P.a`` when that is a module,
    else of ``P``.
    """
    out = []
    for node in ast.walk(tree) if anywhere else tree.body:
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            subs = [f"{name}.{a.name}" for a in node.names]
            out += [(s, node.lineno) for s in subs if s in modules]
            if any(s not in modules for s in subs):
                out.append((name, node.lineno))
    return out


def main() -> int:
    problems = []
    for p, rel in files(SOURCE_DIRS, SOURCE_SUFFIXES):
        n = len(p.read_text(errors="replace").splitlines())
        if n > MAX_FILE_LINES:
            problems.append(f"{rel}: {n} lines (limit {MAX_FILE_LINES})")
    for p, rel in files(TEXT_DIRS + ("README.md", "CMakeLists.txt", "pyproject.toml")):
        if p.suffix in {".png", ".svg", ".pdf", ".so"}:
            continue
        for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            if FORBIDDEN.search(line):
                problems.append(f"{rel}:{i}: cites a document outside the repository or an issue: {line.strip()[:100]}")
    for name in ("README.md", "CMakeLists.txt", "pyproject.toml"):
        p = ROOT / name
        for i, line in enumerate(p.read_text().splitlines(), 1):
            if FORBIDDEN.search(line):
                problems.append(
                    f"{name}:{i}: cites a document outside the repository or an issue: {line.strip()[:100]}"
                )
    graph, module_graph = {}, {}
    modules = {module_name(rel) for _, rel in files(("python",), {".py"})} | {"relucore._core"}
    for p, rel in files(("python", "tests", "bench"), {".py"}):
        tree = ast.parse(p.read_text(), filename=rel)
        problems += long_python_functions(tree, rel)
        if not rel.startswith("python/relucore/"):
            continue
        problems += positional_binding_calls(tree, rel)
        mod = module_name(rel)
        imports = top_level_imports(tree, mod, p.name == "__init__.py", modules)
        graph[mod] = {name for name, _ in imports if name.startswith("relucore")}
        if p.name != "__init__.py":  # between modules, a lazy import closes a circle too
            lazy = top_level_imports(tree, mod, False, modules, anywhere=True)
            module_graph[mod] = {name for name, _ in lazy if name in modules}
        problems += upward_imports(tree, mod, rel)
    for p, rel in files(("cpp/include", "cpp/bindings", "cpp/tests", "cpp/examples"), {".hpp", ".cpp"}):
        problems += long_cpp_functions(p.read_text(), rel)
    for p, rel in files(("cpp/bindings",), {".hpp", ".cpp"}):
        problems += built_dicts(p.read_text(), rel)
    problems += cycles(graph)
    problems += [f"{c} (counting imports inside functions)" for c in cycles(module_graph)]
    for line in problems:
        print(line)
    print(f"check_architecture: {len(problems)} problem(s)")
    return 1 if problems else 0


#: The one binding file that may hold dicts: scipy's capsule tables (``__pyx_capi__``), read as inputs.
DICT_INPUTS_FILE = "cpp/bindings/bind_blas.cpp"


def built_dicts(text: str, rel: str):
    """A binding that builds or returns a ``py::dict`` (an input ``const py::dict&`` is allowed)."""
    if rel == DICT_INPUTS_FILE:
        return []
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        for m in re.finditer(r"(?:py|pybind11)::dict\b(?!\s*&)", line):
            if not line[: m.start()].rstrip().endswith("const"):
                out.append(f"{rel}:{i}: builds a py::dict; return a bound result type instead")
    return out


def long_python_functions(tree: ast.Module, rel: str):
    """Functions of more than MAX_FUNCTION_LINES lines, their docstrings aside."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            doc = node.body[0] if node.body else None
            if (
                isinstance(doc, ast.Expr)
                and isinstance(getattr(doc, "value", None), ast.Constant)
                and isinstance(doc.value.value, str)
            ):
                length -= doc.end_lineno - doc.lineno + 1  # the docstring does not count
            if length > MAX_FUNCTION_LINES:
                out.append(f"{rel}:{node.lineno}: function {node.name} has {length} lines (limit {MAX_FUNCTION_LINES})")
    return out


def positional_binding_calls(tree: ast.Module, rel: str):
    """Calls ``_core.f(...)`` with more than MAX_POSITIONAL positional arguments."""
    out = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "_core"
            and len(node.args) > MAX_POSITIONAL
        ):
            out.append(
                f"{rel}:{node.lineno}: _core.{node.func.attr} takes {len(node.args)} positional arguments"
                f" (limit {MAX_POSITIONAL}; pass the rest by keyword)"
            )
    return out


def upward_imports(tree: ast.Module, mod: str, rel: str):
    """Imports of module ``mod`` (anywhere in it, functions included) from a higher layer."""
    out, mine = [], layer_of(mod)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("relucore"):
            target = layer_of(node.module)
            if mine >= 0 and target > mine:
                out.append(f"{rel}:{node.lineno}: {mod} (layer {mine}) imports {node.module} (layer {target})")
    return out


CPP_FUNCTION_HEAD = re.compile(r"\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(->[^{]*)?\{\s*$")
CPP_NOT_FUNCTION = re.compile(r"^\s*(namespace|class|struct|enum|union)\b|=\s*\{|\b(if|for|while|switch|catch)\s*\(")


def long_cpp_functions(text: str, rel: str):
    """Function bodies of more than MAX_FUNCTION_LINES lines (lambdas inside them count for their function)."""
    out, stack = [], []
    for i, line in enumerate(text.splitlines()):
        code = re.sub(r'"([^"\\]|\\.)*"', '""', re.sub(r"//.*", "", line))
        for ch in code:
            if ch == "{":
                head = bool(CPP_FUNCTION_HEAD.search(code)) and not CPP_NOT_FUNCTION.search(code)
                inside = any(h for _, h in stack)
                stack.append((i, head and not inside))
            elif ch == "}" and stack:
                start, is_function = stack.pop()
                if is_function and i - start - 1 > MAX_FUNCTION_LINES:
                    out.append(
                        f"{rel}:{start + 1}: function body of {i - start - 1} lines (limit {MAX_FUNCTION_LINES})"
                    )
    return out


def cycles(graph):
    """Module-level import cycles between relucore's modules."""
    edges = {m: {t for t in targets if t in graph and t != m} for m, targets in graph.items()}
    out, state = [], {}

    def visit(m, stack):
        state[m] = 1
        stack.append(m)
        for t in sorted(edges[m]):
            if state.get(t) == 1:
                cyc = stack[stack.index(t) :] + [t]
                # A package importing its own sub-module is not a cycle unless the sub-module imports back.
                out.append("import cycle: " + " -> ".join(cyc))
            elif t not in state:
                visit(t, stack)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [])
    return out


if __name__ == "__main__":
    sys.exit(main())
