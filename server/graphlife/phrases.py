"""Phrases several rules put into their messages, each in English and Chinese.

A phrase that is an argument of a message (``{maybe}``, ``{name}``) must be translated
with it, or a Chinese message would carry English words; these are the ones shared by
more than one rule. A rule's own phrases stay in the rule's module, next to its messages.
"""

from __future__ import annotations

from graphlife.findings import Message, MessageTemplate

#: What a message calls a tensor whose expression has no text (a synthesized value).
THE_TENSOR = MessageTemplate("phrase.the-tensor", "the tensor", zh_cn="该张量")
#: What a message calls a tensor it cannot name otherwise.
A_TENSOR = MessageTemplate("phrase.a-tensor", "a tensor", zh_cn="某个张量")
#: What a message calls the loss when its expression has no text.
THE_LOSS = MessageTemplate("phrase.the-loss", "the loss", zh_cn="损失")
#: Appended to a warning's main clause: the bug is on some paths, not all.
ON_SOME_PATHS = MessageTemplate("phrase.on-some-paths", " on some paths", zh_cn="（仅在部分执行路径上）")
#: The last two items of a list (``a`, `b` and `c``).
AND = MessageTemplate("phrase.and", "{first} and {last}", zh_cn="{first} 和 {last}")


def maybe(certain: bool) -> str:
    """Nothing when the finding is certain, else :data:`ON_SOME_PATHS`."""
    return "" if certain else ON_SOME_PATHS()


def tensor_name(text: str) -> str:
    """``text`` (a tensor's expression), or :data:`THE_TENSOR` when there is none."""
    return text or THE_TENSOR()


def joined(items: list[str]) -> str:
    """``a`` / ``a and b`` / ``a, b and c`` in the reader's language."""
    if len(items) == 1:
        return items[0]
    return AND(first=", ".join(items[:-1]) if len(items) > 2 else items[0], last=items[-1])


__all__ = ["AND", "A_TENSOR", "ON_SOME_PATHS", "THE_LOSS", "THE_TENSOR", "Message", "joined", "maybe", "tensor_name"]
