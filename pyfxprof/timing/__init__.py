"""Timing a captured model: the recorder over pyfxprof._C, calibration, records to durations, and the executors (codegen, interpreter, hooks, device events)."""
