"""Processes and pipes: where the suite meets a real target."""
