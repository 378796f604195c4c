"""The Python example of docs/embedding.md runs as written."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "embedding.md"


@pytest.mark.skipif(not DOC.exists(), reason="not running from a source checkout")
def test_embedding_python_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert blocks, "docs/embedding.md has no python example"
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), {})
    assert "converged" in capsys.readouterr().out
