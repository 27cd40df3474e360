"""Hypothesis state machines that drive targets."""
