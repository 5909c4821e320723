"""The one confidence level every interval and test of pyfxprof reports at."""

#: Two-sided confidence of every interval pyfxprof prints (95%), and 1 - the tests' level.
CONFIDENCE = 0.95
