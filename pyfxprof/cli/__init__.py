"""The pyfxprof command line (entry point pyfxprof.cli.main:main) and its sub-commands."""
