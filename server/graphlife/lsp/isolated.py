"""The checker in a child process, for files too big to analyze inside the server.

``ast.parse`` and ``compile`` hold the GIL for the whole file: on a 50,000-line
file that freezes the server's event loop (hover, typing in other files,
cancellation) for seconds, whichever thread runs it. Above
:data:`graphlife.lsp.linting.ISOLATE_CHARS` the server therefore runs the same
:func:`graphlife.checker.check_source` in ``python -m graphlife.lsp.isolated``:
the request (source, path, config, time budget) goes in as a pickle on stdin,
the ``CheckResult`` comes back as a pickle on stdout, and a stale or runaway
analysis is simply killed.

Only the server writes to this process's stdin, so unpickling is safe here.
"""

from __future__ import annotations

import pickle
import sys


def main() -> None:
    from graphlife.checker import check_source  # noqa: PLC0415

    request = pickle.load(sys.stdin.buffer)  # noqa: S301 - written by our own parent process
    result = check_source(
        request["source"], request["path"], request["config"], time_budget=request["time_budget"]
    )
    pickle.dump(result, sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
