"""Find the fenced code blocks of the Markdown docs and the test directives above them.

A directive is an HTML comment (invisible once rendered) on its own line directly
above the opening fence, one per line:

    <!-- docs-test: dask-cluster tcp://head:8786 -->
        the test starts an in-process dask LocalCluster and runs the block with its
        address in place of the string given;
    <!-- docs-test: replace "trials=100_000" "trials=20" -->
        the test runs the block with the first string replaced by the second (a
        visible reduction of a long example); the first string must occur exactly once.

The docs say in their text what the directive does, so a reader knows what the test runs.
"""

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]
PYTHON_TAGS = ("python", "py")
DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
KINDS = {"dask-cluster": 1, "replace": 2}


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language tag, its text and its directives."""

    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    source: str
    directives: Tuple[Tuple[str, ...], ...] = ()

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"

    def directive(self, kind: str) -> Optional[Tuple[str, ...]]:
        """Arguments of the directive `kind`, or None."""
        for d in self.directives:
            if d[0] == kind:
                return d[1:]
        return None

    def replacements(self) -> List[Tuple[str, str]]:
        return [(d[1], d[2]) for d in self.directives if d[0] == "replace"]


def doc_files(root: Path = ROOT) -> List[Path]:
    """README.md, then docs/*.md in name order."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def _directives(lines: List[str], fence: int, where: str) -> Tuple[Tuple[str, ...], ...]:
    out = []
    i = fence - 1
    while i >= 0 and DIRECTIVE.match(lines[i]):
        words = tuple(shlex.split(DIRECTIVE.match(lines[i]).group(1)))
        if not words or words[0] not in KINDS or len(words) != 1 + KINDS[words[0]]:
            raise ValueError(f"{where}:{i + 1}: bad docs-test directive {lines[i].strip()!r}")
        out.append(words)
        i -= 1
    return tuple(reversed(out))


def _dedent(line: str, indent: int) -> str:
    """Remove a fence's indentation (a block in a list item) from one of its lines."""
    return line[indent:] if line[:indent].strip() == "" else line.lstrip()


def fenced_blocks(path: Path) -> List[Block]:
    """Every fenced block of `path` (any language), in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = len(m.group(1)), m.group(2), m.group(3).lower()
        j = i + 1
        while j < len(lines) and lines[j].strip() != fence:
            j += 1
        if j == len(lines):
            raise ValueError(f"{path}:{i + 1}: code fence never closed")
        body = "\n".join(_dedent(line, indent) for line in lines[i + 1 : j])
        blocks.append(Block(path, i + 1, lang, body + "\n", _directives(lines, i, str(path))))
        i = j + 1
    return blocks


def python_blocks(path: Path) -> List[Block]:
    """The ```python blocks of `path`, in order."""
    return [b for b in fenced_blocks(path) if b.lang in PYTHON_TAGS]


def runnable_source(block: Block) -> str:
    """The block's text with its `replace` directives applied (each must match once)."""
    source = block.source
    for old, new in block.replacements():
        count = source.count(old)
        if count != 1:
            raise ValueError(f"{block.id}: replace directive {old!r} matches {count} times, not once")
        source = source.replace(old, new)
    return source
