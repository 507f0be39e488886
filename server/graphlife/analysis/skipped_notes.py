"""The checker's notes about code it left unanalyzed, in English and Chinese.

Every one says ``not analyzed`` in English (the language server finds them by those
words, :mod:`graphlife.lsp.unanalyzed`): a note is a :class:`~graphlife.findings.Message`,
whose English text is what it always was, and the editor shows it in the user's language.
"""

from __future__ import annotations

from graphlife.findings import MessageTemplate

TIME_BOX_CODE = MessageTemplate(
    "note.time-box-code", "analysis stopped at the time box; later code was not analyzed",
    zh_cn="分析达到了时间上限而停止；后面的代码没有分析")
TIME_BOX_FUNCTIONS = MessageTemplate(
    "note.time-box-functions", "analysis stopped at the time box; later functions were not analyzed",
    zh_cn="分析达到了时间上限而停止；后面的函数没有分析")
MODULE_TOO_DEEP = MessageTemplate(
    "note.module-too-deep", "module body too deeply nested; parts were not analyzed",
    zh_cn="模块代码嵌套太深；有部分代码没有分析")
FUNCTION_TOO_DEEP = MessageTemplate(
    "note.function-too-deep", "function {name} too deeply nested; not analyzed",
    zh_cn="函数 {name} 嵌套太深，没有分析")
TOO_LARGE = MessageTemplate(
    "note.too-large", "file is larger than {megabytes} MB; not analyzed",
    zh_cn="文件大于 {megabytes} MB，没有分析")
NUL_BYTES = MessageTemplate(
    "note.nul-bytes", "file contains NUL bytes (binary?); not analyzed",
    zh_cn="文件中含有 NUL 字节（二进制文件？），没有分析")
