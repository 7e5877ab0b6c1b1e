"""R.call_tir_inplace through the pipeline: outputs written into inputs, the others allocated."""

import pathlib

import numpy as np
import pytest

from relax.build import build
from relax.script import parse
from relax.vm import VirtualMachine

CORPUS = pathlib.Path(__file__).resolve().parents[1] / "corpus"


@pytest.mark.parametrize("opt_level", [0, 2])
def test_inplace_kernels_from_the_corpus(opt_level):
    mod = parse((CORPUS / "relax_call_tir_inplace.tvmscript").read_text())
    x = np.array([-3, -1, 0, 1, 2, 3, 4, -5], "float32")
    y = np.array([1, 2, 3, -4, 5, 6, -7, 8], "float32")
    first, second = VirtualMachine(build(mod, opt_level=opt_level), "cpu")["main"](x.copy(), y.copy())
    # relu_inplace overwrites x; add_inplace then writes A + B into A and (A + B) * B into C.
    summed = np.maximum(x, 0) + y
    np.testing.assert_array_equal(first, summed)
    np.testing.assert_array_equal(second, summed * y)
