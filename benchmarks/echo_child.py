"""The ceiling: the fastest possible NDJSON peer -- read a line, write it back."""

import sys


def main() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    for line in stdin:
        stdout.write(line)
        stdout.flush()


if __name__ == "__main__":
    main()
