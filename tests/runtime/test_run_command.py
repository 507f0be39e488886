"""`graphlife run` as a user types it: the program runs as under `python`, errors are explained."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from run_helpers import graphlife_command

_SHOW = textwrap.dedent("""\
    import json, sys
    print(json.dumps({"argv": sys.argv, "name": __name__, "path0": sys.path[0],
                      "main": sys.modules["__main__"].__dict__ is globals()}))
    sys.exit(int(sys.argv[-1]))
    """)

_FREED = textwrap.dedent("""\
    import torch

    def train(weights):
        hidden = torch.zeros(3)
        for _ in range(2):
            hidden = torch.tanh(hidden * weights + 1)
            loss = hidden.sum()
            loss.backward()

    train(torch.randn(3, requires_grad=True))
    """)


def _python(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def test_a_script_sees_what_python_gives_it(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    script = tmp_path / "sub" / "show.py"
    script.write_text(_SHOW)
    ran = graphlife_command("run", "sub/show.py", "--flag", "3", cwd=tmp_path)
    plain = _python("sub/show.py", "--flag", "3", cwd=tmp_path)
    assert ran.returncode == plain.returncode == 3
    assert ran.stdout == plain.stdout
    assert '"main": true' in ran.stdout and '"name": "__main__"' in ran.stdout


def test_a_module_runs_as_python_dash_m(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text(_SHOW)
    ran = graphlife_command("run", "-m", "pkg.mod", "x", "0", cwd=tmp_path)
    plain = _python("-m", "pkg.mod", "x", "0", cwd=tmp_path)
    assert ran.returncode == plain.returncode == 0, ran.stderr
    assert ran.stdout == plain.stdout


def test_exit_status_keyboard_interrupt_and_other_errors_pass_through(tmp_path: Path) -> None:
    (tmp_path / "interrupt.py").write_text("import atexit\natexit.register(lambda: print('bye'))\n"
                                           "raise KeyboardInterrupt\n")
    (tmp_path / "message.py").write_text("import sys\nsys.exit('bye')\n")
    (tmp_path / "other.py").write_text("def f():\n    return 1 / 0\nf()\n")
    for name in ("interrupt.py", "message.py", "other.py"):
        ran = graphlife_command("run", name, cwd=tmp_path)
        plain = _python(name, cwd=tmp_path)
        assert (ran.returncode, ran.stdout) == (plain.returncode, plain.stdout), (name, ran.stderr)
    for name in ("interrupt.py", "other.py"):  # no launcher frame, and no explanation: not autograd errors
        assert graphlife_command("run", name, cwd=tmp_path).stderr == _python(name, cwd=tmp_path).stderr


def test_usage_errors(tmp_path: Path) -> None:
    assert graphlife_command("run", cwd=tmp_path).returncode == 2
    missing = graphlife_command("run", "nope.py", cwd=tmp_path)
    assert missing.returncode == 2 and "can't open file" in missing.stderr
    assert graphlife_command("run", "--watch-every", "soon", "x.py", cwd=tmp_path).returncode == 2
    helped = graphlife_command("run", "--help", cwd=tmp_path)
    assert helped.returncode == 0 and "--watch-graph" in helped.stdout


def test_an_autograd_error_is_explained_after_torchs_traceback(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(_FREED)
    ran = graphlife_command("run", "train.py", cwd=tmp_path)
    assert ran.returncode == 1
    err = ran.stderr
    trace, _, explanation = err.partition("\ngraphlife: GL101 backward-through-freed-graph\n")
    trace = trace[trace.index("Traceback (most recent call last):"):]  # after torch's import warnings, if any
    assert trace.startswith(f"Traceback (most recent call last):\n  File \"{tmp_path / 'train.py'}\", line 10")
    assert "launcher.py" not in trace and "runpy" not in trace
    assert "Trying to backward through the graph a second time" in trace
    assert f"backward was called at {tmp_path}/train.py:8 in train\n      loss.backward()" in explanation
    assert f"called from {tmp_path}/train.py:10 in <module>" in explanation
    assert "✖ loss: float32[] cpu  SumBackward0" in explanation  # the user's names, not torch's
    assert "args[0]" not in explanation
    assert "Fix: Detach carried state" in explanation
    assert "graphlife run --sites" in explanation  # how to learn where the graph was built
    assert f"static finding at {tmp_path}/train.py:8: GL101" in explanation


def test_with_sites_the_line_that_built_the_freed_graph_is_named(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(_FREED)
    ran = graphlife_command("run", "--sites", "train.py", cwd=tmp_path)
    assert ran.returncode == 1
    built = (f"the freed graph was built at {tmp_path}/train.py:6 in train\n"
             "      hidden = torch.tanh(hidden * weights + 1)")
    assert built in ran.stderr


def test_the_explanation_speaks_the_environments_language(tmp_path: Path) -> None:
    """`LANG=zh_CN.UTF-8 graphlife run`: the explanation is Chinese, torch's own message stays as torch
    prints it (what the user searches for), and the static finding is the checker's Chinese one."""
    import os

    (tmp_path / "train.py").write_text(_FREED)
    env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES", "LANGUAGE")}
    env.update(PYTHONPATH=str(Path(__file__).resolve().parents[2] / "server"), NO_COLOR="1", LANG="zh_CN.UTF-8")
    ran = subprocess.run([sys.executable, "-m", "graphlife", "run", "train.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert ran.returncode == 1
    _, _, explanation = ran.stderr.partition("\ngraphlife: GL101 backward-through-freed-graph\n")
    assert "Trying to backward through the graph a second time" in ran.stderr
    assert f"在 {tmp_path}/train.py:8 in train 调用了反向传播" in explanation
    assert f"调用自 {tmp_path}/train.py:10 in <module>" in explanation
    assert "graphlife run --sites" in explanation and "构建计算图的那一行" in explanation
    assert f"静态检查在 {tmp_path}/train.py:8 发现：GL101" in explanation
    assert "backward was called" not in explanation and "static finding" not in explanation
