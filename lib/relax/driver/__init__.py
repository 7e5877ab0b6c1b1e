"""The library side of the four command-line tools.

The tool packages (relaxc/, relaxas/, relaxld/, relaxrun/) hold only their click
command lines. What they share lives here: the options that mean the same thing in
every tool, the runner that turns errors into diagnostics and exit codes, and the
`--version` text.
"""
