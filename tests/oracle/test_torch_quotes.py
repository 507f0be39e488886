"""The rule pages quote what torch says verbatim: the installed torch must print exactly that.

The editor's hover shows the quote as "what torch will do"; a quote from an older torch
(``SigmoidBackward0`` where torch 2.13 names the node ``Sigmoid``) would send a user
searching their traceback for text that is not there.
"""

from __future__ import annotations

import pytest
import torch

from graphlife.rules import rule_by_code


def _gl101() -> None:
    w = torch.randn(3, requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    loss.backward()


def _gl102() -> None:
    x = torch.randn(8, 4, requires_grad=True)  # the shape the quote names
    h = torch.sigmoid(x)
    h.relu_()  # sigmoid saved h for its backward
    h.sum().backward()


@pytest.mark.parametrize(("code", "run"), [("GL101", _gl101), ("GL102", _gl102)])
def test_the_quoted_runtime_error_is_what_torch_raises(code, run) -> None:
    rule = rule_by_code(code)
    assert rule is not None
    quote = rule.doc.torch_says.strip("`")
    assert quote.startswith("RuntimeError: "), quote
    with pytest.raises(RuntimeError) as raised:
        run()
    assert str(raised.value) == quote.removeprefix("RuntimeError: ")
