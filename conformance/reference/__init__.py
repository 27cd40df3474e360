"""Reference peers: correct implementations written independently of the
suite's validators, so harness and reference can disagree."""
