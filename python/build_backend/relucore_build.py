"""relucore's build backend: scikit-build-core's, which keeps the CMake build directory
(``build-dir`` in pyproject.toml) from one ``pip install .`` to the next.

pip builds in a fresh isolated environment each time, at a new temporary path. scikit-build-core
records that path in the build directory's ``.skbuild-info.json`` and, finding another one on the
next build, clears the CMake cache and ``CMakeFiles/`` with the compiled objects: every
``pip install .`` then recompiles the whole extension. When the recorded environment no longer
exists (pip deletes it after the build), this backend records the current one instead, so the
build directory is reused. CMake then finds pybind11 afresh (its cached location is gone) and
CMakeLists.txt copies pybind11's headers to a fixed place, rewriting only those that changed:
a second install with the same pybind11 recompiles nothing. A build directory made by a build
environment that still exists (``--no-build-isolation``, another virtual environment) is left to
scikit-build-core's own rule.
"""

from __future__ import annotations

import json
from pathlib import Path

from scikit_build_core import build as _backend
from scikit_build_core.build import *  # noqa: F401,F403  (every other hook, unchanged)

__all__ = list(_backend.__all__)


def _adopt_build_dirs() -> None:
    from scikit_build_core.cmake import DIR  # the scikit-build-core of this build environment

    source = Path.cwd().resolve()
    for info_file in source.glob("build/*/.skbuild-info.json"):
        try:
            info = json.loads(info_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # scikit-build-core clears an unreadable record itself
        recorded = info.get("skbuild_path")
        if (
            isinstance(info, dict)
            and info.get("source_dir") == str(source)
            and recorded
            and recorded != str(DIR)
            and not Path(recorded).exists()
        ):
            info["skbuild_path"] = str(DIR)
            info_file.write_text(json.dumps(info, indent=2), encoding="utf-8")


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _adopt_build_dirs()
    return _backend.build_wheel(wheel_directory, config_settings, metadata_directory)
