"""The pygls server: registers the LSP features and hands each to its module.

This file only wires: documents and notebooks in, :mod:`.linting` for
diagnostics, :mod:`.hover`, :mod:`.code_actions`, :mod:`.settings`. Every
handler is guarded: an exception is logged to the client's output channel with
its traceback and the request gets an empty answer, so a bug in one feature
never takes the server (or the user's other diagnostics) down.

``start()`` is what ``graphlife lsp [--tcp HOST:PORT]`` calls.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from graphlife import __version__, i18n
from graphlife.lsp import code_actions as actions_mod
from graphlife.lsp import fix_all
from graphlife.lsp import hover as hover_mod
from graphlife.lsp.diagnostics import locate
from graphlife.lsp.documents import CELL_LANGUAGE, NOTEBOOK_TYPE, current_stamp, fs_path, key_for, open_keys
from graphlife.lsp.extensions import INITIALIZE_HOOKS
from graphlife.lsp.hover_stories import HoverStories
from graphlife.lsp.linting import Linter
from graphlife.lsp.log import log, log_exception
from graphlife.lsp.memory import release_memory
from graphlife.lsp.positions import client_to_char, span_to_range
from graphlife.lsp.protocol import GraphlifeProtocol, serve_stdio
from graphlife.lsp.rule_actions import TURN_OFF_OPTION, file_ignore_edit
from graphlife.lsp.rule_links import COMMAND_OPTION, RULE_DOCUMENTATION_REQUEST, rule_page
from graphlife.lsp.settings import Settings, configuration_params, from_initialization_options
from graphlife.lsp.workspace_scope import WorkspaceScope

if TYPE_CHECKING:
    from pygls.server import ServerErrors

    from graphlife.analysis.modules import ModuleProvider
    from graphlife.lsp.linting import Analysis
    from graphlife.lsp.notebooks import JoinedCell

#: An LSP request or notification handler: takes the params, returns the answer.
Handler = Callable[[Any], Any]


class GraphlifeServer(LanguageServer):
    """The language server plus graphlife's state: settings and the linter."""

    def __init__(self) -> None:
        super().__init__(
            "graphlife",
            __version__,
            protocol_cls=GraphlifeProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[
                    types.NotebookDocumentFilterWithCells(
                        notebook=NOTEBOOK_TYPE, cells=[types.NotebookCellLanguage(language=CELL_LANGUAGE)]
                    )
                ],
                save=True,
            ),
        )
        self.settings = Settings(lambda message: log(self, message, types.MessageType.Warning))
        self.linter = Linter(self, self.settings)
        #: The client's command that opens a rule's page (``initializationOptions``), for hover links.
        self.rule_command: str | None = None
        #: The client's command that adds a code to ``graphlife.ignore``, for the light bulb.
        self.turn_off_command: str | None = None

    def report_server_error(self, error: Exception, source: ServerErrors) -> None:
        """pygls' own errors (bad JSON, unknown documents) go to the log, not to a pop-up."""
        log(self, f"protocol error ({source.__name__ if hasattr(source, '__name__') else source}): {error!r}",
            types.MessageType.Error)


#: Seconds after `shutdown` after which the process ends whatever still runs.
EXIT_GRACE_SECONDS = 10.0


def _exit_after(seconds: float) -> None:
    """End the process ``seconds`` from now, unless it has ended by then (a daemon thread):
    the client asked it to stop, and an editor must never be left with a server that hangs."""
    time.sleep(seconds)
    logging.shutdown()
    os._exit(0)


def _guarded(server: GraphlifeServer, what: str, default: Any = None) -> Callable[[Handler], Handler]:
    """Catch and log any exception of a handler; answer ``default`` instead."""

    def decorate(function: Handler) -> Handler:
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def run_async(params: Any) -> Any:
                try:
                    return await function(params)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001
                    log_exception(server, what, exc)
                    return default

            return run_async

        @functools.wraps(function)
        def run(params: Any) -> Any:
            try:
                return function(params)
            except Exception as exc:  # noqa: BLE001
                log_exception(server, what, exc)
                return default

        return run

    return decorate


def _supports(server: GraphlifeServer, *path: str) -> bool:
    """Whether a client capability (given as an attribute path) is present and truthy."""
    node: object = server.client_capabilities
    for name in path:
        node = getattr(node, name, None)
        if node is None:
            return False
    return bool(node)


def create_server() -> GraphlifeServer:
    """A fresh server with every feature registered (tests and ``start`` both use it)."""
    server = GraphlifeServer()
    linter = server.linter
    settings = server.settings
    scope = WorkspaceScope(linter, lambda path: settings.option(path, "reportingScope") == "workspace")
    hover_stories = HoverStories(server, linter.runner)
    fixer = FixerLoader(linter.executor)

    def _story_modules(analysis: Analysis) -> ModuleProvider | None:
        """The project's modules the story follows imports into (a notebook's cells import none of them)."""
        return None if analysis.snapshot.is_notebook else linter.project_modules(analysis)

    linter.on_published.append(lambda analysis: hover_stories.warm(analysis, lambda: _story_modules(analysis)))
    linter.on_superseded.append(hover_stories.cancel)

    def refresh_scope() -> None:
        """reportingScope workspace: check the closed files of the workspace (:mod:`.workspace_scope`)."""
        folders = [path for path in (fs_path(f.uri) for f in server.workspace.folders.values()) if path]
        opened = [path for path in (fs_path(uri) for uri in server.workspace.text_documents) if path]
        scope.refresh(folders, opened)

    def relint_all() -> None:
        for key in open_keys(server.workspace):
            linter.request(key, delay=0)

    def edited_module(uri: str, key: str, typed: bool = False) -> None:
        """The document ``uri`` (analysis ``key``) changed (``typed``), was saved, opened or
        closed: the other open documents whose last analysis read its file are analyzed again."""
        path = fs_path(uri) if uri.endswith((".py", ".pyi")) else None
        if path is not None:
            linter.request_dependents([path], but=key, typed=typed)

    async def pull_configuration() -> None:
        if not _supports(server, "workspace", "configuration"):
            return
        folder_uris = [folder.uri for folder in server.workspace.folders.values()]
        try:
            answer = await asyncio.wait_for(
                server.workspace_configuration_async(configuration_params(folder_uris)), 10
            )
        except Exception as exc:  # noqa: BLE001 - a client that fails the request keeps its old settings
            log(server, f"workspace/configuration failed ({exc!r}); keeping the previous settings",
                types.MessageType.Warning)
            return
        answer = list(answer or [])
        settings.update(answer[0] if answer else None, "workspace/configuration (graphlife.*)", "client")
        folders = {}
        for uri, raw in zip(folder_uris, answer[1:]):
            path = fs_path(uri)
            if path:
                folders[path] = (raw, f"workspace/configuration (graphlife.*) for folder {path}")
        settings.update_folders(folders)

    # -- lifecycle -----------------------------------------------------------------------------

    @server.feature(types.INITIALIZE)
    @_guarded(server, "initialize")
    def initialize(params: types.InitializeParams) -> None:
        settings.client_locale = params.locale  # VS Code's display language; `graphlife.language` may override it
        settings.update(from_initialization_options(params.initialization_options), "initializationOptions", "init")
        server.rule_command = client_command(params.initialization_options, COMMAND_OPTION)
        server.turn_off_command = client_command(params.initialization_options, TURN_OFF_OPTION)
        for hook in INITIALIZE_HOOKS:  # features of their own modules (pull diagnostics)
            hook(server, params)

    @server.feature(types.INITIALIZED)
    @_guarded(server, "initialized")
    async def initialized(params: types.InitializedParams) -> None:
        warm = linter.run_in_worker(_warm_up)  # import the engine and rules before the first file
        await pull_configuration()
        if _supports(server, "workspace", "did_change_watched_files", "dynamic_registration"):
            try:
                await server.client_register_capability_async(
                    types.RegistrationParams(
                        registrations=[
                            types.Registration(
                                id="graphlife-pyproject",
                                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                register_options=types.DidChangeWatchedFilesRegistrationOptions(
                                    # pyproject.toml: the settings; *.py: the modules a check reads
                                    # (a branch switch, a formatter, another editor change them on disk);
                                    # .gitignore: what the workspace scope leaves out.
                                    watchers=[types.FileSystemWatcher(glob_pattern="**/pyproject.toml"),
                                              types.FileSystemWatcher(glob_pattern="**/*.py"),
                                              types.FileSystemWatcher(glob_pattern="**/.gitignore")]
                                ),
                            )
                        ]
                    )
                )
            except Exception as exc:  # noqa: BLE001
                log(server, f"could not watch pyproject.toml and .py files ({exc!r})", types.MessageType.Log)
        try:
            await warm
        except Exception as exc:  # noqa: BLE001 - a broken engine must not stop settings and documents
            log_exception(server, "loading the checker", exc)
        relint_all()
        refresh_scope()
        log(server, f"graphlife {__version__} language server ready", types.MessageType.Info)

    @server.feature(types.SHUTDOWN)
    @_guarded(server, "shutdown")
    async def shutdown(params: None) -> None:
        # After `shutdown` only `exit` may come: whatever still runs then must not keep the
        # process alive (a task that outlives its cancellation would, for ever).
        threading.Thread(target=_exit_after, args=(EXIT_GRACE_SECONDS,), name="graphlife-exit", daemon=True).start()
        await linter.close()  # big documents' checker processes end now, not after their analysis

    # -- text documents ----------------------------------------------------------------------------

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @_guarded(server, "didOpen")
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        document = params.text_document
        if document.language_id not in ("python", "") and not document.uri.endswith((".py", ".pyi")):
            return  # e.g. a markdown file: not Python, nothing to check
        key = key_for(server.workspace, document.uri)
        linter.request(key, delay=0)
        edited_module(document.uri, key)  # its buffer (restored unsaved edits) now wins over the disk
        path = fs_path(document.uri)
        if path is not None:
            scope.opened(path)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @_guarded(server, "didChange")
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        key = key_for(server.workspace, params.text_document.uri)
        snapshot_path = _path_of(server, key)
        if settings.config_for(snapshot_path).lint_on_change:
            linter.request(key)
        edited_module(params.text_document.uri, key, typed=True)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    @_guarded(server, "didSave")
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        key = key_for(server.workspace, params.text_document.uri)
        linter.request(key, delay=0, same_text_may_finish=True)
        edited_module(params.text_document.uri, key)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @_guarded(server, "didClose")
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        if key_for(server.workspace, uri) == uri:
            linter.forget(uri, [uri])
            edited_module(uri, uri)  # its importers read the file on disk now, not the buffer
            path = fs_path(uri) if uri.endswith(".py") else None
            if path is not None:
                scope.closed_or_changed(path)

    # -- notebooks -------------------------------------------------------------------------------------

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    @_guarded(server, "notebookDocument/didOpen")
    def notebook_open(params: types.DidOpenNotebookDocumentParams) -> None:
        linter.request(params.notebook_document.uri, delay=0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    @_guarded(server, "notebookDocument/didChange")
    def notebook_change(params: types.DidChangeNotebookDocumentParams) -> None:
        key = params.notebook_document.uri
        structural = params.change.cells is not None and params.change.cells.structure is not None
        if structural or settings.config_for(_path_of(server, key)).lint_on_change:
            linter.request(key)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    @_guarded(server, "notebookDocument/didSave")
    def notebook_save(params: types.DidSaveNotebookDocumentParams) -> None:
        linter.request(params.notebook_document.uri, delay=0, same_text_may_finish=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    @_guarded(server, "notebookDocument/didClose")
    def notebook_close(params: types.DidCloseNotebookDocumentParams) -> None:
        linter.forget(params.notebook_document.uri, [cell.uri for cell in params.cell_text_documents])

    # -- settings ---------------------------------------------------------------------------------------

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @_guarded(server, "didChangeConfiguration")
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        if _supports(server, "workspace", "configuration"):
            await pull_configuration()
        elif isinstance(params.settings, dict) and "graphlife" in params.settings:
            settings.update(params.settings["graphlife"], "didChangeConfiguration (graphlife.*)", "client")
        relint_all()
        refresh_scope()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    @_guarded(server, "didChangeWorkspaceFolders")
    async def workspace_folders_changed(params: types.DidChangeWorkspaceFoldersParams) -> None:
        await pull_configuration()  # pygls already updated the folder list; settings are per folder
        relint_all()
        refresh_scope()

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @_guarded(server, "didChangeWatchedFiles")
    def watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        modules = [change for change in params.changes if change.uri.endswith(".py")]
        for change in modules:
            changed = fs_path(change.uri)
            if changed is not None:
                scope.closed_or_changed(changed)  # a closed file of the workspace: its own check
        if any(change.uri.endswith(("pyproject.toml", "/.gitignore")) for change in params.changes):
            refresh_scope()  # what the workspace scope leaves out may have changed
        created = any(change.type == types.FileChangeType.Created for change in modules)
        if created:
            # A new file may be what an import names now (it resolved to nothing, or to a file
            # in a later root): every open document is analyzed again, from scratch.
            linter.files_appeared()
        if created or any(change.uri.endswith("pyproject.toml") for change in params.changes):
            relint_all()
            return
        paths = [path for path in (fs_path(change.uri) for change in modules) if path is not None]
        if paths:
            linter.request_dependents(paths)

    # -- hover --------------------------------------------------------------------------------------------

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @_guarded(server, "hover")
    async def hover(params: types.HoverParams) -> types.Hover | None:
        located = await _locate(server, params.text_document.uri, params.position)
        if located is None:
            return None
        analysis, segment, line, column = located
        if not analysis.config.enable:
            return None  # graphlife.enable: false switches hover off too, not only the squiggles
        # Bugs other open documents' analyses found in this file (it is a module they import).
        contributed = [] if analysis.snapshot.is_notebook else linter.contributed(segment.uri, analysis.snapshot.path)
        # Told once per version, usually before the hover (graphlife.lsp.hover_stories).
        stories = await hover_stories.ready(analysis, lambda: _story_modules(analysis))
        markdown = await linter.run_in_worker(hover_mod.hover_markdown, analysis, line, column, contributed, stories,
                                              server.rule_command, settings.language)
        if not markdown:
            return None
        rng = None
        codec = server.workspace.position_codec
        under = hover_mod.findings_under(analysis, line, column, contributed)
        if under:
            finding, by = under[0]
            if by is analysis:
                where = locate(analysis.snapshot, finding.span, codec)
                if where is not None and where[0] == segment.uri:
                    rng = where[1]
            else:
                rng = span_to_range(replace(finding.span, path=None), segment.lines, codec)
        return hover_mod.as_hover(markdown, rng)

    # -- code actions ---------------------------------------------------------------------------------------

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, actions_mod.FIX_ALL_KIND, fix_all.NOTEBOOK_FIX_ALL_KIND],
            resolve_provider=True,
        ),
    )
    @_guarded(server, "codeAction", default=[])
    async def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
        start = await _locate(server, params.text_document.uri, params.range.start)
        if start is None:
            return []
        analysis, segment, line, column = start
        if not analysis.config.enable:
            return []
        end_line, end_column = client_to_char(segment.lines, params.range.end, server.workspace.position_codec)
        start_pos, end_pos = (line, column), (end_line + segment.line_offset, end_column)
        fixes = {}
        if actions_mod.kind_wanted(params.context.only, types.CodeActionKind.QuickFix):
            for finding in actions_mod.findings_in(analysis, start_pos, end_pos):
                try:
                    if finding.fixes:
                        await fixer.ready()
                    fixes[(finding.code, finding.span)] = (
                        await linter.run_in_worker(actions_mod.fixes_for, analysis, finding,
                                                   *linter.fix_tools(analysis)) or []
                    )
                except Exception as exc:  # noqa: BLE001 - a broken fix must not hide the others
                    log_exception(server, f"computing the fixes of {finding.code}", exc)
        listed = actions_mod.list_actions(
            analysis, segment.uri, start_pos, end_pos, params.context.only, server.workspace.position_codec, fixes,
            server.turn_off_command, settings.language,
        )
        if _supports(server, "text_document", "code_action", "resolve_support"):
            return listed
        return [await resolve_action(action) for action in listed]  # no lazy resolve: edits now

    @server.feature(types.CODE_ACTION_RESOLVE)
    @_guarded(server, "codeAction/resolve")
    async def resolve_action(action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        key = data.get("key")
        if not key:
            return action
        analysis = await linter.fresh(key)
        if analysis is None:
            log(server, actions_mod.DOCUMENT_CLOSED(uri=str(data.get("uri"))).in_language(settings.language),
                types.MessageType.Warning)
            return action
        codec = server.workspace.position_codec
        document_changes = _supports(server, "workspace", "workspace_edit", "document_changes")
        kind = data.get("action")
        if kind == "fixAll":
            await fixer.ready()
            _, fix_source = actions_mod.fixes_api()
            if fix_source is None:
                return action
            changed = await linter.run_in_worker(fix_all.fix_all_edits, analysis, str(data.get("scope")),
                                                 str(data.get("uri")), codec, *linter.fix_tools(analysis))
            if changed:  # None: the request was cancelled; empty: nothing to fix
                action.edit = actions_mod.workspace_edit(analysis, changed, document_changes)
            return action
        if kind == "ignoreFile":
            edit = file_ignore_edit(analysis.snapshot, str(data.get("code")))
            per_uri = actions_mod.edits_for(analysis, [edit], codec) if edit is not None else None
            if per_uri:
                action.edit = actions_mod.workspace_edit(analysis, per_uri, document_changes)
            return action
        finding = actions_mod.find_finding(analysis, data)
        if finding is None:
            gone = actions_mod.NO_LONGER_REPORTED(uri=str(data.get("uri")), code=str(data.get("code")))
            log(server, gone.in_language(settings.language), types.MessageType.Info)
            return action
        if kind == "ignore":
            edit = actions_mod.ignore_edit(analysis, finding)
            edits = [edit] if edit is not None else []
        else:
            await fixer.ready()
            fixes = await linter.run_in_worker(actions_mod.fixes_for, analysis, finding,
                                               *linter.fix_tools(analysis)) or []
            chosen = next((fix for fix in fixes if fix.title == data.get("title")), None)
            edits = list(chosen.edits) if chosen is not None else []
            if chosen is None:
                refused = actions_mod.CANNOT_APPLY(code=finding.code, title=str(data.get("title")))
                log(server, refused.in_language(settings.language), types.MessageType.Info)
        per_uri = actions_mod.edits_for(analysis, edits, codec) if edits else None
        if per_uri:
            action.edit = actions_mod.workspace_edit(analysis, per_uri, document_changes)
        return action

    @server.feature(RULE_DOCUMENTATION_REQUEST)
    @_guarded(server, RULE_DOCUMENTATION_REQUEST)
    def rule_documentation(params: Any) -> dict[str, str] | None:
        code = params.get("code") if isinstance(params, dict) else getattr(params, "code", None)
        asked = params.get("language") if isinstance(params, dict) else None  # a client may name its own
        language = i18n.normalize(asked) if isinstance(asked, str) else None
        return rule_page(code, language or settings.language) if isinstance(code, str) else None

    return server


def client_command(options: Any, key: str) -> str | None:
    """A command of the client named in ``initializationOptions`` (:mod:`.rule_links`, :mod:`.rule_actions`)."""
    command = options.get(key) if isinstance(options, dict) else None
    return command if isinstance(command, str) and command else None


def _warm_up() -> None:
    """Import the checker and every rule on the worker thread, so the first file is not slow."""
    from graphlife.checker import check_source  # noqa: PLC0415

    check_source("x = 1\n", None)


def _path_of(server: GraphlifeServer, key: str) -> str | None:
    """The file path whose pyproject.toml applies to ``key`` (a document or notebook URI)."""
    return fs_path(key)


async def _locate(
    server: GraphlifeServer, uri: str, position: types.Position
) -> tuple[Analysis, JoinedCell, int, int] | None:
    """(analysis, document segment, 1-based line in the analyzed source, 1-based column) or ``None``."""
    key = key_for(server.workspace, uri)
    if current_stamp(server.workspace, key) is None:
        return None
    analysis = await server.linter.fresh(key)
    if analysis is None:
        return None
    segment = analysis.snapshot.segment_for_uri(uri)
    if segment is None:
        return None
    line, column = client_to_char(segment.lines, position, server.workspace.position_codec)
    return analysis, segment, line + segment.line_offset, column


def import_everything() -> None:
    """Import the engine, the rules and their table before serving.

    Analyses run on worker threads that a newer version of the document cancels by raising
    an exception inside them (:mod:`graphlife.lsp.cancel`). An exception that lands while a
    thread is importing a module can leave Python's per-module import lock broken, and the
    next analysis then waits on it forever (seen in the e2e test: the first analysis of a
    file was cancelled during its first import, and no diagnostics ever came). With every
    module the workers need imported here, at start, no import happens inside a job. The
    fixer (libcst, about 9 MB resident) is not among them: only code actions need it, and
    :func:`import_fixer` loads it before the first one, outside any job.
    """
    from graphlife.analysis import interpreter, optable, stories  # noqa: F401, PLC0415
    from graphlife.rules import all_rules  # noqa: PLC0415

    all_rules()
    optable.lookup("torch.add")  # loads the saved-tensor table


def import_fixer() -> None:
    """Import the fixer (libcst, the recipes' edits, a notebook's fix-all) and load libcst's
    native parser. Called on a thread no cancellation reaches (:class:`FixerLoader`), never
    inside a job, for the reason :func:`import_everything` gives."""
    import libcst  # noqa: PLC0415

    from graphlife.fixes import apply, compute_fixes, document, fix_source, notebooks, verify  # noqa: F401, PLC0415

    libcst.parse_module("pass\n")  # loads libcst's native parser, imported on first use


class FixerLoader:
    """Loads the fixer once, the first time a code action needs it, on an executor thread that
    no :class:`~graphlife.lsp.cancel.Runner` job runs on at that moment (so no cancellation can
    land inside the import); later callers wait for the same load."""

    def __init__(self, executor: ThreadPoolExecutor) -> None:
        self._executor = executor
        self._loading: asyncio.Future[None] | None = None

    async def ready(self) -> None:
        if self._loading is None:
            self._loading = asyncio.get_running_loop().run_in_executor(self._executor, import_fixer)
        await asyncio.shield(self._loading)  # a cancelled request does not stop the import


def start(tcp: str | None = None) -> None:
    """Serve on stdio, or on ``tcp`` ("HOST:PORT") for debugging the server by hand."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    import_everything()
    server = create_server()
    release_memory()  # what the imports left behind (the table's and libcst's first parses)
    if tcp:
        host, _, port = tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        serve_stdio(server)
