"""The bytecode format: the instruction set as a table, the Executable and the ExecBuilder
that writes one, the .vmo file, its verifier and loader, the signature records and the
text/Python listings.

Everything that reads or writes bytecode derives from `isa.py`'s table. Nothing here
imports the compiler: the runtime loads executables through this package.
"""
