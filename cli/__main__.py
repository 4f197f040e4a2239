"""`python -m cli`: the same as the `hetprof` command."""

from cli.main import console

console()
