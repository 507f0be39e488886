"""The hover's graph-lifetime stories of each open document: one watched run per analyzed version.

Why: a story comes from a run of the engine over the whole file with every name
watched (:class:`graphlife.analysis.stories.Stories`); on a file of thousands of
lines that run takes a second or more. The hover must not pay it:

- The run is made once per version the diagnostics analyzed, on a worker, a
  moment after those diagnostics are out and the document is quiet
  (:data:`WARM_AFTER_SECONDS`): the user reads the squiggles, then hovers, and
  the stories are there. A newer version (typing) stops a run that is no longer
  needed, so it never competes with the analysis the user waits for.
- Only for a document the user has hovered since it was opened: one who never
  hovers (or reads another file) pays no run per version. The first hover of a
  document waits for its run.
- A hover that comes before (or while) the run is made waits for that run; it
  never starts a second one, and a hover the editor cancels (the mouse moved on)
  does not stop it: the next hover would have to start over.
- A save analyzes the same text again and the linter hands back its last result
  (``Analysis.reused``): the stories told for that text are kept, not told again.
- Files over the server's ``ISOLATE_CHARS`` get no story: they are analyzed in a
  checker process because their parse alone would freeze the server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from graphlife.analysis.modules import ModuleProvider
from graphlife.analysis.stories import Stories
from graphlife.lsp.cancel import Cancelled, Job, Runner
from graphlife.lsp.debounce import Debouncer
from graphlife.lsp.documents import current_stamp
from graphlife.lsp.linting import ISOLATE_CHARS, Analysis
from graphlife.lsp.log import log

#: Seconds of quiet after a version's diagnostics are published before its stories are told.
WARM_AFTER_SECONDS = 0.5

#: Seconds a story's watched run may take (the checker's time box is the user's; a story that
#: runs out of time tells what the run reached).
STORY_TIME_BUDGET = 5.0


class HoverStories:
    """The stories of each key's latest analyzed version, and the run that tells them."""

    def __init__(self, server: LanguageServer, runner: Runner) -> None:
        self.server = server
        self.runner = runner
        self.debouncer = Debouncer()
        #: key -> the analysis whose stories are being (or were) told, the job and its future.
        self._runs: dict[str, tuple[Analysis, Job, asyncio.Future[None]]] = {}
        #: key -> the last analysis whose stories were told (a reused analysis of its text adopts them).
        self._finished: dict[str, Analysis] = {}
        #: Documents hovered since they were opened: their next versions are told ahead.
        self._hovered: set[str] = set()

    def warm(self, analysis: Analysis, modules: Callable[[], ModuleProvider | None]) -> None:
        """The analysis was published: tell its stories after a moment of quiet, if the user
        hovers in this document."""
        key = analysis.snapshot.key
        if key not in self._hovered or not self._tellable(analysis) or self._adopt(analysis):
            return

        async def start() -> None:
            self._start(analysis, modules)

        self.debouncer.schedule(key, WARM_AFTER_SECONDS, start)

    async def ready(self, analysis: Analysis, modules: Callable[[], ModuleProvider | None]) -> Stories | None:
        """The analysis's stories, told (waiting for the run that tells them, or starting it);
        ``None`` when the file gets none or the run was stopped."""
        self._hovered.add(analysis.snapshot.key)
        if not self._tellable(analysis):
            return None
        stories = analysis.stories
        if stories is not None and stories.built:
            return stories
        if self._adopt(analysis):
            return analysis.stories
        self.debouncer.cancel(analysis.snapshot.key)
        future = self._start(analysis, modules)
        try:
            await asyncio.shield(future)  # the hover's cancellation does not stop the run
        except Cancelled:
            return None
        return analysis.stories

    def cancel(self, key: str) -> None:
        """A newer version of ``key`` is coming (or it closed): its stories are not needed."""
        self.debouncer.cancel(key)
        if current_stamp(self.server.workspace, key) is None:
            self._finished.pop(key, None)  # closed
            self._hovered.discard(key)
        run = self._runs.pop(key, None)
        if run is not None and not run[2].done():
            self.runner.cancel(run[1], "a newer version arrived")

    def _start(self, analysis: Analysis, modules: Callable[[], ModuleProvider | None]) -> asyncio.Future[None]:
        key = analysis.snapshot.key
        run = self._runs.get(key)
        if run is not None and run[0] is analysis and not (run[2].done() and run[2].exception() is not None):
            return run[2]
        if run is not None and not run[2].done():
            self.runner.cancel(run[1], "a newer version was analyzed")
        if analysis.stories is None:
            analysis.stories = Stories(analysis.snapshot.source, modules=modules(), path=analysis.snapshot.path,
                                       time_budget=STORY_TIME_BUDGET)
        job, future = self.runner.submit(f"stories of {key}", analysis.stories.build)
        future.add_done_callback(lambda done: self._told(analysis, done))
        self._runs[key] = (analysis, job, future)
        return future

    def _adopt(self, analysis: Analysis) -> bool:
        """Give a reused analysis (the same text, settings and files read: a save) the stories
        already told for that text."""
        told = self._finished.get(analysis.snapshot.key)
        if (analysis.stories is not None or not analysis.reused or told is None or told.stories is None
                or not told.stories.built or told.snapshot.source != analysis.snapshot.source):
            return False
        analysis.stories = told.stories
        return True

    def _told(self, analysis: Analysis, done: asyncio.Future[None]) -> None:
        """Log the run (the log is how a user, and a test, sees that a version was run once)."""
        if done.cancelled() or done.exception() is not None:
            return
        stories = analysis.stories
        if stories is None or stories.build_seconds is None:
            return
        if current_stamp(self.server.workspace, analysis.snapshot.key) is not None:
            self._finished[analysis.snapshot.key] = analysis
        name = analysis.snapshot.path or analysis.snapshot.key
        log(self.server, f"told the graph-lifetime stories of {name} (one watched run for every name) in "
            f"{stories.build_seconds * 1000:.0f} ms", types.MessageType.Log)

    @staticmethod
    def _tellable(analysis: Analysis) -> bool:
        return analysis.config.enable and len(analysis.snapshot.source) <= ISOLATE_CHARS

