"""The suite's own protocol peers: the harness playing host (for extension
certification) and, later, the probe playing extension."""
