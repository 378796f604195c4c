"""The public names the C++ headers declare, found by a small scanner (no compiler).

Public: what namespace ``relucore`` and every namespace inside it (``defaults``,
``simd``, ``blas``, ``lapack``, ``dual_kernels``, ``flow``, ...; the inline namespace of
the build configuration, ``RELUCORE_ABI_NAMESPACE``, is transparent) declares outside
``detail`` and ``*_detail`` namespaces: classes, structs, enums and their
values, type aliases, free functions, constants; inside a class or struct,
the members of its public sections (member functions, fields, nested types).
``relucore::meanfield`` holds the mean-field engine's kernels and is internal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

INTERNAL_NAMESPACES = {"detail", "meanfield"}
KEYWORDS = {
    "if", "for", "while", "switch", "return", "sizeof", "static_assert", "decltype", "operator", "template",
    "typename", "const", "constexpr", "inline", "static", "explicit", "noexcept", "delete", "default", "using",
    "alignas", "alignof", "throw", "case", "else", "do", "new", "auto", "void", "int", "double", "bool", "long",
}  # fmt: skip


@dataclass
class Scope:
    name: str  # class, struct or enum name
    kind: str  # "class", "struct" or "enum"
    members: set = field(default_factory=set)


def _strip(text: str) -> str:
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    text = re.sub(r"^\s*#[^\n]*", "", text, flags=re.M)
    return text


def _matching(text: str, i: int) -> int:
    """Index just after the brace that closes the one at text[i]."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def _statements(body: str):
    """Top-level statements of a block: (text before '{' or ';', nested block or None)."""
    i, start = 0, 0
    while i < len(body):
        c = body[i]
        if c == "{":
            end = _matching(body, i)
            yield body[start:i], body[i + 1 : end - 1]
            # a class body or brace initialiser may be followed by declarators and ';'
            j = end
            while j < len(body) and body[j] in " \t\n":
                j += 1
            if j < len(body) and body[j] == ";":
                end = j + 1
            i = start = end
        elif c == ";":
            yield body[start:i], None
            i = start = i + 1
        elif c == ":" and re.search(r"\b(public|private|protected)\s*$", body[start:i]):
            yield body[start : i + 1], None
            i = start = i + 1
        else:
            i += 1


def _drop_template_header(head: str) -> str:
    """head without a leading ``template <...>`` (angle brackets balanced)."""
    head = head.lstrip()
    if not head.startswith("template"):
        return head
    depth = 0
    for i, c in enumerate(head):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
            if depth == 0:
                return head[i + 1 :]
    return head


def _split_top(text: str) -> list:
    """text split at the commas outside (), <> and {}."""
    parts, depth, cur = [], 0, ""
    for c in text:
        depth += c in "(<{"
        depth -= c in ")>}"
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    return parts + [cur]


def _declared_names(head: str) -> set:
    """Every name a declaration declares (several for ``int a = 0, b = 1;``)."""
    head = re.sub(r"\[[^\]]*\]", "", _drop_template_header(re.sub(r"\[\[[^\]]*\]\]", "", head)))
    paren, eq = head.find("("), head.find("=")
    if paren >= 0 and (eq < 0 or paren < eq):  # a function
        name = _declared_name(head)
        return {name} if name else set()
    parts = _split_top(head)
    names = {_declared_name(parts[0])}
    for part in parts[1:]:
        m = re.match(r"\s*(\w+)\s*(=|$)", part)
        if m:
            names.add(m.group(1))
    return {n for n in names if n}


def _declared_name(head: str) -> str | None:
    """The name a declaration head declares (a function, field or constant)."""
    head = _drop_template_header(re.sub(r"\[\[[^\]]*\]\]", "", head))
    head = re.sub(r"\[[^\]]*\]", "", head)  # array extents
    m = re.search(r"(~?\w+)\s*\(", head)
    if m and "=" not in head[: m.start()]:
        name = m.group(1)
        return None if name in KEYWORDS or name.startswith("~") else name
    head = head.split("=")[0]
    names = re.findall(r"\b\w+\b", head)
    return names[-1] if names and names[-1] not in KEYWORDS else None


def _scan_class(kind: str, qualified: str, body: str, out: dict) -> None:
    scope = out.setdefault(qualified, Scope(qualified, kind))
    name = qualified.split("::")[-1]
    public = kind == "struct"
    for head, block in _statements(body):
        h = head.strip()
        access = re.match(r"^(public|private|protected)\s*:$", h)
        if access:
            public = access.group(1) == "public"
            continue
        if not public or not h or h.startswith(("friend", "static_assert")):
            continue
        nested = re.match(r"^(?:template\s*<[^{]*>\s*)?(struct|class|enum\s+class|enum)\s+(\w+)", h)
        if nested and block is not None:
            scope.members.add(nested.group(2))
            _scan_type(nested.group(1), f"{name}::{nested.group(2)}", block, out)
            continue
        if h.startswith("using "):
            scope.members.add(h.split()[1])
            continue
        if re.search(r"=\s*delete\s*$", h) or re.match(rf"^(?:explicit\s+)?~?{name}\s*\(", h):
            continue  # constructors, destructor and deleted overloads are documented with the class
        scope.members |= _declared_names(h) - {name}


def _scan_type(kind: str, name: str, body: str, out: dict) -> None:
    if kind.startswith("enum"):
        out[name] = Scope(name, "enum", {v.split("=")[0].strip() for v in body.split(",") if v.strip()})
    else:
        _scan_class(kind, name, body, out)


def _scan_namespace(body: str, types: dict, free: set) -> None:
    for head, block in _statements(body):
        h = head.strip()
        ns = re.match(r"^(?:inline\s+)?namespace\s+(\w+)$", h)
        if ns:
            internal = ns.group(1) in INTERNAL_NAMESPACES or ns.group(1).endswith("_detail")
            if not internal and block is not None:
                _scan_namespace(block, types, free)
            continue
        typ = re.match(r"^(?:template\s*<[^{]*>\s*)?(struct|class|enum\s+class|enum)\s+(\w+)", h)
        if typ and block is not None:
            free.add(typ.group(2))
            _scan_type(typ.group(1), typ.group(2), block, types)
            continue
        if h.startswith("using ") and "=" in h:
            free.add(h.split()[1])
            continue
        if h.startswith("using namespace") or not h:
            continue
        free |= _declared_names(h)


def public_names(include_dir: Path):
    """(types: name -> Scope with its public members, free names) over every header."""
    types: dict = {}
    free: set = set()
    for header in sorted(include_dir.rglob("*.hpp")):
        text = _strip(header.read_text())
        for m in re.finditer(r"namespace\s+relucore\s*\{", text):
            _scan_namespace(text[m.end() : _matching(text, m.end() - 1) - 1], types, free)
    return types, free


def version_macros(template: Path) -> set:
    return set(re.findall(r"#define\s+(RELUCORE_\w+)", template.read_text()))
