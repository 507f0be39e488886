"""The torch-message -> rule table, checked against the errors torch really raises."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch import nn

from graphlife.debug.messages import MESSAGES, classify


def _raise_gl101():
    w = torch.randn(2, requires_grad=True)
    loss = (w.exp() * w).sum()
    loss.backward()
    loss.backward()


def _raise_gl102():
    y = torch.sigmoid(torch.randn(2, requires_grad=True))
    y.mul_(2)
    y.sum().backward()


def _raise_gl103():
    w = torch.randn(2, requires_grad=True)
    w -= 0.1


def _raise_gl104():
    w = torch.randn(2, requires_grad=True)
    torch.tensor(w.sum().item()).backward()


def _raise_gl105():
    torch.optim.SGD([torch.randn(2, requires_grad=True) * 0.01], lr=0.1)


def _raise_gl106():
    with torch.inference_mode():
        x = torch.ones(2)
    (x * torch.ones(2, requires_grad=True)).sum()


def _raise_gl107():
    y = torch.randn(2, requires_grad=True) * 2
    y.requires_grad = False


def _raise_gl109():
    (torch.randn(2, requires_grad=True) * 2).cpu().numpy()


class _Arity(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * b

    @staticmethod
    def backward(ctx, g):
        return g


def _raise_gl402():
    _Arity.apply(torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)).sum().backward()


class _Legacy(torch.autograd.Function):
    def forward(self, a):
        return a


def _raise_gl404():
    _Legacy()(torch.ones(1, requires_grad=True))


class _SavesFloat(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, scale):
        ctx.save_for_backward(a, scale)
        return a * scale

    @staticmethod
    def backward(ctx, g):
        return g, None


def _raise_gl406():
    _SavesFloat.apply(torch.ones(2, requires_grad=True), 2.0)


CASES = {
    "GL101": _raise_gl101, "GL102": _raise_gl102, "GL103": _raise_gl103, "GL104": _raise_gl104,
    "GL105": _raise_gl105, "GL106": _raise_gl106, "GL107": _raise_gl107, "GL109": _raise_gl109,
    "GL402": _raise_gl402, "GL404": _raise_gl404, "GL406": _raise_gl406,
}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # GL404 instantiates a Function
@pytest.mark.parametrize("code", sorted(CASES))
def test_torch_message_maps_to_its_rule(code):
    with pytest.raises((RuntimeError, ValueError, TypeError)) as info:
        CASES[code]()
    item = classify(str(info.value))
    assert item is not None, str(info.value)
    assert item["code"] == code


def test_table_is_plain_data_with_every_field():
    codes = [m["code"] for m in MESSAGES]
    assert len(codes) == len(set(codes)) and set(codes) == set(CASES)
    for item in MESSAGES:
        assert set(item) == {"code", "name", "patterns", "why", "fix", "zh-CN"}
        assert item["patterns"] and all(isinstance(p, str) and p for p in item["patterns"])
        # The Chinese inspector says the same two things; code spans are code in both languages.
        assert set(item["zh-CN"]) == {"why", "fix"}
        assert all(any("\u4e00" <= c <= "\u9fff" for c in text) for text in item["zh-CN"].values()), item["code"]
    assert classify("ValueError: something else") is None
    assert nn  # the module is imported for the fixtures' sake only


def test_rule_catalog_agrees_with_the_table():
    from graphlife.rules import all_rules

    by_code = {m["code"]: m for m in MESSAGES}
    for rule in all_rules():
        if rule.code in by_code:
            assert rule.name == by_code[rule.code]["name"], rule.code
            if rule.torch_message:
                found = classify(rule.torch_message)
                assert found is not None and found["code"] == rule.code, (rule.code, rule.torch_message)


def test_importing_the_debug_package_does_not_import_torch():
    code = ("import sys, graphlife.debug, graphlife.debug.traceback_explain, graphlife.debug.messages, "
            "graphlife.debug.render; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
