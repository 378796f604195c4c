"""The C function tables (``__pyx_capi__``) of scipy's BLAS and LAPACK wrappers, for ``_core``.

``_core`` registers scipy's BLAS and LAPACK (cpp/bindings/bind_blas.cpp) on the first call
that needs them. The ordinary ``import scipy.linalg.cython_blas`` first runs
``scipy.linalg``'s ``__init__``, which imports most of scipy.linalg (~0.1 s of a first
``relucore.train`` call); the two extension modules themselves need only the ``scipy``
package. So, while ``scipy.linalg`` is not imported, each is loaded from its file next to
that ``__init__`` and then taken out of ``sys.modules`` again: a later
``import scipy.linalg.cython_blas`` runs the ordinary import, which sets the package
attribute and returns the same loaded module (the same function pointers). Anything
unusual (no such file, a loader error) falls back to the ordinary import.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import threading

__all__ = ["capi"]

_LOCK = threading.Lock()  # one loader at a time: threads racing to a first call wait for it
_TABLES: dict = {}


def capi(name: str) -> dict:
    """``scipy.linalg.<name>.__pyx_capi__`` (name: ``cython_blas`` or ``cython_lapack``)."""
    with _LOCK:
        if name not in _TABLES:
            full = f"scipy.linalg.{name}"
            module = sys.modules.get(full)
            if module is None and "scipy.linalg" not in sys.modules:
                module = _load_alone(full, name)
            if module is None:
                module = importlib.import_module(full)
            _TABLES[name] = module.__pyx_capi__
        return _TABLES[name]


def _load_alone(full: str, name: str):
    """The extension module ``full`` loaded from its file without its package; None if that fails."""
    try:
        import scipy

        folder = os.path.join(os.path.dirname(scipy.__file__), "linalg")
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, name + suffix)
            if not os.path.isfile(path):
                continue
            loader = importlib.machinery.ExtensionFileLoader(full, path)
            spec = importlib.util.spec_from_file_location(full, path, loader=loader)
            module = importlib.util.module_from_spec(spec)
            sys.modules[full] = module  # while it runs, as the import system does
            try:
                loader.exec_module(module)
            finally:
                sys.modules.pop(full, None)
            return module
    except Exception:  # noqa: BLE001 - any failure: the ordinary import decides
        return None
    return None
