"""Machine models (PRAM, the paper's GPU rules, Nakano's DMM/UMM), primitive cost providers and
device profiles: everything that puts a number on an edge of the cost graph."""
