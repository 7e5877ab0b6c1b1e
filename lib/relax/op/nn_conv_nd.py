"""The 1-D and 3-D convolutions of R.nn beyond conv1d: conv3d (any permutation of
NCDHW / OIDHW, grouped, dilated, strided, padded), conv1d_transpose (NCW / IOW) and
conv3d_transpose (NCDHW / IODHW).

They share nn_conv.py's computations, which take the number of spatial axes as a
parameter; only the registrations live here. As in TVM, a transposed convolution
accepts only its default layouts: any other is a located error at the call.
"""

from __future__ import annotations

from .nn_conv import conv_attrs, conv_infer, conv_legalize
from .registry import OpDef, register

register(OpDef(
    name="relax.nn.conv3d",
    args=("data", "weight"),
    attrs=conv_attrs(3, "NCDHW", "OIDHW"),
    infer=conv_infer(3),
    pattern="out_elementwise_fusable",
    legalize=conv_legalize(3),
    doc="3-D convolution (grouped, dilated, strided, padded; any permutation of the layouts)",
))

for _rank, _data_layout, _kernel_layout in ((1, "NCW", "IOW"), (3, "NCDHW", "IODHW")):
    register(OpDef(
        name=f"relax.nn.conv{_rank}d_transpose",
        args=("data", "weight"),
        attrs=conv_attrs(_rank, _data_layout, _kernel_layout, transpose=True),
        infer=conv_infer(_rank, transpose=True),
        pattern="out_elementwise_fusable",
        legalize=conv_legalize(_rank, transpose=True),
        doc=f"{_rank}-D transposed convolution (the gradient of conv{_rank}d with respect to its input)",
    ))
