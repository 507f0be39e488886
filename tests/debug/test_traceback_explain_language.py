"""`graphlife explain --language zh-CN`: the explanation in Chinese, torch's message as torch printed it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def test_explain_in_chinese_keeps_torchs_message(tmp_path: Path) -> None:
    script = SCRIPTS / "inplace_after_sigmoid.py"
    traceback = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300).stderr
    (tmp_path / "tb.txt").write_text(traceback)
    command = [sys.executable, "-m", "graphlife", "explain", "--language", "zh-CN", str(tmp_path / "tb.txt")]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("RuntimeError: one of the variables needed for gradient computation")  # torch's own
    assert "**GL102 inplace-modifies-saved-tensor**（默认严重级别：错误）" in proc.stdout
    stop = next(n for n, text in enumerate(script.read_text().splitlines(), 1) if "# stop here" in text)
    assert f"{script}:{stop}，<module> 中（出错的行）" in proc.stdout
    assert "    这一行没有静态检查结果" in proc.stdout
    assert "GL102 在别处：本文件第 15 行：`gate.relu_()` 对它做了原地修改" in proc.stdout
