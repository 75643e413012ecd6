"""Pass 2, deciding: the lattice above the root, roll-ups, the optimal node and its figures."""
