"""Analyses over Profiles: A/B diff and the optimisation advisor."""
