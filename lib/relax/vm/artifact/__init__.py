"""The linked artifact: the .vmx format, the linker behind relaxld (a .vmo and kernel
objects in, one checked .vmx out), loading and exporting a .vmx, and signing one.
"""
