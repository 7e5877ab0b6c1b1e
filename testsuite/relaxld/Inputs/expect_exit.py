"""Runs a command and succeeds only when it exits with the given code: `expect_exit.py 1 relaxld ...`.

lit's `not` accepts any non-zero code; the tools promise exact ones (CLI.md).
"""
import subprocess
import sys

expected, command = int(sys.argv[1]), sys.argv[2:]
code = subprocess.call(command)
if code != expected:
    sys.stderr.write(f"expect_exit: '{command[0]}' exited with {code}, expected {expected}\n")
    sys.exit(1)
