"""Benchmarks: one script per question, each printing a table of medians and ratios against a peer
measured in the same run (`python -m bench.<name>`). Not timed tests: machines are noisy."""
