"""The saved-tensor table read one op at a time gives what the whole JSON says.

Why: ``graphlife check`` of a small file asks the table about a few dozen of its ~760
ops, so the loader parses only those (:class:`graphlife.analysis.optable._Table`),
finding them by the layout the generator writes. If that reading went wrong, an op
would silently get another op's facts, or none (then the engine treats it as opaque
and findings disappear): every entry is compared here with a plain ``json.load``.
"""

from __future__ import annotations

import json
from pathlib import Path

from graphlife.analysis import optable

TABLE = Path(optable.__file__).resolve().parents[1] / "data" / optable.TABLE_FILE


def whole_table() -> dict:
    return json.loads(TABLE.read_text(encoding="utf-8"))


def test_every_op_read_alone_is_the_op_of_the_whole_table():
    whole = whole_table()
    table = optable._Table(TABLE.read_text(encoding="utf-8"))
    assert table.keys() == tuple(sorted(whole["ops"]))
    for key, entry in whole["ops"].items():
        assert table.op(key) == entry, key
    assert table.op("torch.not_an_op") is None
    assert optable.keys() == tuple(sorted(whole["ops"]))
    assert optable.torch_version() == whole["torch_version"]


def test_a_lookup_parses_only_its_own_entry():
    table = optable._Table(TABLE.read_text(encoding="utf-8"))
    assert table.op("torch.sigmoid")["kind"] == "function"
    assert list(table._entries) == ["torch.sigmoid"]


def test_a_table_in_another_layout_reads_the_same():
    whole = whole_table()
    compact = optable._Table(json.dumps(whole, separators=(",", ":")))
    assert compact.keys() == tuple(sorted(whole["ops"]))
    assert compact.op("Tensor.relu_") == whole["ops"]["Tensor.relu_"]
    assert compact.top_level("torch_version") == whole["torch_version"]
