"""``relucore sweep CONFIG.toml`` (the subcommand function, run in-process)."""
import pandas as pd
import pytest

from relucore import cli
from relucore.cli import sweep as _sweep_cli


def test_cli_runs_a_toml_sweep_and_resumes(tmp_path, capsys):
    cfg = tmp_path / "s.toml"
    cfg.write_text('trials = 3\nseed = 4\noutput = "out.csv"\ncheckpoint = "s.ckpt"\n'
                   '[grid]\nn = [5, 6]\nd = 300\nuse_gram = true\n')
    assert cli.main(["sweep", str(cfg), "--no-progress", "--batch-size", "2"]) == 0
    table = pd.read_csv(tmp_path / "out.csv")
    assert len(table) == 6 and set(table.n) == {5, 6} and (table.status == "converged").all()
    assert "trials" in capsys.readouterr().out
    import relucore

    direct = relucore.sweep({"n": [5, 6], "d": 300, "use_gram": True}, trials=3, seed=4, progress=False)
    assert table.loss.tolist() == direct.loss.tolist()
    # Same command again: everything comes from the checkpoint.
    assert cli.main(["sweep", str(cfg), "--no-progress"]) == 0
    assert pd.read_csv(tmp_path / "out.csv").loss.tolist() == direct.loss.tolist()


@pytest.mark.parametrize("text, match", [
    ("trials = 1\nseed = 0\n", "exactly one of"),
    ("trials = 1\n[grid]\nn = [5]\n", "missing required key 'seed'"),
    ("trials = 1\nseed = 0\nbogus = 1\n[grid]\nn = [5]\n", "unknown key"),
])
def test_cli_rejects_bad_files(tmp_path, text, match):
    cfg = tmp_path / "s.toml"
    cfg.write_text(text)
    with pytest.raises(ValueError, match=match):
        cli.main(["sweep", str(cfg)])


def test_example_config_parses():
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "sweep_fig2.toml")
    cfg = _sweep_cli.load_config(path)
    from relucore.sweeps.config import expand_grid

    assert len(expand_grid(cfg["grid"])) == 12 and cfg["trials"] > 0
