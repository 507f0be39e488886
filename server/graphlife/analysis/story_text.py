"""The words of the hover's graph-lifetime story (:mod:`graphlife.analysis.stories`), in
English and Chinese.

A story is a :class:`~graphlife.findings.Message` of messages, one a line, whose lines
are typed :class:`~graphlife.findings.Line` arguments: the editor renders it in the
user's language and, in a notebook, names each line by its cell.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphlife.findings import Line, Message, MessageArg, MessageTemplate

TENSOR_TITLE = MessageTemplate("story.tensor", "**`{name}`** — graph lifetime (graphlife)",
                               zh_cn="**`{name}`** — 计算图生命周期（graphlife）")
BACKWARD_TITLE = MessageTemplate("story.backward", "**`{root}.backward()`** — graph lifetime (graphlife)",
                                 zh_cn="**`{root}.backward()`** — 计算图生命周期（graphlife）")
REQUIRES = MessageTemplate("story.requires", "- requires grad: **{requires}**; {leaf}",
                           zh_cn="- 需要梯度：**{requires}**；{leaf}")
YES = MessageTemplate("story.yes", "yes", zh_cn="是")
NO = MessageTemplate("story.no", "no", zh_cn="否")
DEPENDS = MessageTemplate("story.depends", "depends on the path", zh_cn="取决于执行路径")
A_LEAF = MessageTemplate("story.leaf", "a leaf", zh_cn="是叶子张量")
NOT_A_LEAF = MessageTemplate("story.not-leaf", "not a leaf (computed)", zh_cn="不是叶子张量（由计算得到）")
LEAF_SOMETIMES = MessageTemplate("story.leaf-sometimes", "a leaf on some paths", zh_cn="在部分执行路径上是叶子张量")
NO_GRAPH = MessageTemplate("story.no-graph", "- no graph: {why}", zh_cn="- 没有计算图：{why}")
BUILT = MessageTemplate("story.built", "- graph built at {lines} ({nodes})", zh_cn="- 计算图构建于{lines}（{nodes}）")
NODE = MessageTemplate("story.node", "{n} node", zh_cn="{n} 个节点")
NODES = MessageTemplate("story.nodes", "{n} nodes", zh_cn="{n} 个节点")
SAVES = MessageTemplate("story.saves", "- saves tensors for backward at {lines}",
                        zh_cn="- 在{lines}为反向传播保存了张量")
FREED = MessageTemplate(
    "story.freed", "- **already freed** by the backward at line {lines}: a second backward through it raises",
    zh_cn="- 已被{lines}的反向传播 **释放**：再次经过它反向传播会报错")
BACKPROPAGATED = MessageTemplate("story.backpropagated", "- backpropagated by the backward at {lines}",
                                 zh_cn="- {lines}的反向传播会经过它（计算图被保留）")
CONSUMED = MessageTemplate("story.consumed", "- consumed (and freed) by the backward at {lines}",
                           zh_cn="- 被{lines}的反向传播使用（并释放）")
NO_BACKWARD = MessageTemplate(
    "story.no-backward", "- no backward in this file reaches it: its saved tensors live as long as the tensor",
    zh_cn="- 这个文件中没有反向传播会经过它：它保存的张量会和这个张量存活得一样久")
KEPT_BY = MessageTemplate("story.kept-by", "- kept alive by {keepers}", zh_cn="- 被 {keepers} 保持存活")
KEEPER = MessageTemplate("story.keeper", "`{name}` (line {line})", zh_cn="`{name}`（{line}）")
CARRIED = MessageTemplate(
    "story.carried",
    "- reaches the graph of an earlier loop iteration (built at line {lines}): state carried across iterations",
    zh_cn="- 连到了之前某次循环迭代的计算图（构建于{lines}）：这是跨迭代保留的状态")
CHANGED = MessageTemplate("story.changed", "- changed in place at {lines} (version {version})",
                          zh_cn="- 在{lines}被原地修改（版本号 {version}）")
INFERENCE = MessageTemplate(
    "story.inference",
    "- an **inference tensor** (made under `torch.inference_mode()`): it cannot be saved for backward",
    zh_cn="- 一个**推理张量**（在 `torch.inference_mode()` 下创建）：它不能为反向传播保存")
NO_GRAPH_RAISES = MessageTemplate("story.no-graph-raises", "- `{root}` has no graph: {why} — this backward raises",
                                  zh_cn="- `{root}` 没有计算图：{why}——这次反向传播会报错")
UNKNOWN = MessageTemplate(
    "story.unknown", "- the graph behind it is not known here (it comes from code graphlife cannot see)",
    zh_cn="- 这里不知道它背后的计算图（它来自 graphlife 看不到的代码）")
WALKS = MessageTemplate("story.walks", "- walks {nodes} built at {lines}", zh_cn="- 经过构建于{lines}的 {nodes}")
GRAPH_NODE = MessageTemplate("story.graph-node", "{n} graph node", zh_cn="{n} 个计算图节点")
GRAPH_NODES = MessageTemplate("story.graph-nodes", "{n} graph nodes", zh_cn="{n} 个计算图节点")
PARTLY_FREED = MessageTemplate(
    "story.partly-freed", "- part of it was **already freed** by the backward at line {lines}: this raises",
    zh_cn="- 其中一部分已被{lines}的反向传播 **释放**：这次会报错")
RETAINS = MessageTemplate("story.retains", "- `retain_graph=True`: the saved tensors stay alive after it",
                          zh_cn="- `retain_graph=True`：保存的张量在它之后仍然存活")
FREES = MessageTemplate(
    "story.frees", "- frees the saved tensors of every node it walks (a later backward through them raises)",
    zh_cn="- 释放它经过的每个节点保存的张量（之后再经过它们的反向传播会报错）")
ACCUMULATES = MessageTemplate("story.accumulates", "- accumulates into `.grad` of {groups}",
                              zh_cn="- 把梯度累积到 {groups}的 `.grad` 中")
GROUP = MessageTemplate("story.group", "{n} parameter group", zh_cn="{n} 组参数")
GROUPS = MessageTemplate("story.groups", "{n} parameter groups", zh_cn="{n} 组参数")

#: At most this many lines are listed; more end in an ellipsis.
SHOWN_LINES = 6


def line_list(lines: Sequence[Line], *, word: bool) -> Message:
    """``4, 9 of layers.py`` (after ``line``/``lines`` when ``word``), ``第 4 行、layers.py 第 9 行``
    in Chinese; more than :data:`SHOWN_LINES` end in an ellipsis."""
    shown = list(lines[:SHOWN_LINES])
    args: dict[str, MessageArg] = {f"l{index}": line for index, line in enumerate(shown)}
    more = ", …" if len(lines) > SHOWN_LINES else ""
    english = ", ".join(f"{{l{index}}}" for index in range(len(shown))) + more
    if word:
        english = ("lines " if len(lines) > 1 else "line ") + english
    chinese = "、".join(f"{{l{index}}}" for index in range(len(shown))) + ("、…" if more else "")
    return Message("story.lines", english, args, zh_cn=chinese)


def story(parts: Sequence[str]) -> Message:
    """The story's lines, one a line (each a message, or text)."""
    args: dict[str, MessageArg] = {f"p{index}": part for index, part in enumerate(parts)}
    template = "\n".join(f"{{p{index}}}" for index in range(len(parts)))
    return Message("story", template, args, zh_cn=template)


def story_list(items: Sequence[str]) -> Message:
    """Items of a story line, ``a, b`` (``a、b`` in Chinese)."""
    args: dict[str, MessageArg] = {f"i{index}": item for index, item in enumerate(items)}
    return Message("story.list", ", ".join(f"{{i{index}}}" for index in range(len(items))), args,
                   zh_cn="、".join(f"{{i{index}}}" for index in range(len(items))))
