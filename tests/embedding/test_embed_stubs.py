"""The committed python/relucore/_core.pyi matches the built extension.

Regenerate with ``python .ci/stubs.py`` after changing any binding. The check
needs pybind11-stubgen (a test extra) and is skipped when the toolchain that
shapes the text differs from the one named in the stub's header.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "stubs.py"


def load_script():
    spec = importlib.util.spec_from_file_location("relucore_ci_stubs", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_py_typed_and_stub_are_shipped():
    import relucore

    pkg = Path(relucore.__file__).parent
    assert (pkg / "py.typed").exists()
    assert (pkg / "_core.pyi").exists()


def test_core_stub_has_not_drifted():
    pytest.importorskip("pybind11_stubgen")
    if not SCRIPT.exists():
        pytest.skip("not running from a source checkout")
    stubs = load_script()
    have, committed = stubs.toolchain(), stubs.committed_toolchain()
    if have != committed:
        pytest.skip(f"stub was generated with {committed}, this environment has {have}")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
