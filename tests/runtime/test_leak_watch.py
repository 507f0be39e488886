"""The leak watch on the GL2xx fixtures under torch, and `graphlife run --watch-graph` as a user runs it.

Each bad fixture whose graphs outlive the optimizer step that made them is reported
once, with the line that built its oldest live graph and the container that keeps
it; the other bad fixtures keep nothing across steps (GL202's retained graph is
freed by the next step, GL205 and the evaluation helpers drop theirs when the
evaluation ends, before any step) and no good fixture is reported.
"""

from __future__ import annotations

import contextlib
import io
import re
import runpy
import textwrap
from pathlib import Path

import pytest
import torch
from run_helpers import graphlife_command

from fixturelib import FIXTURES_DIR, fixture_paths
from graphlife.runtime.watch import GraphWatch
from oracle.runner import reset_torch_state

#: fixture -> (a line the oldest live graph was built at, the container that keeps it; None: a
#: reference cycle through torch, which no name holds). For GL204 the line is the
#: `backward(create_graph=True)` that built the gradient's graph.
#: A line of None: the graph is built inside a library model, so no site is in the fixture.
LEAKS: dict[str, tuple[int | None, str | None]] = {
    "GL201/bad_dict_history_lists.py": (27, "history['total']"),
    "GL201/bad_forward_hook_collects_live_activations.py": (16, "monitor.history"),
    "GL201/bad_forward_hooks_over_named_modules_keep_activations.py": (15, "activations"),
    "GL201/bad_defaultdict_metrics_keep_losses.py": (15, "metrics['train/loss']"),
    "GL201/bad_meter_attribute_sum.py": (27, "losses.sum"),
    "GL201/bad_recent_losses_unbounded_deque.py": (15, "recent"),
    "GL201/bad_running_sum_rebound_each_batch.py": (18, "running"),
    "GL201/bad_setdefault_history_per_split.py": (13, "history['train']"),
    "GL201/bad_smoothed_loss_for_progress_bar.py": (13, "smoothed"),
    "GL201/bad_tensor_accumulator_add_.py": (13, "epoch_loss"),
    "GL201/bad_helper_returns_step_outputs.py": (12, "records"),
    "GL201/bad_input_gradient_hook_keeps_double_backward_graph.py": (19, "input_gradients"),
    "GL201/bad_layer_outputs_logged_to_module_list.py": (22, "LAYER_OUTPUTS"),
    "GL201/bad_losses_list_after_backward.py": (28, "losses"),
    "GL201/bad_actor_critic_named_records_never_cleared.py": (34, "model.saved_actions"),
    "GL201/bad_model_chosen_by_setting_loss_summed.py": (34, "running_loss"),
    "GL201/bad_module_level_activation_log.py": (22, "ATTENTION_LOG"),
    "GL201/bad_monitor_features_collected_in_training.py": (16, "feature_snapshots"),
    "GL201/bad_running_total_before_backward.py": (24, "epoch_loss"),
    "GL201/bad_trainer_self_history.py": (27, "self.history"),
    "GL201/bad_library_timm_losses_kept.py": (15, "losses"),
    # The graph is built inside the library model (the oracle's stand-in): no site in the fixture.
    "GL201/bad_library_sequence_classifier_loss_summed.py": (None, "total_loss"),
    "GL203/bad_dict_context_while_loop.py": (14, "state['context']"),
    "GL203/bad_ema_features_carried_retain.py": (26, "ema"),
    "GL203/bad_helper_leaky_integrator_retain.py": (15, "hidden"),
    "GL203/bad_trainer_self_memory_retain.py": (18, "self.memory"),
    "GL203/bad_tuple_running_stats_retain.py": (18, "stats"),
    "GL204/bad_input_gradient_penalty_backward.py": (25, None),
    "GL204/bad_saliency_regularizer_helper.py": (12, None),
    "GL204/bad_trainer_double_backprop.py": (21, None),
    "GL204/bad_wgan_gp_interpolates_backward.py": (15, None),
}

_CODES = {"GL201", "GL202", "GL203", "GL204", "GL205"}
_PATHS = fixture_paths(codes=_CODES)


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _watched(path: Path, steps: int = 6) -> tuple[GraphWatch, list[str]]:
    """Run a fixture in this process under a watch that counts at every optimizer step."""
    reports: list[str] = []
    watch = GraphWatch(torch, budget=0.0, report=reports.append)
    watch.install()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            runpy.run_path(str(path), init_globals={"STEPS": steps}, run_name="__main__")
    finally:
        watch.uninstall()
        reset_torch_state()
    return watch, reports


def _sites(report: str) -> list[tuple[str, int]]:
    return [(m.group(1), int(m.group(2))) for m in re.finditer(r"^    (\S+):(\d+) in \S+ \(\d+ live nodes\)$", report,
                                                                re.M)]


def _containers(report: str) -> list[str]:
    return re.findall(r"^    `([^`]+)` \(", report, re.M)


def test_every_leak_the_table_names_is_a_bad_fixture() -> None:
    assert all((FIXTURES_DIR / name).is_file() and "/bad_" in f"/{name.split('/')[1]}" for name in LEAKS)


@pytest.mark.parametrize("path", _PATHS, ids=_id)
def test_watch_reports_the_leaks_and_only_them(path: Path) -> None:
    watch, reports = _watched(path)
    expected = LEAKS.get(_id(path))
    if expected is None:
        assert reports == [], reports
        return
    assert len(reports) == 1, f"expected one report, counts: {[c.old_nodes for c in watch.counts]}"
    report = reports[0]
    line, container = expected
    if line is not None:
        assert (str(path), line) in _sites(report), report
    if container is None:
        assert "a reference cycle through torch" in report, report
    else:
        assert container in _containers(report), report


_LEAKY_SCRIPT = textwrap.dedent("""\
    import torch

    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    history = []
    for step in range(12):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(loss)
    print("trained", len(history))
    """)

# The evaluation keeps running until the watch's report has been written (seen through a tee on
# standard error), so the test waits for the report itself, not for a guess of how many timer
# counts a loop of some length gets on a machine of some speed (at most 60 s).
_EVAL_LEAK = textwrap.dedent("""\
    import sys, time
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
    outputs = []
    class Tee:
        def __init__(self, inner):
            self.inner, self.seen = inner, False
        def write(self, text):
            self.seen = self.seen or "graphlife watch" in text
            return self.inner.write(text)
        def flush(self):
            self.inner.flush()
    sys.stderr = Tee(sys.stderr)
    deadline = time.monotonic() + 60
    while not sys.stderr.seen and time.monotonic() < deadline:
        outputs.append(model(torch.randn(16, 64)))
    print("evaluated", "reported" if sys.stderr.seen else "not reported")
    """)


def test_run_watch_graph_reports_once_and_keeps_the_programs_output(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(_LEAKY_SCRIPT)
    ran = graphlife_command("run", "--watch-graph", "--watch-budget", "0", "train.py", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "trained 12\n"
    assert ran.stderr.count("graphlife watch: autograd graphs keep growing") == 1
    assert f"{tmp_path / 'train.py'}:7 in <module>" in ran.stderr
    assert "loss = model(torch.randn(8, 4)).pow(2).mean()" in ran.stderr
    assert "`history` (global of module __main__" in ran.stderr
    # The checker's finding on the append that keeps the graphs, next to what the run saw.
    assert f"static finding at {tmp_path / 'train.py'}:11: GL201 graph-kept-across-iterations" in ran.stderr


def test_run_watch_every_counts_a_program_without_optimizer(tmp_path: Path) -> None:
    (tmp_path / "evaluate.py").write_text(_EVAL_LEAK)
    ran = graphlife_command("run", "--watch-every", "0.05", "--watch-budget", "50", "evaluate.py", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "evaluated reported\n"
    assert "graphlife watch: autograd graphs keep growing (after " in ran.stderr
    assert f"{tmp_path / 'evaluate.py'}:17 in <module>" in ran.stderr
    assert "`outputs` (global of module __main__" in ran.stderr


def test_a_clean_loop_is_not_reported(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(_LEAKY_SCRIPT.replace("history.append(loss)", "history.append(loss.item())"))
    ran = graphlife_command("run", "--watch-graph", "--watch-budget", "0", "train.py", cwd=tmp_path)
    assert ran.returncode == 0 and ran.stdout == "trained 12\n"
    assert "graphlife watch" not in ran.stderr


def test_an_internal_error_of_the_watch_stops_the_watch_not_the_program() -> None:
    reports: list[str] = []
    watch = GraphWatch(torch, budget=0.0, report=reports.append)

    def broken() -> None:
        raise RuntimeError("scan failed")

    watch._scan = broken  # type: ignore[method-assign]
    watch.install()
    try:
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            model(torch.randn(4, 2)).sum().backward()
            opt.step()  # the watch counts here: its error must not escape
    finally:
        watch.uninstall()
    assert reports == ["graphlife watch: stopped after an internal error: RuntimeError: scan failed"]


def test_the_timer_is_left_to_a_program_that_uses_sigalrm_itself() -> None:
    import signal

    def programs_own(signum, frame) -> None:
        return None

    previous = signal.signal(signal.SIGALRM, programs_own)
    try:
        watch = GraphWatch(torch, every=0.01, budget=0.0, report=lambda text: None)
        watch.install()
        assert signal.getsignal(signal.SIGALRM) is programs_own
        watch.uninstall()
        assert signal.getsignal(signal.SIGALRM) is programs_own
        free = GraphWatch(torch, every=30.0, budget=0.0, report=lambda text: None)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        free.install()
        assert signal.getsignal(signal.SIGALRM) == free._on_timer
        free.uninstall()
        assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, previous)
