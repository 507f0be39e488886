"""Real debugpy sessions: stop before the faulty backward of each seed case, evaluate the
probe the way the VS Code client does, check what it says, then let the program run
into the error torch really raises and compare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dap_client import DapSession, last_exception_line, marked_line, probe_expression

SCRIPTS = Path(__file__).resolve().parent / "scripts"

CASES = {
    # script: (tensor backward is called on, code, reason, blame)
    "inplace_after_sigmoid.py": ("loss", "GL102", "modified", "gate"),
    "second_backward.py": ("loss_b", "GL101", "shared", "features"),
    "lstm_carried_state.py": ("loss", "GL101", "carried", "hidden[0]"),
    "loss_list_keeps_graphs.py": ("epoch_loss", "GL101", "stored", "history['train']"),
}


def _first_sentence(message: str) -> str:
    return message.split(" Hint:")[0].split(". Saved intermediate")[0]


def _user_frame(session: DapSession, thread_id: int, script: Path) -> dict:
    frames = session.request("stackTrace", threadId=thread_id, startFrame=0, levels=50)["stackFrames"]
    return next(f for f in frames if f.get("source", {}).get("path") == str(script))


@pytest.mark.parametrize("script_name", sorted(CASES))
def test_probe_in_stopped_frame_predicts_what_torch_raises(script_name):
    tensor, code, reason, blame = CASES[script_name]
    script = SCRIPTS / script_name
    session = DapSession(script, timeout=180)
    try:
        session.start({script: [marked_line(script)]}, exceptions=["uncaught"])
        stopped = session.wait_event("stopped")["body"]
        assert stopped["reason"] == "breakpoint"
        thread = stopped["threadId"]
        frame = session.top_frame(thread)
        assert frame["line"] == marked_line(script)
        names_before = session.evaluate("sorted(globals())", frame["id"])
        modules_before = session.evaluate("len(__import__('sys').modules)", frame["id"])
        snap = json.loads(session.evaluate(probe_expression(), frame["id"]))
        assert session.evaluate("sorted(globals())", frame["id"]) == names_before
        assert session.evaluate("len(__import__('sys').modules)", frame["id"]) == modules_before

        assert snap["schema"] == "graphlife.probe/1" and not snap["truncated"]
        entry = next(t for t in snap["tensors"] if t["name"] == tensor)
        pred = entry["backward_prediction"]
        assert (pred["ok"], pred["code"], pred["reason"], pred["blame"]) == (False, code, reason, blame)
        assert entry["severity"] == "error"
        assert snap["tensors"][0]["severity"] == "error"  # problems lead the list
        if code == "GL102":
            modified = [s for s in entry["graph"]["saved"] if s["state"] == "modified"]
            assert modified and modified[0]["owner"] == blame and modified[0]["node"] == "SigmoidBackward0"
        if script_name == "loss_list_keeps_graphs.py":
            containers = {c["name"]: c for c in snap["containers"]}
            kept = containers["history['eval']"]
            assert kept["leak"] and kept["graphs"] == 6 and kept["activation_bytes"] > 0
            assert kept["severity"] == "warning"
            consumed = containers["history['train']"]
            assert consumed["leak"] and consumed["activation_bytes"] == 0
            assert consumed["severity"] == "information"

        # Let it run into the error: it stops on the uncaught exception first.
        session.request("continue", threadId=thread)
        stopped = session.wait_event("stopped")["body"]
        assert stopped["reason"] == "exception"
        info = session.request("exceptionInfo", threadId=stopped["threadId"])
        user = _user_frame(session, stopped["threadId"], script)
        after = json.loads(session.evaluate(probe_expression(exception=info["description"]), user["id"]))
        assert after["exception"]["code"] == code
        if code == "GL102":
            assert after["exception"]["blame"] == blame
        out, err = session.finish(stopped["threadId"])
    finally:
        session.close()
    real = last_exception_line(err)
    assert real is not None and real.startswith("RuntimeError: "), err[-2000:]
    assert _first_sentence(real[len("RuntimeError: "):]) == _first_sentence(pred["message"])
    assert "finished" not in out
