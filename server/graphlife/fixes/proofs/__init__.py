"""The proofs behind the fixes the rules attach: where a recipe is right, decided on the engine's events.

A proof is part of the analysis: it follows the events after a backward, reads the file's
references, and runs in every ``graphlife check``, which never loads the fixer (libcst).
It lives with the fixes, as one fix subsystem (docs/FIX_RECIPES.md quotes each proof next
to the recipe it decides on), but sits below the rules in the import layers: the rules
import these modules, so a proof imports only what a rule may (the engine's rule API, the
findings, the recipes) and nothing of the rest of :mod:`graphlife.fixes`, which turns the
recipes into edits. ``server/.importlinter`` keeps both directions.
"""
