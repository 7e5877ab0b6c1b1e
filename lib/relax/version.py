"""Versions of the toolchain and of the file formats it writes and reads."""

__version__ = "0.1.0"

# Each binary format carries its own version; a reader refuses any other one.
# The owners of the formats (vm/, codegen/) import their number from here so that
# `--version` and the files agree.
FORMAT_VERSIONS = {
    "vmo": "0.2",  # bytecode object (0.2 adds the Python functions; one without them is still written as 0.1)
    "vmx": "0.2",  # linked artifact (0.2 adds the signature section; an unsigned one is still written as 0.1)
    "ko": "0.5",   # kernel object (0.2 cuda targets, 0.3 CPU kernels in parts, 0.4 code hashes, 0.5 kernel signatures)
}
