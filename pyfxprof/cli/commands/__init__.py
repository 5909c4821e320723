"""Sub-commands of the `pyfxprof` CLI, one module each (see pyfxprof.cli.main)."""
