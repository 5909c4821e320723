"""Running a profile of a call the user names: pyfxprof.profile(), compare(), bench(), sweep(), metadata and progress."""
