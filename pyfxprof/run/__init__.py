"""Running a profile: pyfxprof.profile(), the Profiler loop, its schedule, user ranges, metadata and progress."""
