"""Pass 2, counting: per-chunk histograms of the root's classes, merged exactly."""
