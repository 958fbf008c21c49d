"""jiyi: a memory for coding agents."""
