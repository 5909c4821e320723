"""Tools built on profiling: the Conv/BN fusion pass and its benchmark, the overhead comparison and the time.time baseline."""
