"""Operators: the registry of Relax operators and what each one means.

For every operator (`R.add`, `R.nn.conv2d`, ...) the registry holds its argument
and attribute signature, its struct-info inference (dtype and shape, symbolic sizes
included), its fusion pattern kind, and its legalization: the TIR PrimFunc that
computes it, built with the tensor-expression helper in te.py. One file per family.
"""
