"""Where data lives and how it is read and written: locations, chunks, parts, hierarchies, the
synthetic datasets (the paper's, the clinical one) and their generator."""
