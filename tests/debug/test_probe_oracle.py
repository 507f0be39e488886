"""The probe's backward prediction against torch, at every backward of every fixture.

Each fixture runs in-process under a line tracer. At each execution of a line that
calls backward (``x.backward()``, ``torch.autograd.backward/grad``), the tracer
takes a snapshot of the frame and records what the probe predicts for ``x``; then
the line runs. Torch is the judge: a hit that raised must have been predicted to
raise the same message, every other hit must have been predicted to run. Good
fixtures are the false-alarm check, bad ones the detection check.
"""

from __future__ import annotations

import ast
import runpy
import sys
import traceback
import warnings
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
PROBE = runpy.run_path(str(ROOT / "server" / "graphlife" / "debug" / "probe.py"))
TARGET = "graphlife_backward_target_"
BACKWARD_FUNCS = {"backward", "grad"}


def _first_sentence(message: str) -> str:
    return message.split(" Hint:")[0].split(". Saved intermediate")[0]


def _target_expr(call: ast.Call) -> ast.expr | None:
    """The tensor a backward call starts from, as an expression without calls."""
    func = call.func
    expr = None
    if isinstance(func, ast.Attribute) and func.attr == "backward" and not (
        isinstance(func.value, ast.Attribute) and func.value.attr == "autograd"
    ):
        expr = func.value
    elif isinstance(func, ast.Attribute) and func.attr in BACKWARD_FUNCS and call.args:
        expr = call.args[0]
    # scaler.scale(loss).backward(): the graph is the argument's plus a fresh node.
    while isinstance(expr, ast.Call) and expr.args:
        expr = expr.args[0]
    if expr is None or isinstance(expr, (ast.List, ast.Tuple)) or any(isinstance(n, ast.Call) for n in ast.walk(expr)):
        return None
    return expr


def backward_lines(source: str) -> dict[int, ast.expr]:
    """First line of each statement that calls backward -> the target expression."""
    tree = ast.parse(source)
    found: dict[int, ast.expr] = {}
    for stmt in ast.walk(tree):
        compound = (ast.FunctionDef, ast.ClassDef, ast.For, ast.While, ast.If, ast.With, ast.Try, ast.AsyncFunctionDef)
        if not isinstance(stmt, ast.stmt) or isinstance(stmt, compound):
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                expr = _target_expr(node)
                if expr is not None and stmt.lineno not in found:
                    found[stmt.lineno] = expr
    return found


def run_with_predictions(path: Path, lines: dict[int, ast.expr]):
    """Run the fixture; per traced hit (line, prediction), and the exception it ended with."""
    filename = str(path)
    compiled = {line: compile(ast.Expression(expr), filename, "eval") for line, expr in lines.items()}
    hits: list[tuple[int, dict | None]] = []

    def local(frame, event, arg):
        if event == "line" and frame.f_lineno in compiled:
            namespace = {**frame.f_globals, **frame.f_locals}
            try:
                target = eval(compiled[frame.f_lineno], frame.f_globals, dict(frame.f_locals))  # noqa: S307
            except Exception:  # noqa: BLE001 - not resolvable at this point
                target = None
            prediction = None
            if isinstance(target, torch.Tensor):
                namespace[TARGET] = target
                snap = PROBE["snapshot"](namespace)
                record = next(t for t in snap["tensors"] if t["name"] == TARGET or TARGET in t["aliases"])
                prediction = record["backward_prediction"]
            hits.append((frame.f_lineno, prediction))
        return local

    def global_trace(frame, event, arg):
        return local if frame.f_code.co_filename == filename else None

    error = None
    old = sys.gettrace()
    # A fixture may flip process-wide autograd switches; the next test must not inherit them.
    saved_modes = (torch.is_grad_enabled(), torch.is_anomaly_enabled(), torch.get_default_dtype())
    sys.settrace(global_trace)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runpy.run_path(filename, run_name="__main__")
    except Exception as exc:  # noqa: BLE001 - the fixture's own error is the point
        error = exc
    finally:
        sys.settrace(old)
        torch.set_grad_enabled(saved_modes[0])
        torch.autograd.set_detect_anomaly(saved_modes[1])
        torch.set_default_dtype(saved_modes[2])
    return hits, error


def fault_lines(path: Path, error: BaseException) -> set[int]:
    """The fixture's lines on the traceback: the backward's statement, and the lines of the
    fixture's own code that torch ran from it (a custom Function's backward reading its saved
    tensors raises there, below the backward that called it)."""
    return {f.lineno for f in traceback.extract_tb(error.__traceback__) if f.filename == str(path) and f.lineno}


def fixture_files():
    for code in ("GL101", "GL102", "GL104", "GL201", "GL202", "GL203", "GL301", "GL302", "GL305"):
        for path in sorted((FIXTURES / code).glob("*.py")):
            yield pytest.param(path, id=f"{code}/{path.stem}")


def _fails(prediction: dict | None) -> bool:
    return prediction is not None and not prediction["ok"] and prediction["reason"] != "non_scalar"


@pytest.mark.parametrize("path", list(fixture_files()))
def test_prediction_agrees_with_torch_at_every_backward(path: Path):
    source = path.read_text()
    lines = backward_lines(source)
    if not lines:
        pytest.skip("no backward call with a plain target")
    hits, error = run_with_predictions(path, lines)
    predicted = [(line, p) for line, p in hits if p is not None]
    if not predicted:
        pytest.skip("no backward target was a tensor at run time")
    last_line, last = hits[-1]
    raised_here = error is not None and isinstance(error, RuntimeError) and last is not None
    if raised_here:
        tree = ast.parse(source)
        faults = fault_lines(path, error)
        stmt_lines = {s.lineno for s in ast.walk(tree) if isinstance(s, ast.stmt)
                      for n in ast.walk(s) if getattr(n, "lineno", None) in faults}
        raised_here = last_line in stmt_lines or last_line in faults
    for index, (line, prediction) in enumerate(hits):
        if prediction is None:
            continue
        if raised_here and index == len(hits) - 1:
            assert _fails(prediction), f"line {line}: torch raised {error!r}, probe predicted {prediction}"
            assert _first_sentence(prediction["message"]) == _first_sentence(str(error))
        else:
            assert not _fails(prediction), f"line {line} ran, but the probe predicted {prediction}"
