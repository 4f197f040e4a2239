"""`python -m cli`: the same as the `hetprof` command."""

import sys

from cli.main import main

sys.exit(main())
