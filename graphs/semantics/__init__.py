"""The cost semantics of λG (Figs. 5, 6 and 9): `explicit` evaluates a program at concrete sizes
into a cost graph; `symbolic` evaluates it once into formulas in the size parameters. Both read
their knobs from `options`."""
