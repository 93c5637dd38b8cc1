"""Benchmarks of linkpatrol against its peers, and of its own parts (see RESULTS.md)."""
