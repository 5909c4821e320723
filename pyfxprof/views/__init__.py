"""Renderings of a Profile: tables, Chrome traces, stacks and flame graphs, plots."""
