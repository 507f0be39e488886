"""Where a diagnostic's rule documentation is: a command of the editor, a web page, or the CLI.

The rule pages ship with graphlife, so the editor can show them without a network
(VS Code: the ``graphlife.showRuleDocumentation`` command, which asks the server
for the page with ``graphlife/ruleDocumentation``). A web address is used only when
the installed package's metadata names one (``[project.urls] Documentation``): a
link to a site that does not exist is worse than none. A client that names no
command and a package without an address get the CLI's command in plain text.
"""

from __future__ import annotations

import functools
import json
from importlib import metadata
from urllib.parse import quote

from graphlife.analysis.rule_api import Rule
from graphlife.findings import MessageTemplate

#: The custom request for a rule's page: params ``{"code": "GL102"}``, answer
#: ``{"code", "title", "markdown"}`` or ``None`` for an unknown code.
RULE_DOCUMENTATION_REQUEST = "graphlife/ruleDocumentation"
#: ``initializationOptions`` key with which a client names its command that shows a rule page
#: (called with the code as its one argument).
COMMAND_OPTION = "ruleDocumentationCommand"
#: The names a documentation address may have in ``Project-URL`` (lower case).
_DOC_URL_NAMES = ("documentation", "docs", "rules")


@functools.lru_cache(maxsize=1)
def documentation_url() -> str | None:
    """The documentation address of the installed graphlife, or ``None`` when it names none."""
    try:
        entries = metadata.metadata("graphlife").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return None
    for entry in entries:
        name, _, url = entry.partition(",")
        if name.strip().lower() in _DOC_URL_NAMES and url.strip().startswith(("https://", "http://")):
            return url.strip()
    return None


def web_url(rule: Rule) -> str | None:
    """The rule's section on the project's documentation site, when there is one."""
    base = documentation_url()
    return f"{base.rstrip('/')}/rules.md#{rule.docs_anchor}" if base else None


def command_uri(command: str, code: str) -> str:
    """A ``command:`` link running ``command`` with the rule code (VS Code's markdown links)."""
    return f"command:{command}?{quote(json.dumps([code]))}"


DOCUMENTATION = MessageTemplate("hover.documentation", "[{code} documentation]({target})",
                                zh_cn="[{code} 规则文档]({target})")
FULL_DOCUMENTATION = MessageTemplate("hover.full-documentation", "Full documentation: `graphlife rules {code}`",
                                     zh_cn="完整文档：`graphlife rules {code}`")
DEFAULT_SEVERITY = MessageTemplate("rule-page.default-severity", "Default severity: **{severity}**.",
                                   zh_cn="默认严重级别：**{severity}**。")


def documentation_link(rule: Rule, command: str | None, language: str = "en") -> str:
    """The hover's last line: how to read the rule's whole documentation."""
    if command:
        return DOCUMENTATION(code=rule.code, target=command_uri(command, rule.code)).in_language(language)
    url = web_url(rule)
    if url:
        return DOCUMENTATION(code=rule.code, target=url).in_language(language)
    return FULL_DOCUMENTATION(code=rule.code).in_language(language)


def rule_page(code: str, language: str = "en") -> dict[str, str] | None:
    """The answer to :data:`RULE_DOCUMENTATION_REQUEST`: the rule's user documentation, in
    ``language`` when the rule is documented in it."""
    from graphlife.rules import rule_by_code  # noqa: PLC0415

    rule = rule_by_code(code.strip().upper()) if isinstance(code, str) else None
    if rule is None:
        return None
    doc = rule.doc.in_language(language)
    severity = DEFAULT_SEVERITY(severity=rule.severity.value).in_language(language)
    return {"code": rule.code, "title": f"{rule.code} {rule.name}", "markdown": f"# {rule.code} {rule.name}\n\n"
            f"{severity}\n\n{doc.user_text}\n", "language": doc.language}
