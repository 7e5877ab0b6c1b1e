"""The 1-D and 3-D pools of R.nn: max_pool1d/3d, avg_pool1d/3d (layouts any
permutation of NCW / NCDHW) and adaptive_avg_pool1d/3d.

They share nn_pool.py's computations, which take the number of spatial axes as a
parameter; only the registrations live here. TVM's Python API defaults
count_include_pad to True for these pools (False for the 2-D ones).
"""

from __future__ import annotations

from .nn_pool import register_adaptive_pool, register_pools

for _rank in (1, 3):
    register_pools(_rank, count_include_pad=True)
    register_adaptive_pool(_rank)
