"""docs/sweeps.md: its examples run after the default install (pandas, no optional extras)."""

import os
import re
import sys

import pandas as pd

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: Optional extras; the documented examples (the Dask one aside) must not need them.
EXTRAS = ("dask", "distributed", "pyarrow", "matplotlib", "sklearn")


def _pyproject():
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def _python_blocks():
    with open(os.path.join(ROOT, "docs", "sweeps.md"), encoding="utf-8") as f:
        return re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)


def test_pandas_and_toml_reading_are_default_dependencies():
    deps = [re.split(r"[<>=;\s\[]", d, maxsplit=1)[0] for d in _pyproject()["project"]["dependencies"]]
    assert "pandas" in deps and "tomli" in deps  # tomli only below Python 3.11 (its marker)


def test_docs_examples_run_with_the_default_install(tmp_path, monkeypatch):
    for name in EXTRAS:
        if name == "pyarrow" and name in sys.modules:
            continue  # pandas' string arrays use it once it is loaded: its absence cannot be simulated then
        monkeypatch.setitem(sys.modules, name, None)  # import fails, as without the extra
    monkeypatch.chdir(tmp_path)
    blocks = [b for b in _python_blocks() if "tcp://" not in b]  # the Dask example needs a cluster
    assert len(blocks) >= 4
    namespace = {"__name__": "docs_example"}
    for block in blocks:
        exec(compile(block, "docs/sweeps.md", "exec"), namespace)
    table = namespace["table"]
    # Every run reached a stationary point; at n = 40, d = 1000 some leave examples unfit.
    assert isinstance(table, pd.DataFrame) and table.status.isin(["converged", "stalled"]).all()
    assert (table.status[table.d >= 10_000] == "converged").all()
    assert (tmp_path / "fig2.csv").exists() and (tmp_path / "fig2.db").exists()
    assert "rng" in namespace
    # the store read while it could still be running: 2 x 3 configurations x 100 trials
    assert len(namespace["partial"]) == 600 and len(namespace["by_size"]) == 6 and namespace["errors"].empty
