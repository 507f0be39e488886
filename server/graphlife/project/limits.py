"""What graphlife refuses to read, in one place for the checker and the project layer.

Why its own module: the checker (the file being checked) and the project layer (the
modules it imports) must apply the same limits, and the checker imports the project
layer, not the other way round. Nothing is imported here, so importing the limits costs
the checker's start-up nothing.
"""

#: Files larger than this are not analyzed (the checker says so; an imported module stays unknown).
MAX_SOURCE_BYTES = 5_000_000
