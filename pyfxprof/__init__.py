"""pyfxprof: a high-precision, low-overhead per-node profiler for PyTorch models."""

__version__ = "0.1.0"
