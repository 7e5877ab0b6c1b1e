"""R.image.resize3d(data, size): resize the D, H and W axes (layout NCDHW or NDHWC)
by nearest, trilinear or tricubic interpolation, with every coordinate mode of
resize2d. It shares image.py's computation, which takes the number of spatial axes
as a parameter; only the registration lives here.

Two deliberate differences from TVM 0.27's 3-D kernel, where it misapplies its own
rules: with tf_crop_and_resize a depth coordinate outside the image also reads
extrapolation_value (TVM 0.27 drops that test), and cubic_exclude renormalizes the
depth weights from the depth neighbours (TVM 0.27 takes them from the width axis).
Results agree with TVM 0.27 for every other attribute combination."""

from __future__ import annotations

from .image import register_resize

register_resize(3, rounding_method="")
