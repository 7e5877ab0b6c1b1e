"""Generating bytecode: CodeGenVM (VM-ready Relax functions to bytecode through the
ExecBuilder) and the assembler that reads a text listing back.

The compiler side of the VM; the runtime (vm/machine/) never imports CodeGenVM or the
assembler.
"""
