"""The user's project as the engine sees it: which file an import names, read and parsed.

Why a layer of its own: the engine follows imports into the user's other modules
(:mod:`graphlife.analysis.modules`) but never touches the disk. This package finds
modules the way Python's import system would (:mod:`.roots`, :mod:`.resolver`),
reads and parses them (:mod:`.sources`) and hands them to the engine
(:class:`.provider.ProjectModules`) without running anything. It sits below the
checker and the front ends and above the engine, and imports neither the checker nor
the rules. This ``__init__`` imports nothing, so that the checker can take
:mod:`.limits` without paying for the rest.
"""
