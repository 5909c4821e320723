"""Capturing a model for timing: tracing and its fallback ladder, the untimed analysis run (shapes, FLOPs, bytes, memory), the nodes table, model state."""
