"""A fix is offered only when the engine, checking the fixed text, agrees it is one.

The recipes here are the plausible wrong fixes the issue reported (detaching the
discriminator's output where the generator reuses it; retaining a graph an optimizer
step then changes; detaching one of two carried tensors): each would apply cleanly, and
each must not be offered.
"""

from __future__ import annotations

import textwrap
from dataclasses import replace

from graphlife.checker import check
from graphlife.findings import Span
from graphlife.fixes import TextEdit, compute_fixes
from graphlife.fixes.document import Document
from graphlife.fixes.registry import make_edits
from graphlife.fixes.verify import moved_line
from graphlife.recipes import CarriedName, DetachCarriedState, DetachExpression, RetainGraph

DCGAN = textwrap.dedent('''
    import torch
    import torch.nn as nn

    G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    D = nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    g_opt = torch.optim.Adam(G.parameters(), lr=1e-3)
    d_opt = torch.optim.Adam(D.parameters(), lr=1e-3)
    criterion = nn.BCEWithLogitsLoss()
    for step in range(2):
        fake = G(torch.randn(8, 4))
        d_fake = D(fake)
        d_loss = criterion(D(torch.randn(8, 2)), torch.ones(8, 1)) + criterion(d_fake, torch.zeros(8, 1))
        d_opt.zero_grad()
        d_loss.backward()
        d_opt.step()
        g_loss = criterion(d_fake, torch.ones(8, 1))
        g_opt.zero_grad()
        g_loss.backward()
        g_opt.step()
''').lstrip()


def _span_of(source: str, line: int, text: str, occurrence: int = 0) -> Span:
    row = source.splitlines()[line - 1]
    column = -1
    for _ in range(occurrence + 1):
        column = row.index(text, column + 1)
    return Span(line, column + 1, line, column + 1 + len(text))


def test_fixes_that_would_add_an_error_are_not_offered():
    (finding,) = [f for f in check(DCGAN) if f.code == "GL101"]
    # `criterion(d_fake.detach(), ...)`: the discriminator stops learning from fakes and the
    # generator's backward still meets `d_opt.step()`'s change (GL102); `retain_graph=True`: the same
    wrong = (
        DetachExpression(title="detach the reused output", expr=_span_of(DCGAN, 12, "d_fake", 0)),
        RetainGraph(title="retain", call=_span_of(DCGAN, 14, "d_loss.backward()")),
    )
    doc = Document(DCGAN)
    assert all(make_edits(doc, recipe, finding.span) for recipe in wrong), "each recipe applies to the code"
    assert compute_fixes(replace(finding, fixes=wrong), DCGAN) == []
    # what the rule offers instead is accepted
    assert [fix.kind for fix in compute_fixes(finding, DCGAN)] == ["rebuild_shared_graph"]


LSTM = textwrap.dedent('''
    import torch
    import torch.nn as nn

    cell = nn.LSTMCell(4, 8)
    opt = torch.optim.SGD(cell.parameters(), lr=0.1)
    h = torch.zeros(2, 8)
    c = torch.zeros(2, 8)
    for step in range(3):
        h, c = cell(torch.randn(2, 4), (h, c))
        loss = h.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
''').lstrip()


def test_a_fix_that_leaves_the_finding_is_not_offered():
    (finding,) = [f for f in check(LSTM) if f.code == "GL101"]
    loop = finding.fixes[0].loop  # type: ignore[attr-defined]
    one = DetachCarriedState(title="only c", loop=loop, targets=(CarriedName("c"),))
    assert make_edits(Document(LSTM), one, finding.span)
    assert compute_fixes(replace(finding, fixes=(one,)), LSTM) == []
    (fix,) = compute_fixes(finding, LSTM)
    assert fix.title == "Detach `c` and `h` at the top of each iteration" and fix.preferred


def test_the_finding_is_looked_for_where_the_edits_moved_its_line():
    two_lines_above = TextEdit(Span(3, 1, 3, 1), "a = 1\nb = 2\n")
    one_line_removed = TextEdit(Span(4, 1, 5, 1), "")
    on_the_line = TextEdit(Span(10, 5, 10, 9), "x\ny")
    below = TextEdit(Span(12, 1, 12, 1), "z\n")
    assert moved_line(10, [two_lines_above, one_line_removed, on_the_line, below]) == 11
    assert moved_line(3, [two_lines_above]) == 5
