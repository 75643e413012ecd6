"""Pass 1: each QID's domain, the generalisation dimensions, and the root lattice node (paper or adaptive)."""
