"""The snapshot the client's node tests read must have the keys the probe emits today."""

from __future__ import annotations

import json

from record_client_fixtures import FIXTURES, record


def shape_of(value):
    """Keys (recursively) and JSON kinds, not values: what the client's types depend on."""
    if isinstance(value, dict):
        return {k: shape_of(v) for k, v in value.items()}
    if isinstance(value, list):
        shapes = [shape_of(v) for v in value]
        merged = {}
        for s in shapes:
            if isinstance(s, dict):
                merged.update(s)
        return [merged] if merged else ["list"]
    return "value"


def test_recorded_fixtures_match_the_probe():
    fresh = record()
    for name, data in fresh.items():
        recorded = json.loads((FIXTURES / name).read_text())
        assert shape_of(recorded) == shape_of(json.loads(json.dumps(data, default=str))), (
            f"{name} is stale: run python tests/debug/record_client_fixtures.py"
        )
