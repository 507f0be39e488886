"""`graphlife explain` on real tracebacks of real programs."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from graphlife.checker import CheckResult
from graphlife.debug import traceback_explain
from graphlife.findings import Finding, Severity, Span

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def traceback_of(script: Path) -> str:
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    return proc.stderr


@pytest.fixture(scope="module")
def gl102_traceback() -> str:
    return traceback_of(SCRIPTS / "inplace_after_sigmoid.py")


def _line_of(script: Path, marker: str) -> int:
    return next(n for n, text in enumerate(script.read_text().splitlines(), 1) if marker in text)


def test_explains_the_rule_at_the_users_faulting_line(gl102_traceback, tmp_path, capsys):
    tb_file = tmp_path / "tb.txt"
    tb_file.write_text(gl102_traceback)
    assert traceback_explain.main([str(tb_file)]) == 0
    out = capsys.readouterr().out
    script = SCRIPTS / "inplace_after_sigmoid.py"
    assert "GL102 inplace-modifies-saved-tensor" in out
    assert f"{script}:{_line_of(script, '# stop here')} in <module> (faulting line)" in out
    assert "loss.backward()" in out
    assert "site-packages" not in out  # torch's own frames are not the user's
    assert out.splitlines()[0].startswith("RuntimeError: one of the variables needed for gradient computation")


def test_reads_stdin_and_shows_the_static_finding_next_to_it(gl102_traceback, monkeypatch, capsys):
    script = SCRIPTS / "inplace_after_sigmoid.py"
    line = _line_of(script, "# stop here")
    calls = []

    def fake_check(source, path=None, config=None, **options):
        calls.append(path)
        finding = Finding("GL102", "inplace-modifies-saved-tensor", Severity.ERROR, Span(line, 1, line, 16),
                          "`gate` is changed in place after sigmoid saved it")
        return CheckResult(findings=[finding])

    monkeypatch.setattr("graphlife.checker.check_source", fake_check)
    monkeypatch.setattr(sys, "stdin", io.StringIO(gl102_traceback))
    assert traceback_explain.main([]) == 0
    out = capsys.readouterr().out
    assert calls == [str(script)]  # the checker ran once on the user's file
    assert "static finding GL102 inplace-modifies-saved-tensor (the same rule): `gate` is changed" in out


def test_a_checker_failure_does_not_hide_the_explanation(gl102_traceback, monkeypatch):
    def broken(source, path=None, config=None, **options):
        raise ValueError("engine bug")

    monkeypatch.setattr("graphlife.checker.check_source", broken)
    status, report = traceback_explain.explain_text(gl102_traceback)
    assert status == 0
    assert "GL102" in report and "the checker failed: ValueError: engine bug" in report


def test_the_last_of_chained_tracebacks_counts():
    first = traceback_of(SCRIPTS / "second_backward.py")
    chained = ("Traceback (most recent call last):\n  File \"/nowhere/x.py\", line 3, in <module>\n"
               "KeyError: 'a'\n\nDuring handling of the above exception, another exception occurred:\n\n" + first)
    status, report = traceback_explain.explain_text(chained)
    assert status == 0
    assert "GL101 backward-through-freed-graph" in report
    assert "/nowhere/x.py" not in report


def test_other_errors_and_no_traceback():
    status, report = traceback_explain.explain_text(
        'Traceback (most recent call last):\n  File "/nowhere/x.py", line 1, in <module>\nKeyError: \'a\'\n')
    assert status == 1 and "not one of the autograd errors" in report
    assert traceback_explain.explain_text("just some text")[0] == 2
    assert traceback_explain.main(["/nonexistent/tb.txt"]) == 2


def test_a_bug_in_an_imported_module_is_named_at_the_backward_it_breaks(tmp_path):
    """The traceback ends at `loss.backward()` in train.py; the in-place op that broke it is in
    layers.py, which train.py imports: the explanation names that file and line."""
    (tmp_path / "layers.py").write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Block(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n\n"
        "    def forward(self, x):\n        h = torch.sigmoid(self.fc(x))\n        h.mul_(2)\n        return h.sum()\n"
    )
    train = tmp_path / "train.py"
    train.write_text("import torch\nfrom layers import Block\n\nmodel = Block()\nloss = model(torch.randn(2, 4))\n"
                     "loss.backward()\n")
    status, report = traceback_explain.explain_text(traceback_of(train))
    assert status == 0
    expected = f"static finding GL102 inplace-modifies-saved-tensor (the same rule) in {tmp_path / 'layers.py'}:12"
    assert expected in report
