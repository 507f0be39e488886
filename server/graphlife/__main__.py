"""`python -m graphlife` is the same as the `graphlife` command."""

import sys

from graphlife.cli import main

sys.exit(main())
