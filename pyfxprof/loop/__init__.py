"""The Profiler loop: profiling the calls a user's own program makes (serving loops, generate(), training steps)."""
