"""The linked artifact: the .vmx format, the linker behind relaxld (a .vmo and kernel
objects in, one checked .vmx out), and loading and exporting a .vmx.
"""
