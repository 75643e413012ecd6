"""Pass 3: each chunk generalised to the chosen node."""
