"""Checkpoint regions: GL407 decided on the values the engine computes inside a checkpointed function.

The engine runs the function given to ``checkpoint`` inside a region
(``graphlife.analysis.checkpoint_regions``); numbers a recomputation does not give again carry
where they come from, and the rule hears about the ones that decide the control flow or a
shape. These tests pin what that buys over reading the function's text: values through
arithmetic, helpers and other modules, aliases, and state written after it was read; and what
stays silent: the same code run without checkpoint, values that decide nothing, state written
outside the region, code the engine cannot see.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphlife.checker import check, check_source
from graphlife.project.provider import ProjectModules
from graphlife.project.sources import SourceCache

HEAD = textwrap.dedent("""\
    import torch
    import torch.nn as nn
    from torch.utils.checkpoint import checkpoint
    """)


def _gl407(body: str) -> list[tuple[int, str]]:
    source = HEAD + textwrap.dedent(body)
    return [(f.line, f.severity.value) for f in check(source) if f.code == "GL407"]


def _line_of(body: str, text: str) -> int:
    source = HEAD + textwrap.dedent(body)
    return next(number for number, line in enumerate(source.split("\n"), 1) if text in line)


ALIASED = """\
    import random as rnd

    def block(x, w):
        r = rnd.random()
        p = r * 2
        if p < 0.5:
            return x
        return torch.tanh(x @ w)

    w = nn.Parameter(torch.randn(4, 4))
    x = torch.randn(2, 4, requires_grad=True)
    y = {call}
    y.sum().backward()
    """


def test_an_aliased_draw_through_arithmetic_decides_the_flow() -> None:
    body = ALIASED.format(call="checkpoint(block, x, w, use_reentrant=False)")
    assert _gl407(body) == [(_line_of(body, "r = rnd.random()"), "warning")]


def test_the_same_code_without_checkpoint_is_silent() -> None:
    assert _gl407(ALIASED.format(call="block(x, w)")) == []


def test_a_draw_in_a_helper_of_a_checkpointed_method() -> None:
    body = """\
        import numpy as np

        def width():
            return int(np.random.randint(2, 5))

        class Layer(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 4)

            def body(self, x):
                return self.lin(x)[:, : width()]

            def forward(self, x):
                return checkpoint(self.body, x, use_reentrant=True)

        layer = Layer()
        layer(torch.randn(2, 4, requires_grad=True)).sum().backward()
        """
    assert _gl407(body) == [(_line_of(body, "np.random.randint"), "warning")]


def test_a_draw_that_decides_nothing_is_silent() -> None:
    body = """\
        import random

        def block(x):
            noise = random.random()
            print(noise)
            return torch.tanh(x)

        x = torch.randn(2, 4, requires_grad=True)
        checkpoint(block, x, use_reentrant=False).sum().backward()
        """
    assert _gl407(body) == []


def test_state_read_before_the_region_writes_it() -> None:
    body = """\
        class Growing(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(8, 8)
                self.n = 2

            def forward(self, x):
                out = self.lin(x)[:, : self.n]
                self.n += 1
                return out

        m = Growing()
        checkpoint(m, torch.randn(2, 8, requires_grad=True), use_reentrant=True).sum().backward()
        """
    assert _gl407(body) == [(_line_of(body, "[:, : self.n]"), "warning")]


def test_state_written_outside_the_region_is_silent() -> None:
    body = """\
        class Growing(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(8, 8)
                self.n = 2

            def forward(self, x):
                return self.lin(x)[:, : self.n]

        m = Growing()
        for step in range(3):
            m.n = 2 + step % 2
            checkpoint(m, torch.randn(2, 8, requires_grad=True), use_reentrant=True).sum().backward()
        """
    assert _gl407(body) == []


def test_a_function_the_engine_cannot_see_is_silent() -> None:
    body = """\
        import random
        from somewhere import block

        x = torch.randn(2, 4, requires_grad=True)
        if random.random() < 0.5:
            x = x * 2
        checkpoint(block, x, use_reentrant=False).sum().backward()
        """
    assert _gl407(body) == []


def test_torch_dropout_only_without_the_rng_state() -> None:
    body = """\
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 4)
                self.drop = nn.Dropout(0.5)

            def forward(self, x):
                return self.drop(self.lin(x))

        block = Block()
        x = torch.randn(2, 4, requires_grad=True)
        checkpoint(block, x, use_reentrant=False, preserve_rng_state={flag}).sum().backward()
        """
    dropped = body.format(flag="False")
    assert _gl407(dropped) == [(_line_of(dropped, "return self.drop("), "warning")]
    assert _gl407(body.format(flag="True")) == []


def test_a_draw_in_another_module_of_the_project(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "layers.py").write_text(textwrap.dedent("""\
        import random

        import torch
        import torch.nn as nn


        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.mlp = nn.Linear(4, 4)

            def forward(self, x):
                if random.random() < 0.5:
                    return x
                return x + self.mlp(x)
        """))
    train = textwrap.dedent("""\
        import torch
        from torch.utils.checkpoint import checkpoint

        from layers import Block

        block = Block()
        x = torch.randn(2, 4, requires_grad=True)
        checkpoint(block, x, use_reentrant=False).sum().backward()
        """)
    (tmp_path / "train.py").write_text(train)
    path = str(tmp_path / "train.py")
    modules = ProjectModules(path, sources=SourceCache(), cwd=str(tmp_path))
    result = check_source(train, path, modules=modules)
    found = [(Path(f.span.path).name if f.span.path else "train.py", f.line) for f in result.findings
             if f.code == "GL407"]
    assert found == [("layers.py", 13)]


def test_state_the_function_sets_from_its_input_is_written_again_the_same() -> None:
    body = """\
        class Cropper(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(8, 8)
                self.width = 8

            def forward(self, x):
                self.width = x.size(1) // 2
                return self.lin(x)[:, : self.width]

        m = Cropper()
        checkpoint(m, torch.randn(2, 8, requires_grad=True), use_reentrant=True).sum().backward()
        """
    assert _gl407(body) == []
