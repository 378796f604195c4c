"""python/build_backend/relucore_build.py: the build directory survives pip's isolated builds."""

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("scikit_build_core")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python" / "build_backend"))
import relucore_build  # noqa: E402
from scikit_build_core.cmake import DIR  # noqa: E402


def _record(root: Path, name: str, **info) -> Path:
    path = root / "build" / name / ".skbuild-info.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(info))
    return path


def test_a_build_dir_of_a_vanished_isolated_environment_is_adopted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = str(tmp_path.resolve())
    gone = _record(tmp_path, "cp311-x", source_dir=src, skbuild_path="/tmp/pip-build-env-gone/scikit_build_core")
    live = _record(tmp_path, "asan", source_dir=src, skbuild_path=str(tmp_path))  # exists: another env's, kept
    other = _record(tmp_path, "moved", source_dir="/elsewhere", skbuild_path="/tmp/pip-build-env-gone2/x")
    broken = tmp_path / "build" / "torn" / ".skbuild-info.json"
    broken.parent.mkdir()
    broken.write_text("{")
    relucore_build._adopt_build_dirs()
    assert json.loads(gone.read_text())["skbuild_path"] == str(DIR)
    assert json.loads(gone.read_text())["source_dir"] == src
    assert json.loads(live.read_text())["skbuild_path"] == str(tmp_path)
    assert json.loads(other.read_text())["skbuild_path"] == "/tmp/pip-build-env-gone2/x"
    assert broken.read_text() == "{"  # scikit-build-core clears an unreadable record itself


def test_the_backend_offers_every_hook_of_scikit_build_core():
    from scikit_build_core import build

    assert set(relucore_build.__all__) == set(build.__all__)
    for name in build.__all__:
        assert callable(getattr(relucore_build, name))
    assert relucore_build.build_wheel is not build.build_wheel
