"""The editor honours the same silencing comments as the command line (`# noqa: GL101`,
a file-level `# graphlife: noqa`): both go through the checker's one pipeline."""

from __future__ import annotations

import pytest
from lsp_helpers import open_document, wait_for_publish
from pytest_lsp import LanguageClient
from sources import DOUBLE_BACKWARD, DOUBLE_BACKWARD_LINE

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _with_comment_on_line(source: str, line: int, comment: str) -> str:
    lines = source.split("\n")
    lines[line] += f"  {comment}"
    return "\n".join(lines)


async def test_noqa_and_file_level_comments_silence_diagnostics(shared_client: LanguageClient, workdir):
    cases = {
        "noqa_code.py": (_with_comment_on_line(DOUBLE_BACKWARD, DOUBLE_BACKWARD_LINE, "# noqa: GL101"), []),
        "noqa_other.py": (_with_comment_on_line(DOUBLE_BACKWARD, DOUBLE_BACKWARD_LINE, "# noqa: E501"), ["GL101"]),
        "whole_file.py": ("# graphlife: noqa\n" + DOUBLE_BACKWARD, []),
    }
    for name, (text, expected) in cases.items():
        uri = open_document(shared_client, workdir / name, text)
        published = await wait_for_publish(shared_client, uri, version=1)
        assert [d.code for d in published.diagnostics] == expected, name
