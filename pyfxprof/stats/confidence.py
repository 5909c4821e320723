"""The one confidence level every interval and test of pyfxprof reports at, and the false
discovery rate its many-row verdicts control by default (the same 5%)."""

#: Two-sided confidence of every interval pyfxprof prints (95%), and 1 - the tests' level.
CONFIDENCE = 0.95
#: The false discovery rate (Benjamini–Hochberg) of the verdicts over many rows by default:
#: compare(), diff(), rank stragglers, replay variants (1 - CONFIDENCE).
FALSE_DISCOVERY_RATE = 0.05
