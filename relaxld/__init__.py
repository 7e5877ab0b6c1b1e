"""The relaxld command-line tool: a thin click front end over the relax library."""
