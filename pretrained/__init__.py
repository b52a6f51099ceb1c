"""Unrolled's shipped checkpoints and the command that builds them (see README.md)."""
