"""Run-time tools: `graphlife run`, the leak watch, the IPython extension, the pytest plugin.

They run *inside* the user's program, next to its torch. Importing this package
(or any of its modules) never imports torch: each tool reads the torch the
program imported (``sys.modules``), or waits until the program imports it. The
static checker, which never imports torch, is used for the finding on a line.

Modules, one job each:

- :mod:`~graphlife.runtime.launcher`: run a script or module as ``python`` would.
- :mod:`~graphlife.runtime.frames`: which frames are the user's (not torch's, not ours).
- :mod:`~graphlife.runtime.sites`: where graph nodes were built and tensors changed in place.
- :mod:`~graphlife.runtime.explain_error`: the explanation of an autograd error that escaped.
- :mod:`~graphlife.runtime.watch`: counting live graphs and reporting growth once.
- :mod:`~graphlife.runtime.holders`: what keeps a tensor alive (gc referrers, named).
- :mod:`~graphlife.runtime.ipython`: ``%load_ext graphlife``.
"""
