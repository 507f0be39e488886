"""The command line in the user's language: ``--language``, or the environment as gettext reads it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
from cli_helpers import DOUBLE_BACKWARD, run

from graphlife import i18n

SARIF_SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"


def _env(**extra: str) -> dict[str, str]:
    """This environment without any locale variable, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")}
    return {**env, **extra}


@pytest.mark.parametrize("name", ["zh-cn", "zh_CN.UTF-8", "zh-Hans", "zh", "zh-Hans-CN", "ZH_cn"])
def test_the_spellings_of_simplified_chinese(name: str) -> None:
    assert i18n.normalize(name) == "zh-CN"


@pytest.mark.parametrize("name", ["en_US.UTF-8", "fr", "C", "POSIX", "zh_TW.UTF-8", "zh-Hant", "zh-HK"])
def test_other_languages_are_english(name: str) -> None:
    assert i18n.normalize(name) == "en"


def test_the_environment_is_read_as_gettext_reads_it() -> None:
    assert i18n.from_environment({"LANG": "zh_CN.UTF-8"}) == "zh-CN"
    assert i18n.from_environment({"LANG": "zh_CN.UTF-8", "LC_ALL": "en_US.UTF-8"}) == "en"  # LC_ALL first
    assert i18n.from_environment({"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}) == "zh-CN"
    assert i18n.from_environment({"LANG": "en_US.UTF-8", "LANGUAGE": "zh_CN:en"}) == "zh-CN"  # the preference list
    assert i18n.from_environment({"LANG": "C", "LANGUAGE": "zh_CN"}) == "en"  # gettext ignores LANGUAGE under C
    assert i18n.from_environment({}) == "en"


def test_language_option_writes_the_text_output_in_chinese(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(DOUBLE_BACKWARD)
    proc = run("check", "--language", "zh-CN", "train.py", cwd=tmp_path, env=_env(LANG="en_US.UTF-8"))
    assert proc.returncode == 1
    assert "train.py:6:1: GL101 error: `loss` 要反向传播经过在第 4 行（`w * w`）构建的计算图" in proc.stdout
    assert "= 说明：第 4 行：计算图在此构建（`w * w`）" in proc.stdout
    assert "发现 1 个问题（1 个错误），共检查 1 个文件。" in proc.stdout


def test_lang_chooses_chinese_and_json_keeps_the_english_message(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(DOUBLE_BACKWARD)
    english = json.loads(run("check", "--output-format", "json", "train.py", cwd=tmp_path, env=_env()).stdout)
    proc = run("check", "--output-format", "json", "train.py", cwd=tmp_path, env=_env(LANG="zh_CN.UTF-8"))
    finding = json.loads(proc.stdout)["findings"][0]
    before = english["findings"][0]
    assert "localized_message" not in before and "language" not in before  # English output is as it was
    assert {k: finding[k] for k in ("code", "name", "message")} == {k: before[k] for k in ("code", "name", "message")}
    assert finding["language"] == "zh-CN"
    assert finding["localized_message"].startswith("`loss` 要反向传播经过在第 4 行")
    related = [r["localized_message"] for r in finding["related"]]
    assert related == ["计算图在此构建（`w * w`）", "这次反向传播释放了计算图"]
    assert next((fix["title"], fix["localized_title"]) for fix in finding["fixes"]) == (
        "Call one backward on `loss + loss`", "对 `loss + loss` 只调用一次 `backward()`")


def test_the_option_beats_the_environment(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(DOUBLE_BACKWARD)
    proc = run("check", "--language", "en", "--output-format", "concise", "train.py", cwd=tmp_path,
               env=_env(LANG="zh_CN.UTF-8"))
    assert "GL101 error: `loss` backpropagates through the graph built at line 4" in proc.stdout


def test_a_cached_result_is_not_read_in_another_language(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(DOUBLE_BACKWARD)
    first = run("check", "--output-format", "concise", "train.py", cwd=tmp_path, env=_env())
    assert "backpropagates" in first.stdout
    second = run("check", "--output-format", "concise", "train.py", cwd=tmp_path, env=_env(LC_ALL="zh_CN.UTF-8"))
    assert "要反向传播" in second.stdout


def test_sarif_results_are_in_the_chosen_language(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(DOUBLE_BACKWARD)
    proc = run("check", "--language", "zh-cn", "--output-format", "sarif", "train.py", cwd=tmp_path, env=_env())
    document = json.loads(proc.stdout)
    jsonschema.validate(document, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))  # what code scanning reads
    log = document["runs"][0]
    assert log["language"] == "zh-CN"
    assert "计算图" in log["results"][0]["message"]["text"]


def test_an_unknown_language_is_a_usage_error(tmp_path: Path) -> None:
    proc = run("check", "--language", "fr", "x.py", cwd=tmp_path, env=_env())
    assert proc.returncode == 2 and "unknown language 'fr'; use one of auto, en, zh-CN" in proc.stderr


def test_rules_prints_the_chinese_documentation(tmp_path: Path) -> None:
    proc = run("rules", "GL101", "--language", "zh-CN", cwd=tmp_path, env=_env())
    assert proc.stdout.startswith("**GL101 backward-through-freed-graph**（默认严重级别：错误）")
    assert "## 它检查什么" in proc.stdout
    listing = run("rules", cwd=tmp_path, env=_env(LANG="zh_CN.UTF-8")).stdout
    assert "计算图" in next(line for line in listing.splitlines() if line.startswith("GL101"))


def test_a_notebook_names_cells_in_chinese(tmp_path: Path) -> None:
    first, second = DOUBLE_BACKWARD.rsplit("loss.backward()\n", 1)[0], "loss.backward()\n"
    cells = [{"cell_type": "code", "metadata": {}, "source": text, "outputs": [], "execution_count": None}
             for text in (first, second)]
    (tmp_path / "train.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                                       "cells": cells}))
    proc = run("check", "--output-format", "json", "--language", "zh-CN", "train.ipynb", cwd=tmp_path, env=_env())
    finding = json.loads(proc.stdout)["findings"][0]
    assert "line 4 (cell 1)" in finding["message"] and "line 5 (cell 1)" in finding["message"]
    assert "第 1 个单元格第 4 行" in finding["localized_message"], finding["localized_message"]
    assert "第 1 个单元格第 5 行" in finding["localized_message"]
