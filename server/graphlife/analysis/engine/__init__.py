"""The interpreter's parts, one concern each; :mod:`graphlife.analysis.interpreter` assembles them.

- :mod:`~graphlife.analysis.engine.core`: the file, the run state, the small helpers every
  part uses, and the dispatch tables from node classes to their handlers;
- :mod:`~graphlife.analysis.engine.units`: the module body and the functions analyzed
  alone, the state each starts from, the module's definitions;
- :mod:`~graphlife.analysis.engine.statements`: blocks and every statement but loops;
- :mod:`~graphlife.analysis.engine.assignment`: binding values to targets, stores;
- :mod:`~graphlife.analysis.engine.loops`: ``for``, ``while``, comprehensions, unrolled;
- :mod:`~graphlife.analysis.engine.iterations`: what one iteration hands the next;
- :mod:`~graphlife.analysis.engine.expressions`: every expression but calls and comprehensions;
- :mod:`~graphlife.analysis.engine.calls`: calls, inlining, instantiating classes;
- :mod:`~graphlife.analysis.engine.heap`: objects, containers, iteration, garbage.

Each part is a mixin of :class:`~graphlife.analysis.engine.core.EngineCore` and reaches the
others only through :class:`graphlife.analysis.engine_api.EngineParts`, the protocol the
shortcuts (isolation, the ``self`` cache, the call memo, the unit cache) use too.
"""
