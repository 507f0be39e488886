"""The debug inspector in Simplified Chinese: explain() follows ``language=`` or the
environment, the probe writes its explanations in the language asked for, and torch's
own messages stay as torch prints them."""

from __future__ import annotations

import io
import string

import pytest
import torch

from graphlife.debug import explain, probe
from graphlife.debug.messages import MESSAGES
from graphlife.debug.render import WORDS

_LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def _modified_saved_tensor():
    x = torch.randn(3, requires_grad=True)
    probs = torch.sigmoid(x)
    probs.clamp_(min=0.1)
    return probs, probs.log().sum()


def _printed(_: None, out: io.StringIO) -> str:
    """What an ``explain(..., file=out)`` call printed (explain() must be called in the test's own
    frame: it reports the caller's names)."""
    return out.getvalue()


@pytest.fixture
def environment(monkeypatch):
    """Sets the locale variables exactly (the rest unset), as a shell would."""
    def set_locale(**values: str) -> None:
        for name in _LOCALE_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        for name, value in values.items():
            monkeypatch.setenv(name, value)
    return set_locale


def test_explain_in_chinese_keeps_names_codes_and_torch_terms(environment):
    environment(LANG="en_US.UTF-8")
    probs, loss = _modified_saved_tensor()
    out = _printed(explain(loss, language="zh-CN", file=(out := io.StringIO())), out)
    assert "✖ loss: float32[] cpu  SumBackward0" in out
    assert "已被修改 SigmoidBackward0.result [3] = probs（保存时为 v0，现在为 v1）" in out
    assert ("backward() 会抛出 GL102，位于 SigmoidBackward0："
            "`probs` 被 SigmoidBackward0 保存用于反向传播，之后又被原地修改") in out
    assert "请改用非原地写法" in out
    assert "would raise" not in out and "changed in place" not in out
    assert probs is not None


def test_explain_follows_the_environment_as_gettext_does(environment):
    probs, loss = _modified_saved_tensor()
    environment(LANG="zh_CN.UTF-8")
    assert "backward() 会抛出 GL102" in _printed(explain(loss, file=(out := io.StringIO())), out)
    environment(LANG="en_US.UTF-8", LANGUAGE="zh_CN:en")
    assert "backward() 会抛出 GL102" in _printed(explain(loss, file=(out := io.StringIO())), out)
    environment(LC_ALL="C", LANGUAGE="zh_CN")  # gettext ignores LANGUAGE under the C locale
    assert "backward() would raise GL102" in _printed(explain(loss, file=(out := io.StringIO())), out)
    environment(LANG="zh_TW.UTF-8")  # Traditional Chinese: graphlife has no text for it
    assert "backward() would raise GL102" in _printed(explain(loss, file=(out := io.StringIO())), out)
    environment()
    assert "backward() would raise GL102" in _printed(explain(loss, file=(out := io.StringIO())), out)
    assert probs is not None


def test_an_explicit_language_wins_over_the_environment_and_a_wrong_one_is_refused(environment):
    environment(LANG="zh_CN.UTF-8")
    probs, loss = _modified_saved_tensor()
    assert "backward() would raise GL102" in _printed(explain(loss, language="en", file=(out := io.StringIO())), out)
    assert "backward() 会抛出 GL102" in _printed(explain(loss, language="auto", file=(out := io.StringIO())), out)
    with pytest.raises(ValueError, match="zh-CN"):
        _printed(explain(loss, language="klingon", file=(out := io.StringIO())), out)
    assert probs is not None


def test_containers_and_freed_graphs_are_explained_in_chinese(environment):
    environment(LANG="en_US.UTF-8")
    lin = torch.nn.Linear(4, 1)
    losses = [lin(torch.randn(2, 4)).pow(2).mean() for _ in range(3)]
    out = _printed(explain(language="zh-CN", file=(out := io.StringIO())), out)
    assert "持有计算图的容器（1）" in out
    assert "⚠ losses（list）：3 个张量，3 个计算图" in out
    assert "`losses` 让 3 个计算图一直存活" in out
    loss = lin(torch.randn(2, 4)).pow(2).mean()
    loss.backward()
    out = _printed(explain(loss, language="zh-CN", file=(out := io.StringIO())), out)
    assert "backward() 会抛出 GL101" in out
    assert "`loss` 的计算图已经在没有 `retain_graph=True` 的情况下做过反向传播" in out
    assert len(losses) == 3


def test_the_probe_explains_an_exception_in_chinese_and_quotes_torch_verbatim():
    x = torch.randn(3, requires_grad=True)
    loss = (x * 2).sum()
    loss.backward()
    with pytest.raises(RuntimeError) as info:
        loss.backward()
    message = str(info.value)
    snap = probe.snapshot({"x": x, "loss": loss}, exception=message, language="zh-cn")  # VS Code's spelling
    exc = snap["exception"]
    assert exc["code"] == "GL101" and exc["message"] == message  # torch's words, untouched
    assert exc["why"].startswith("不带 `retain_graph=True` 的反向传播会释放计算图保存的张量")
    assert "h = h.detach()" in exc["fix"]
    english = probe.snapshot({"x": x, "loss": loss}, exception=message)["exception"]
    assert english["why"].startswith("A backward without retain_graph=True frees")
    [pred] = [t["backward_prediction"] for t in snap["tensors"] if t["name"] == "loss"]
    assert pred["reason"] == "consumed" and pred["message"].startswith("Trying to backward through the graph")
    assert "计算图" in pred["explanation"]


def test_every_text_exists_in_both_languages_with_the_same_fields():
    assert set(WORDS["en"]) == set(WORDS["zh-CN"])
    for key, english in WORDS["en"].items():
        assert _fields(WORDS["zh-CN"][key]) == _fields(english), key
    texts = probe._TEXTS
    for key, by_language in texts.items():
        assert set(by_language) == {"en", "zh-CN"}, key
        assert _fields(by_language["zh-CN"]) == _fields(by_language["en"]), key
    for item in MESSAGES:
        assert set(item["zh-CN"]) == {"why", "fix"}, item["code"]
