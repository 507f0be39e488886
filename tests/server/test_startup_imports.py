"""What `graphlife check` of one small file loads: the engine, not the rest of graphlife.

Why it matters to a user: start-up is most of the time of `graphlife check` on one
file (a pre-commit hook, an editor's "check on save"). The language server's libraries
(pygls, lsprotocol), the fixer's (libcst), a process pool for one file, or torch would
each cost more than the analysis itself. `benchmarks/bench_check.py` measures the
time; this test keeps the heavy imports out.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from graphlife.config import find_pyproject

SMALL = textwrap.dedent("""\
    import torch
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        x = torch.randn(4, 3)
        loss = model(x).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(loss.item())
    """)

#: Never loaded by a check of one file: the language server's and the fixer's libraries,
#: torch, and the process pool (used for folders of more than three files).
NEVER = ("pygls", "lsprotocol", "libcst", "torch", "concurrent.futures", "multiprocessing", "graphlife.lsp.server")


def is_fixer(name: str) -> bool:
    """The fixer's modules: the fix package loads with its proofs, which the rules run, but
    turning a recipe into edits (libcst) is for `graphlife fix` and the editor only."""
    return name.startswith("graphlife.fixes.") and not name.startswith("graphlife.fixes.proofs")


def modules_after_check(path: Path, *options: str) -> set[str]:
    """The modules ``graphlife check [options] path`` loaded, run as the console script runs it."""
    code = ("import sys\nfrom graphlife.cli import main\nmain(['check', *sys.argv[2:], sys.argv[1]])\n"
            "print(repr(sorted(sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", code, str(path), *options], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return set(ast.literal_eval(proc.stdout.splitlines()[-1]))


def test_check_of_one_file_loads_no_server_fixer_torch_or_process_pool(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SMALL)
    loaded = modules_after_check(path)
    assert "graphlife.analysis.interpreter" in loaded  # the check ran
    assert not [name for name in loaded if name.split(".")[0] in NEVER or name in NEVER or is_fixer(name)]
    assert "graphlife.fixes.proofs.carried" in loaded  # the proofs are part of the check
    if find_pyproject(tmp_path) is None:
        assert "tomllib" not in loaded and "tomli" not in loaded  # no settings file to read


#: What a check answered from the cache before the command line loads (:mod:`graphlife.fast_check`)
#: does not import: the standard library modules of the full command line, which alone cost
#: more than three times a bare ``python -c pass`` (benchmarks/RESULTS.md, "Start-up").
NOT_ON_THE_FAST_PATH = ("argparse", "json", "pathlib", "dataclasses", "inspect", "typing", "enum", "re", "gettext",
                        "locale", "tempfile", "hashlib", "graphlife.cli_full", "graphlife.config",
                        "graphlife.findings", "graphlife.project.result_cache")


def test_check_answered_from_the_cache_loads_neither_engine_nor_parser(tmp_path):
    """A file checked again unchanged is answered from the cache of results: the plain command
    (no options) is answered before the command line loads, and loads none of the standard
    library the command line needs; with an option, the full command line answers from the
    cache and loads no engine, no parser and no tree index, and no temporary-file machinery
    (it writes nothing)."""
    path = tmp_path / "train.py"
    path.write_text(SMALL)
    an_hour_ago = time.time_ns() - 3600 * 10**9
    os.utime(path, ns=(an_hour_ago, an_hour_ago))  # a stat written just now proves nothing: it would be read
    modules_after_check(path)  # fills the cache (and makes its folder in tmp_path)
    os.utime(tmp_path, ns=(an_hour_ago, an_hour_ago))
    modules_after_check(path)  # sees the folder's new stat once
    loaded = modules_after_check(path)
    assert "graphlife.fast_check" in loaded  # the cache answered
    assert not [name for name in loaded if name.split(".")[0] in NOT_ON_THE_FAST_PATH or name in NOT_ON_THE_FAST_PATH]
    full = modules_after_check(path, "--output-format", "concise")
    assert "graphlife.project.result_cache" in full and "graphlife.cli_full" in full  # the cache answered
    heavy = ("graphlife.analysis", "graphlife.checker", "graphlife.rules", "graphlife.project.sources", "tempfile")
    assert not [name for name in full if name.startswith(heavy)]
