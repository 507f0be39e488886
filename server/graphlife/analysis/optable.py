"""What torch ops save for backward, read from the generated saved-tensor table.

Why: whether an in-place change, a second backward or a kept reference is a
bug depends on what each op saved (``sigmoid`` saves its result, ``x * 2``
saves nothing, ``addmm`` does not save its output).  The engine must know
that without importing torch, so ``tools/gen_saved_tensors.py`` measures it
under the installed torch and ships ``graphlife/data/saved_tensors.json``;
this module only reads that file (once, each op's entry when it is first asked for)
and answers questions about it.

Keys: ``torch.sigmoid``, ``Tensor.relu_``, ``Tensor.__mul__``, ``F.relu``,
``nn.Linear``, ``torch.linalg.norm``...  ``lookup`` also accepts the long
spellings ``torch.nn.functional.relu``, ``torch.nn.Linear``,
``torch.Tensor.add``.

Patterns: one character per entry of ``OpInfo.inputs``: ``1`` a tensor that
requires grad, ``0`` one that does not, ``s`` a Python number.  A pattern the
table does not hold gives ``None``: the engine treats the op as opaque then,
never as the basis of an error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from itertools import product
from json.decoder import scanstring  # type: ignore[attr-defined]  # C speed, not in typeshed
from typing import Any

__all__ = ["OpInfo", "SavedCase", "keys", "lookup", "normalize_key", "torch_version"]

_ALIASES = (
    ("torch.nn.functional.", "F."),
    ("nn.functional.", "F."),
    ("torch.nn.", "nn."),
    ("torch.Tensor.", "Tensor."),
)


@dataclass(frozen=True)
class SavedCase:
    """What one call saves for backward, for one requires-grad pattern."""

    pattern: str
    saved: tuple[int, ...]  # indices into OpInfo.inputs
    result: bool  # the op's own output is saved (in-place: the mutated input, new version)
    requires_grad: bool  # the result requires grad
    internal: int = 0  # other saved tensors (scalars wrapped as tensors, workspaces...)
    saved_outputs: tuple[int, ...] = ()  # which of several flattened outputs are saved
    params: bool | None = None  # modules: a parameter is saved (optimizer.step() mutates it)
    buffers: bool | None = None  # modules: a buffer (running stats) is saved
    # Kept alive but NOT version-checked by backward (torch.kron's inputs): an in-place
    # change there gives silently wrong gradients, never the version error.
    saved_unchecked: tuple[int, ...] = ()
    result_unchecked: bool = False
    params_unchecked: bool = False
    backward_fails: bool = False  # torch's own graph is already invalid (torch.vander in 2.13)

    @property
    def saves_anything(self) -> bool:
        return bool(self.saved or self.result or self.internal or self.params or self.buffers
                    or self.saved_unchecked or self.result_unchecked or self.params_unchecked)


_CASES: dict[tuple[int, str], tuple[Mapping[str, Any], SavedCase]] = {}


def _case(pattern: str, raw: Mapping[str, Any]) -> SavedCase:
    """The case for one table row, built once (the engine asks for it at every op)."""
    key = (id(raw), pattern)
    cached = _CASES.get(key)
    if cached is None or cached[0] is not raw:  # the row is kept alive, so its id stays its own
        cached = _CASES[key] = (raw, _build_case(pattern, raw))
    return cached[1]


def _build_case(pattern: str, raw: Mapping[str, Any]) -> SavedCase:
    return SavedCase(
        pattern=pattern,
        saved=tuple(raw.get("saved", ())),
        result=bool(raw.get("result", False)),
        requires_grad=bool(raw.get("requires_grad", False)),
        internal=int(raw.get("internal", 0)),
        saved_outputs=tuple(raw.get("saved_outputs", ())),
        params=raw.get("params"),
        buffers=raw.get("buffers"),
        saved_unchecked=tuple(raw.get("saved_unchecked", ())),
        result_unchecked=bool(raw.get("result_unchecked", False)),
        params_unchecked=bool(raw.get("params_unchecked", False)),
        backward_fails=bool(raw.get("backward_fails", False)),
    )


@dataclass(frozen=True)
class OpInfo:
    """One table entry: how an op treats autograd (see tools/gen_saved_tensors.py)."""

    key: str
    kind: str  # function | method | property | functional | module | factory | distribution_method
    inputs: tuple[str, ...]
    call: str
    differentiable: bool
    view: bool  # the result shares storage with input 0 (a different tensor object)
    inplace: bool  # bumps the version of input 0
    identity: bool = False  # may return input 0 itself (x.contiguous(), x.float())
    shares_version: bool | None = None  # views: in-place on the base shows on the view
    nondiff_inputs: tuple[int, ...] = ()  # integer/bool tensor inputs: always '0'
    inplace_keyword: str | None = None  # F.relu(x, inplace=True), nn.ReLU(inplace=True)
    inplace_position: int | None = None  # modules: position of `inplace` in the constructor
    converts: Mapping[str, Any] | None = None
    requires_grad_kwarg: bool | None = None  # factories: accepts requires_grad=True
    outputs: int = 1
    #: With ``outputs``: torch's schema returns ``Tensor[]`` (``chunk``, ``split``, ``unbind``), as
    #: many tensors as the call makes; without it, ``outputs`` is the op's fixed count (``std_mean``).
    sequence: bool = False
    returns_tensor: bool = True
    proxy: str | None = None  # measured through a stand-in (see the generator)
    parameters: tuple[str, ...] = ()  # distributions: the constructor's parameters, in order
    _cases: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, repr=False)
    _inplace_cases: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, repr=False)
    _variants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, repr=False)

    def _normalize(self, pattern: str) -> str | None:
        if len(pattern) != len(self.inputs):
            return None
        chars = list(pattern)
        for i in self.nondiff_inputs:
            if chars[i] in "1?":
                chars[i] = "0"  # an integer tensor never requires grad
        return "".join(chars)

    def patterns(self) -> tuple[str, ...]:
        return tuple(sorted(self._cases))

    def saved_for(self, pattern: str) -> SavedCase | None:
        """The measured case for ``pattern``, or None when the table lacks it."""
        norm = self._normalize(pattern)
        if norm is None:
            return None
        raw = self._cases.get(norm)
        return _case(norm, raw) if raw is not None else None

    def inplace_saved_for(self, pattern: str) -> SavedCase | None:
        """Like ``saved_for`` for the ``inplace=True`` form of a functional or module."""
        norm = self._normalize(pattern)
        if norm is None:
            return None
        raw = self._inplace_cases.get(norm)
        return _case(norm, raw) if raw is not None else None

    def saved_for_all(self, pattern: str) -> tuple[SavedCase, ...] | None:
        """Every case a pattern with ``?`` (requires grad: maybe) may be; None if any is missing.
        Asked at nearly every op and module call: kept per entry and pattern (the cases are frozen)."""
        memo: dict[str, tuple[SavedCase, ...] | None] | None = self.__dict__.get("_saved_for_all_memo")
        if memo is None:
            memo = {}
            object.__setattr__(self, "_saved_for_all_memo", memo)  # not a field: no part of equality
        if pattern in memo:
            return memo[pattern]
        found = memo[pattern] = self._saved_for_all(pattern)
        return found

    def _saved_for_all(self, pattern: str) -> tuple[SavedCase, ...] | None:
        norm = self._normalize(pattern)
        if norm is None:
            return None
        options = [("1", "0") if c == "?" else (c,) for c in norm]
        found = []
        for combo in product(*options):
            case = self.saved_for("".join(combo))
            if case is None:
                return None
            found.append(case)
        return tuple(found)

    def variant(self, name: str) -> OpInfo | None:
        """Another measured call form, e.g. ``lookup("torch.max").variant("dim")``."""
        raw = self._variants.get(name)
        return _info(self.key, raw) if raw is not None else None

    def variant_names(self) -> tuple[str, ...]:
        return tuple(sorted(self._variants))


def _info(key: str, raw: Mapping[str, Any]) -> OpInfo:
    inplace_arg = raw.get("inplace_arg") or {}
    return OpInfo(
        key=key,
        kind=raw["kind"],
        inputs=tuple(raw.get("inputs", ())),
        call=raw.get("call", ""),
        differentiable=bool(raw.get("differentiable", False)),
        view=bool(raw.get("view", False)),
        inplace=bool(raw.get("inplace", False)),
        identity=bool(raw.get("identity", False)),
        shares_version=raw.get("shares_version"),
        nondiff_inputs=tuple(raw.get("nondiff_inputs", ())),
        inplace_keyword=raw.get("inplace_kwarg") or inplace_arg.get("keyword"),
        inplace_position=inplace_arg.get("position"),
        converts=raw.get("converts"),
        requires_grad_kwarg=raw.get("requires_grad_kwarg"),
        outputs=int(raw.get("outputs", 1)),
        sequence=bool(raw.get("sequence", False)),
        returns_tensor=bool(raw.get("returns_tensor", True)),
        proxy=raw.get("proxy"),
        parameters=tuple(raw.get("parameters", ())),
        _cases=raw.get("cases", {}),
        _inplace_cases=raw.get("inplace_cases", {}),
        _variants=raw.get("variants", {}),
    )


TABLE_FILE = "saved_tensors.json"
_DECODER = json.JSONDecoder()


class _Table:
    """The op table, each op's entry parsed when it is first looked up.

    Why: ``graphlife check`` of a small file looks up a few dozen of the table's ~760
    ops, and parsing all 438 KB of it cost more than the analysis of such a file.  The
    file is written by ``tools/gen_saved_tensors.py`` (``render``: sorted keys, one space
    of indent per level, a test keeps the shipped file byte-identical to it), so each op
    starts on its own line with two spaces of indent inside ``"ops"``.  One pass of
    ``str.find`` over that section maps each key to where its value starts, and
    ``raw_decode`` parses just that value.  A table in any other layout is parsed whole.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._entries: dict[str, Mapping[str, Any]] = {}
        self._offsets = _op_offsets(text)
        self._whole: Mapping[str, Any] | None = None
        if self._offsets is None:  # not the generator's layout
            self._whole = json.loads(text)
            self._entries = dict(self._whole["ops"])

    def op(self, key: str) -> Mapping[str, Any] | None:
        entry = self._entries.get(key)
        if entry is None and self._offsets is not None:
            offset = self._offsets.get(key)
            if offset is not None:
                entry = self._entries[key] = _DECODER.raw_decode(self._text, offset)[0]
        return entry

    def keys(self) -> tuple[str, ...]:
        return tuple(sorted(self._offsets if self._offsets is not None else self._entries))

    def top_level(self, name: str) -> Any:
        """A top-level field other than ``ops`` (``torch_version``)."""
        if self._whole is None:
            self._whole = json.loads(self._text)
        return self._whole[name]


def _op_offsets(text: str) -> dict[str, int] | None:
    """Key -> offset of its value, for each op of a table in the generator's layout; else None."""
    head = '\n "ops": {\n'
    start = text.find(head)
    end = text.find("\n }", start + 1)  # the only line at one space of indent that closes a value
    if start < 0 or end < 0:
        return None
    offsets: dict[str, int] = {}
    marker = '\n  "'  # a key line of "ops" (deeper lines start with more spaces)
    at = text.find(marker, start + len(head) - 1, end)
    while at >= 0:
        key, after = scanstring(text, at + len(marker))
        if text[after:after + 3] != ": {":
            return None
        offsets[key] = after + 2
        at = text.find(marker, after, end)
    return offsets or None


@lru_cache(maxsize=1)
def _table() -> _Table:
    # A plain file read: importlib.resources (and the zipfile module it pulls in) cost
    # more start-up time than reading the file.  It stays the way for a zipped install.
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", TABLE_FILE)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        from importlib import resources  # noqa: PLC0415

        text = resources.files("graphlife").joinpath(f"data/{TABLE_FILE}").read_text("utf-8")
    return _Table(text)


def normalize_key(name: str) -> str:
    """``torch.nn.functional.relu`` -> ``F.relu``; ``torch.nn.Linear`` -> ``nn.Linear``."""
    for long, short in _ALIASES:
        if name.startswith(long):
            return short + name[len(long):]
    return name


@cache
def lookup(key: str) -> OpInfo | None:
    """The entry for an op, or None when the table does not know it (treat as opaque)."""
    raw = _table().op(normalize_key(key))
    return _info(normalize_key(key), raw) if raw is not None else None


def keys() -> tuple[str, ...]:
    return _table().keys()


def torch_version() -> str:
    """The torch version the table was measured with."""
    return str(_table().top_level("torch_version"))
