"""The probe snapshot as plain text, for pdb, a terminal or Jupyter.

Kept apart from the probe so the probe stays the one file the debugger loads;
the layout mirrors the VS Code "Autograd" view: problems first, one line per
tensor, saved tensors and containers indented under it.
"""

from __future__ import annotations

_MARK = {"error": "✖", "warning": "⚠", "information": "ℹ", None: " "}  # noqa: RUF001 - the information sign, meant


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


def render_text(snap: dict, *, max_saved: int = 6) -> str:
    """A readable report of a :func:`probe.snapshot` result."""
    lines: list[str] = []
    if snap.get("error"):
        return f"graphlife probe failed: {snap['error']}"
    if snap.get("torch") is None:
        return "graphlife: this program has not imported torch; nothing to show."
    exc = snap.get("exception")
    if exc:
        head = f"{exc['code']} {exc['name']}" if exc.get("code") else "not an autograd error graphlife knows"
        lines += [f"Exception: {exc['message'].splitlines()[0][:300]}", f"  {head}"]
        if exc.get("why"):
            lines.append(f"  Why: {exc['why']}")
        if exc.get("fix"):
            lines.append(f"  Fix: {exc['fix']}")
        if exc.get("blame"):
            lines.append(f"  The live objects point at `{exc['blame']}`.")
        lines.append("")
    tensors = snap.get("tensors", [])
    lines.append(f"Tensors ({len(tensors)})")
    for t in tensors:
        desc = f"{t['dtype']}{_shape(t['shape'])} {t['device']}"
        flags = []
        if t.get("grad_fn"):
            flags.append(t["grad_fn"])
        elif t.get("requires_grad"):
            flags.append("leaf, requires grad")
        if t.get("version"):
            flags.append(f"v{t['version']}")
        if t.get("grad"):
            norm = t["grad"].get("norm")
            flags.append("grad" + (f" |{norm:.4g}|" if norm is not None else ""))
        if t.get("is_inference"):
            flags.append("inference")
        lines.append(f" {_MARK.get(t.get('severity'), ' ')} {t['name']}: {desc}  {', '.join(flags)}".rstrip())
        g = t.get("graph")
        if g:
            st = g["states"]
            counts = ", ".join(f"{v} {k}" for k, v in st.items() if v)
            lines.append(f"     graph: {g['nodes']} nodes{'+' if g['nodes_truncated'] else ''}, "
                         f"{g['saved_count']} saved ({counts or 'none'}), keeps {_bytes(g['activation_bytes'])} "
                         f"of activations ({_bytes(g['saved_bytes'])} saved in all)")
            for s in g["saved"][:max_saved]:
                if s["state"] == "ok" and t.get("severity") is None:
                    continue
                extra = ""
                if s["state"] == "modified" and s.get("saved_version") is not None:
                    extra = f" (saved at v{s['saved_version']}, now v{s['version']})"
                owner = f" = {s['owner']}" if s.get("owner") else ""
                lines.append(f"       {s['state']:8} {s['node']}.{s['attr']} {_shape(s['shape'])}{owner}{extra}")
        p = t.get("backward_prediction")
        if p and (not p["ok"] or g):
            verdict = "backward() would run" if p["ok"] else (
                f"backward() would raise {p['code'] or p['error']}" + (f" at {p['node']}" if p.get("node") else ""))
            lines.append(f"     {verdict}: {p['explanation']}")
    containers = snap.get("containers", [])
    if containers:
        lines += ["", f"Containers holding graphs ({len(containers)})"]
        for c in containers:
            lines.append(f" {_MARK.get(c.get('severity'), ' ')} {c['name']} ({c['kind']}): {c['tensors']} tensors, "
                         f"{c['graphs']} graphs, {c['nodes']} nodes, {_bytes(c['activation_bytes'])} of activations")
            if c.get("leak"):
                lines.append(f"     {c['explanation']}")
    if snap.get("truncated"):
        lines += ["", f"(stopped early: {', '.join(snap.get('limits_hit', []))} limit)"]
    return "\n".join(lines)
