"""The statistics stage: every estimator, interval, test and verdict rule, once; torch-free."""
