"""Where data lives and how it is read and written: locations, chunks, parts, hierarchies, the paper's generator."""
