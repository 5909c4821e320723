"""The Profile and everything derived from it as plain data: statistics, roll-ups, persistence, readers of other formats. Imports neither torch nor pyfxprof._C."""
