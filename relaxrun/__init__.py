"""The relaxrun command-line tool: a thin click front end over the relax library."""
