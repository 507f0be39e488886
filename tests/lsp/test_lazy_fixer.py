"""The server loads the fixer (libcst) with the first code action that needs it, not at start.

Why it matters to a user: libcst is about 9 MB of the server's resident memory, and most
sessions never ask for a fix; the editor's memory is the user's. The import must still
happen outside any cancellable job (:func:`graphlife.lsp.server.import_everything` says why):
:class:`graphlife.lsp.server.FixerLoader` runs it on a thread no cancellation reaches.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from graphlife.lsp.server import FixerLoader

START = ("import sys\nfrom graphlife.lsp.server import create_server, import_everything\n"
         "import_everything()\ncreate_server()\n"
         "print('libcst' in sys.modules, 'graphlife.fixes.apply' in sys.modules)\n")


def test_a_started_server_has_not_loaded_the_fixer():
    proc = subprocess.run([sys.executable, "-c", START], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.split() == ["False", "False"]


def test_the_fixer_loads_once_for_every_caller():
    code = ("import asyncio, sys\nfrom concurrent.futures import ThreadPoolExecutor\n"
            "from graphlife.lsp.server import FixerLoader\n"
            "loader = FixerLoader(ThreadPoolExecutor(1))\n"
            "async def main():\n    await asyncio.gather(loader.ready(), loader.ready())\n    await loader.ready()\n"
            "asyncio.run(main())\nprint('libcst' in sys.modules, 'graphlife.fixes.apply' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.split() == ["True", "True"]


def test_a_cancelled_request_does_not_stop_the_load():
    loader = FixerLoader(ThreadPoolExecutor(1))

    async def main() -> None:
        waiting = asyncio.ensure_future(loader.ready())
        await asyncio.sleep(0)
        waiting.cancel()
        await loader.ready()  # the same load, finished

    asyncio.run(main())
    assert "libcst" in sys.modules
