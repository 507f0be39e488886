"""A benchmark run rewrites its own section of RESULTS.md and nothing a person wrote.

The sub-sections below a benchmark's tables (an experiment that did not pay, one
session's measurements) cannot be measured again by the script; a run that dropped
them would lose them from the record.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from results_file import write_section

BEFORE = """# Benchmark results

## Language server

Old table.

### Hand-written: an experiment

Kept text.

### Generated sub-section

Old generated text.

## Language server: hover

Hover rows.
"""


def test_a_run_replaces_its_tables_and_keeps_what_was_written_by_hand(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text(BEFORE)
    write_section("## Language server", "## Language server\n\nNew table.\n\n### Generated sub-section\n\nNew.\n",
                  results)
    text = results.read_text()
    assert "Old table." not in text and "New table." in text
    assert "Old generated text." not in text and text.count("### Generated sub-section") == 1
    assert "### Hand-written: an experiment\n\nKept text." in text
    assert text.index("New table.") < text.index("Kept text.") < text.index("## Language server: hover")
    assert "Hover rows." in text  # a section whose heading starts the same is another section


def test_a_section_not_yet_written_is_appended(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text(BEFORE)
    write_section("## Debug probe", "## Debug probe\n\nProbe table.\n", results)
    text = results.read_text()
    assert text.startswith(BEFORE.rstrip("\n")) and text.endswith("## Debug probe\n\nProbe table.\n")


def test_the_last_section_is_replaced_to_the_end(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text(BEFORE)
    write_section("## Language server: hover", "## Language server: hover\n\nNew hover rows.\n", results)
    text = results.read_text()
    assert "Hover rows." not in text.replace("New hover rows.", "")
    assert "Kept text." in text and text.endswith("New hover rows.\n")
