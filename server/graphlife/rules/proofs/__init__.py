"""The proofs behind the fixes the rules attach: where a recipe is right, decided on the engine's events.

Why here and not in :mod:`graphlife.fixes`: a proof is part of the analysis (it follows
the events after a backward, reads the file's references) and runs in every
``graphlife check``, which never loads the fixer (libcst); :mod:`graphlife.fixes` turns
the recipes these modules decide on into edits. docs/FIX_RECIPES.md quotes each one.
"""
