"""The probe snapshot as plain text, for pdb, a terminal or Jupyter.

Kept apart from the probe so the probe stays the one file the debugger loads;
the layout mirrors the VS Code "Autograd" view: problems first, one line per
tensor, saved tensors and containers indented under it. The words around the
facts are English or Simplified Chinese (:data:`WORDS`); the snapshot's own
explanations are already in the language the probe was asked for, and torch's
messages stay as torch prints them.
"""

from __future__ import annotations

from graphlife.i18n import CHINESE, ENGLISH, Language

_MARK = {"error": "✖", "warning": "⚠", "information": "ℹ", None: " "}  # noqa: RUF001 - the information sign, meant

#: The report's own words, with the same named fields in both languages (tests/debug/test_explain_languages.py).
WORDS: dict[Language, dict[str, str]] = {
    ENGLISH: {
        "probe_failed": "graphlife probe failed: {error}",
        "no_torch": "graphlife: this program has not imported torch; nothing to show.",
        "unknown_error": "not an autograd error graphlife knows",
        "exception": "Exception: {message}",
        "why": "  Why: {why}",
        "fix": "  Fix: {fix}",
        "blame": "  The live objects point at `{blame}`.",
        "tensors": "Tensors ({count})",
        "leaf_requires_grad": "leaf, requires grad",
        "inference": "inference",
        "graph": "     graph: {nodes} nodes, {saved} saved ({counts}), keeps {activations} of activations "
                 "({saved_bytes} saved in all)",
        "none": "none",
        "versions": " (saved at v{saved}, now v{now})",
        "would_run": "backward() would run",
        "would_raise": "backward() would raise {error}",
        "at_node": " at {node}",
        "containers": "Containers holding graphs ({count})",
        "container": "{name} ({kind}): {tensors} tensors, {graphs} graphs, {nodes} nodes, {activations} of activations",
        "truncated": "(stopped early: {limits} limit)",
        "state_ok": "ok",
        "state_modified": "modified",
        "state_freed": "freed",
        "state_hooked": "hooked",
    },
    CHINESE: {
        "probe_failed": "graphlife 探针失败：{error}",
        "no_torch": "graphlife：该程序没有导入 torch，没有可显示的内容。",
        "unknown_error": "不是 graphlife 认识的自动求导错误",
        "exception": "异常：{message}",
        "why": "  原因：{why}",
        "fix": "  修复：{fix}",
        "blame": "  当前存活的对象指向 `{blame}`。",
        "tensors": "张量（{count}）",
        "leaf_requires_grad": "叶子张量，需要梯度",
        "inference": "推理张量",
        "graph": "     计算图：{nodes} 个节点，保存了 {saved} 个张量（{counts}），占用 {activations} 激活值"
                 "（保存的张量共 {saved_bytes}）",
        "none": "无",
        "versions": "（保存时为 v{saved}，现在为 v{now}）",
        "would_run": "backward() 可以正常运行",
        "would_raise": "backward() 会抛出 {error}",
        "at_node": "，位于 {node}",
        "containers": "持有计算图的容器（{count}）",
        "container": "{name}（{kind}）：{tensors} 个张量，{graphs} 个计算图，{nodes} 个节点，占用 {activations} 激活值",
        "truncated": "（提前停止：达到 {limits} 上限）",
        "state_ok": "完好",
        "state_modified": "已被修改",
        "state_freed": "已释放",
        "state_hooked": "经钩子保存",
    },
}


def _bytes(n: float | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def _shape(shape: list[int] | None) -> str:
    return "?" if shape is None else "[" + ", ".join(str(s) for s in shape) + "]"


def _padded(text: str, columns: int) -> str:
    """``text`` padded to ``columns`` terminal columns (a Chinese character takes two), so the
    saved tensors line up in both languages."""
    width = sum(2 if "\u2e80" <= char <= "\u9fff" or "\uff00" <= char <= "\uffef" else 1 for char in text)
    return text + " " * max(columns - width, 0)


def _state(words: dict[str, str], state: str) -> str:
    """A saved tensor's state (``ok``, ``modified``, ``freed``, ``hooked``) in the report's language."""
    return words.get("state_" + state, state)


def render_text(snap: dict, *, max_saved: int = 6, language: Language = ENGLISH) -> str:
    """A readable report of a :func:`probe.snapshot` result, its own words in ``language``."""
    words = WORDS[language]

    def say(key: str, **fields: object) -> str:
        return words[key].format(**fields)

    lines: list[str] = []
    if snap.get("error"):
        return say("probe_failed", error=snap["error"])
    if snap.get("torch") is None:
        return say("no_torch")
    exc = snap.get("exception")
    if exc:
        head = f"{exc['code']} {exc['name']}" if exc.get("code") else say("unknown_error")
        lines += [say("exception", message=exc["message"].splitlines()[0][:300]), f"  {head}"]
        if exc.get("why"):
            lines.append(say("why", why=exc["why"]))
        if exc.get("fix"):
            lines.append(say("fix", fix=exc["fix"]))
        if exc.get("blame"):
            lines.append(say("blame", blame=exc["blame"]))
        lines.append("")
    tensors = snap.get("tensors", [])
    lines.append(say("tensors", count=len(tensors)))
    for t in tensors:
        desc = f"{t['dtype']}{_shape(t['shape'])} {t['device']}"
        flags = []
        if t.get("grad_fn"):
            flags.append(t["grad_fn"])
        elif t.get("requires_grad"):
            flags.append(say("leaf_requires_grad"))
        if t.get("version"):
            flags.append(f"v{t['version']}")
        if t.get("grad"):
            norm = t["grad"].get("norm")
            flags.append("grad" + (f" |{norm:.4g}|" if norm is not None else ""))
        if t.get("is_inference"):
            flags.append(say("inference"))
        separator = ", " if language == ENGLISH else "，"
        lines.append(f" {_MARK.get(t.get('severity'), ' ')} {t['name']}: {desc}  {separator.join(flags)}".rstrip())
        g = t.get("graph")
        if g:
            st = g["states"]
            counts = separator.join(f"{v} {_state(words, k)}" for k, v in st.items() if v)
            lines.append(say("graph", nodes=f"{g['nodes']}{'+' if g['nodes_truncated'] else ''}",
                             saved=g["saved_count"], counts=counts or say("none"),
                             activations=_bytes(g["activation_bytes"]), saved_bytes=_bytes(g["saved_bytes"])))
            for s in g["saved"][:max_saved]:
                if s["state"] == "ok" and t.get("severity") is None:
                    continue
                extra = ""
                if s["state"] == "modified" and s.get("saved_version") is not None:
                    extra = say("versions", saved=s["saved_version"], now=s["version"])
                owner = f" = {s['owner']}" if s.get("owner") else ""
                state = _state(words, s["state"])
                lines.append(f"       {_padded(state, 8)} {s['node']}.{s['attr']} {_shape(s['shape'])}{owner}{extra}")
        p = t.get("backward_prediction")
        if p and (not p["ok"] or g):
            where = say("at_node", node=p["node"]) if p.get("node") else ""
            verdict = say("would_run") if p["ok"] else say("would_raise", error=p["code"] or p["error"]) + where
            colon = ": " if language == ENGLISH else "："
            lines.append(f"     {verdict}{colon}{p['explanation']}")
    containers = snap.get("containers", [])
    if containers:
        lines += ["", say("containers", count=len(containers))]
        for c in containers:
            lines.append(f" {_MARK.get(c.get('severity'), ' ')} " + say(
                "container", name=c["name"], kind=c["kind"], tensors=c["tensors"], graphs=c["graphs"],
                nodes=c["nodes"], activations=_bytes(c["activation_bytes"])))
            if c.get("leak"):
                lines.append(f"     {c['explanation']}")
    if snap.get("truncated"):
        lines += ["", say("truncated", limits=", ".join(snap.get("limits_hit", [])))]
    return "\n".join(lines)
