"""Reports read verdicts; they never run checks."""
