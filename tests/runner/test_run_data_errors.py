"""Every data error of ``cartjit run`` names the data file (and the line, where pandas
gives one), not only the config field: a CSV that is not UTF-8, ragged rows, and the
errors found once the file is read."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cartjit.experiments import ConfigError, read_config, resolve

ROOT = Path(__file__).resolve().parents[2]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


CONFIG = "[cv]\nV = 2\n[[datasets]]\nname = 'f'\npath = 'data.csv'\ntarget = 'y'\n{extra}"


@pytest.mark.parametrize("content, words", [
    (b"a,b,y\n1,2,x\n3,4,y\n1,2,caf\xe9\n", ["not UTF-8", "on line 4"]),
    (b"a,b,y\n1,2,x\n3,4,5,6\n5,6,x\n", ["Expected 3 fields in line 3, saw 4"]),
])
def test_cartjit_run_names_the_csv_file(tmp_path, content, words):
    (tmp_path / "data.csv").write_bytes(content)
    (tmp_path / "sweep.toml").write_text(CONFIG.format(extra=""))
    done = subprocess.run([sys.executable, "-m", "cartjit", "run", "sweep.toml", "--out",
                           "out", "--quiet"], cwd=tmp_path, env=_env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert str(tmp_path / "data.csv") in done.stderr, done.stderr
    assert "datasets[1].path" in done.stderr
    for word in words:
        assert word in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("rows, extra, field", [
    ("a,b,y\n1,2,x\n3,4,x\n", "", "datasets[1]"),                         # one class
    ("a,b,y\n1,2,x\n3,4,z\n", "features = ['c']\n", "datasets[1].features"),
    ("a,b,y\n1,2,x\n3,4,z\n", "task = 'regression'\n", "datasets[1].task"),
    ("a,b,y\n1,2,\n3,4,\n", "", "datasets[1].target"),                  # all missing
    ("a,b,y\n1,2,x\n3,4,z\n", "cv = { V = [5] }\n", "datasets[1].cv.V"),
    ("a,y\ninf,x\n3,z\n", "", "datasets[1].features"),                   # infinite value
])
def test_errors_found_in_the_data_name_the_file(tmp_path, rows, extra, field):
    (tmp_path / "data.csv").write_text(rows)
    path = tmp_path / "sweep.toml"
    path.write_text(CONFIG.format(extra=extra))
    with pytest.raises(ConfigError) as info:
        resolve(read_config(path))
    err = info.value
    assert err.field.startswith(field), str(err)
    assert str(tmp_path / "data.csv") in str(err), str(err)
    assert str(err).count(str(tmp_path / "data.csv")) == 1, str(err)
