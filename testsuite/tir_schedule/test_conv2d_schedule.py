"""The conv2d schedule rule (relax.tir.schedule.conv2d): scheduled kernels compute what the plain nests do.

NCHW / OIHW and NHWC / HWIO convolutions are scheduled; depthwise ones and float64 keep the plain nest.

Each case legalizes and fuses (-O2) conv2d followed by a bias add and relu (the
epilogue the rule applies to its register tile), builds the kernels unscheduled
(-O0) and scheduled, runs both on the same random data and compares them with each
other and with a numpy convolution. Tolerance: rtol 1e-4, atol 1e-4 (float32 sums of
up to 400 terms; the schedule uses fused multiply-adds, the plain nest does not).
"""

import numpy as np
import pytest

from relax.codegen.build_kernels import build_host_library
from relax.ir import tir
from relax.script import parse
from relax.target import Target
from relax.tir.loop_nests import top_level
from relax.tir.rewrite import collect
from relax.tir.schedule import conv2d, default_cpu_schedule
from relax.tir.schedule.nest import match_nest
from relax.ir.pass_infra import PassContext

from dataflow_kernels import lowered_kernels

TOLERANCE = dict(rtol=1e-4, atol=1e-4)


def _kernels(params: str, body: str) -> dict:
    return lowered_kernels(params, body, 2)


def _conv_module(batch, channels, out_channels, size, kernel, stride, pad, dilation, epilogue=True,
                 groups=1, layout="NCHW"):
    if layout == "NCHW":
        data, weight = (batch, channels, size, size), (out_channels, channels // groups, kernel, kernel)
        bias, layouts = (1, out_channels, 1, 1), ""
    else:
        data, weight = (batch, size, size, channels), (kernel, kernel, channels // groups, out_channels)
        bias, layouts = (1, 1, 1, out_channels), ', data_layout="NHWC", kernel_layout="HWIO"'
    params = f'x: R.Tensor({data}, "float32"), w: R.Tensor({weight}, "float32"), b: R.Tensor({bias}, "float32")'
    conv = (f"R.nn.conv2d(x, w, strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad}, {pad}], "
            f"dilation=[{dilation}, {dilation}], groups={groups}{layouts})")
    if epilogue:
        body = f"y = {conv}\n            z = R.add(y, b)\n            out = R.nn.relu(z)"
    else:
        body = f"out = {conv}"
    return _kernels(params, body)


def _reference(x, w, b, stride, pad, dilation, epilogue):
    """NCHW / OIHW convolution in float64, then bias and relu."""
    batch, _, height, width = x.shape
    out_channels, _, kh, kw = w.shape
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (height + 2 * pad - dilation * (kh - 1) - 1) // stride + 1
    ow = (width + 2 * pad - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((batch, out_channels, oh, ow))
    for ry in range(kh):
        for rx in range(kw):
            window = padded[:, :, ry * dilation::stride, rx * dilation::stride][:, :, :oh, :ow]
            out += np.einsum("nchw,oc->nohw", window, w[:, :, ry, rx].astype(np.float64))
    return np.maximum(out + b, 0) if epilogue else out


def _run_both(funcs: dict, target=None):
    """The one kernel's (inputs, scheduled outputs), after checking plain and scheduled builds agree."""
    (name, func), = funcs.items()
    with PassContext(opt_level=0):
        plain = build_host_library(funcs)
    scheduled = build_host_library(funcs, target)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(tuple(d.value for d in buffer.shape)).astype(buffer.dtype)
              for _, buffer in func.buffer_map]
    a, b = [x.copy() for x in inputs], [x.copy() for x in inputs]
    plain.get_function(name)(*a)
    scheduled.get_function(name)(*b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, **TOLERANCE)
    return inputs, b


def _conv_nests(func) -> list:
    statements, _ = top_level(func.body)
    return [nest for nest in map(match_nest, statements) if nest is not None and conv2d.matches(nest)]


def _parallel_loops(func) -> list:
    return [loop for loop in collect(func.body, tir.For) if loop.kind == "parallel"]


def _local_buffers_under(stmt) -> set:
    return {alloc.buffer_var.name for alloc in collect(stmt, tir.Allocate)}


CASES = [  # batch, channels, out channels, size, kernel, stride, padding, dilation
    (1, 3, 16, 32, 3, 1, 1, 1),
    (2, 7, 7, 13, 3, 2, 1, 1),
    (1, 1, 3, 7, 5, 1, 2, 1),
    (2, 16, 16, 13, 1, 1, 0, 1),
    (1, 3, 7, 13, 3, 1, 2, 2),
    (1, 3, 5, 1, 1, 1, 0, 1),
    (1, 16, 1, 1, 3, 1, 1, 1),
    (2, 1, 16, 7, 5, 2, 2, 1),
    (1, 7, 3, 32, 3, 2, 0, 1),
    (1, 16, 7, 7, 3, 1, 1, 2),
    (2, 3, 16, 32, 5, 2, 2, 1),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "n{}c{}o{}s{}k{}st{}p{}d{}".format(*c))
def test_conv2d_bias_relu_matches_numpy(case, schedule_target):
    batch, channels, out_channels, size, kernel, stride, pad, dilation = case
    funcs = _conv_module(*case)
    (func,) = funcs.values()
    assert _conv_nests(func), "the conv2d rule should match this nest"
    inputs, outputs = _run_both(funcs, target=schedule_target)
    expected = _reference(*inputs[:3], stride, pad, dilation, epilogue=True)
    np.testing.assert_allclose(outputs[-1], expected, **TOLERANCE)


@pytest.mark.parametrize("case", [(1, 3, 16, 32, 3, 1, 1, 1), (2, 7, 5, 13, 3, 2, 0, 1)])
def test_conv2d_alone_matches_numpy(case, schedule_target):
    batch, channels, out_channels, size, kernel, stride, pad, dilation = case
    funcs = _kernels(
        f'x: R.Tensor(({batch}, {channels}, {size}, {size}), "float32"), '
        f'w: R.Tensor(({out_channels}, {channels}, {kernel}, {kernel}), "float32")',
        f"out = R.nn.conv2d(x, w, strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad}, {pad}])")
    inputs, outputs = _run_both(funcs, target=schedule_target)
    expected = _reference(*inputs[:2], 0.0, stride, pad, dilation, epilogue=False)
    np.testing.assert_allclose(outputs[-1], expected, **TOLERANCE)


@pytest.mark.parametrize("level, lanes", [("x86-64-v3", 8), ("x86-64-v4", 16)])
def test_epilogue_is_applied_in_registers(level, lanes):
    # Scheduled for a named CPU, not the host: the vectors are a level's own on any machine.
    (func,) = _conv_module(1, 16, 32, 16, 3, 1, 1, 1).values()
    scheduled = default_cpu_schedule(func, Target.parse(f"llvm -mcpu={level}"))
    written = {store.buffer.name for store in collect(scheduled.body, tir.BufferStore) if store.buffer.scope != "local"}
    output = func.buffer_map[-1][1].name
    assert output in written
    # The convolution's and the bias add's outputs are never written: relu(acc + bias) is stored directly.
    assert not any(name.startswith(("conv2d", "T_add")) for name in written), written
    fmas = [call for call in collect(scheduled.body, tir.Call) if call.op == "tir.fma"]
    assert fmas and all(call.dtype == f"float32x{lanes}" for call in fmas)


NHWC_CASES = [CASES[0], CASES[1], CASES[2], CASES[5], CASES[9], (1, 16, 40, 13, 3, 1, 1, 1), (2, 3, 33, 7, 1, 2, 0, 1)]


@pytest.mark.parametrize("case", NHWC_CASES, ids=lambda c: "n{}c{}o{}s{}k{}st{}p{}d{}".format(*c))
def test_nhwc_conv2d_bias_relu_matches_numpy(case, schedule_target):
    """NHWC data with HWIO weights: the output channels are the vector axis, the weights the shared vectors."""
    batch, channels, out_channels, size, kernel, stride, pad, dilation = case
    funcs = _conv_module(*case, layout="NHWC")
    (func,) = funcs.values()
    (nest,) = _conv_nests(func)
    inputs, outputs = _run_both(funcs, target=schedule_target)
    x, w, b = inputs[0].transpose(0, 3, 1, 2), inputs[1].transpose(3, 2, 0, 1), inputs[2].transpose(0, 3, 1, 2)
    expected = _reference(x, w, b, stride, pad, dilation, epilogue=True).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(outputs[-1], expected, **TOLERANCE)


@pytest.mark.parametrize("groups,layout", [(3, "NCHW"), (3, "NHWC")], ids=["depthwise", "depthwise-nhwc"])
def test_other_convolutions_fall_back(groups, layout, schedule_target):
    funcs = _conv_module(1, 3, 3, 13, 3, 1, 1, 1, groups=groups, layout=layout)
    (func,) = funcs.values()
    assert not _conv_nests(func)
    _run_both(funcs, target=schedule_target)  # still computed as the plain nest computes it


def test_float64_falls_back(schedule_target):
    funcs = _kernels('x: R.Tensor((1, 3, 7, 7), "float64"), w: R.Tensor((4, 3, 3, 3), "float64")',
                     "out = R.nn.conv2d(x, w)")
    (func,) = funcs.values()
    assert not _conv_nests(func)
    _run_both(funcs, target=schedule_target)


SMALL, CHUNKED = ((2, 3, 7, 13), (5, 3, 3, 3)), ((1, 8, 24, 24), (16, 8, 3, 3))


@pytest.mark.parametrize("shapes,padding", [
    (SMALL, (1, 1, 1, 1)), (SMALL, (1, 0, 2, 1)), (SMALL, (0, 2, 0, 0)), (SMALL, (2, 2, 2, 2)),
    (CHUNKED, (2, 1, 0, 1)), (CHUNKED, (0, 0, 3, 2))],
    ids=lambda p: "pad" + "".join(map(str, p)) if len(p) == 4 and isinstance(p[0], int) else
    ("rows" if p is CHUNKED else "shared"))
def test_padding_stage_has_no_per_element_test(shapes, padding, schedule_target):
    """Padding written as loops, or per chunk of rows (CHUNKED: the chunks at the top and
    bottom borders pad only the rows the padding has there), with no per-element test."""
    (data, weight), (top, left, bottom, right) = shapes, padding
    funcs = _kernels(f'x: R.Tensor({data}, "float32"), w: R.Tensor({weight}, "float32")',
                     f"out = R.nn.conv2d(x, w, padding=[{top}, {left}, {bottom}, {right}])")
    (func,) = funcs.values()
    scheduled = default_cpu_schedule(func)
    calls = [call.op for call in collect(scheduled.body, tir.Call)]
    assert "tir.if_then_else" not in calls and "tir.fma" in calls
    if shapes is CHUNKED:
        assert "pad_temp_rows" in _local_buffers_under(_parallel_loops(scheduled)[0].body)
    inputs, outputs = _run_both(funcs, target=schedule_target)
    x = np.pad(inputs[0], ((0, 0), (0, 0), (top, bottom), (left, right)))
    expected = _reference(x, inputs[1], 0.0, 1, 0, 1, epilogue=False)
    np.testing.assert_allclose(outputs[-1], expected, **TOLERANCE)


_READ_AFTER = """
@I.ir_module
class Module:
    @T.prim_func
    def kernel(x: T.Buffer((1, 2, 5, 9), "float32"), w: T.Buffer((3, 2, 3, 3), "float32"),
               b: T.Buffer((1, 3, 1, 1), "float32"), out: T.Buffer((1, 3, 3, 7), "float32"),
               extra: T.Buffer((1, 3, 3, 7), "float32")):
        conv = T.alloc_buffer((1, 3, 3, 7))
        added = T.alloc_buffer((1, 3, 3, 7))
        for n, c, h, v, rc, ry, rx in T.grid(1, 3, 3, 7, 2, 3, 3):
            with T.block("conv"):
                vn, vc, vh, vw, vrc, vry, vrx = T.axis.remap("SSSSRRR", [n, c, h, v, rc, ry, rx])
                with T.init():
                    conv[vn, vc, vh, vw] = T.float32(0.0)
                conv[vn, vc, vh, vw] = conv[vn, vc, vh, vw] + x[vn, vrc, vh + vry, vw + vrx] * w[vc, vrc, vry, vrx]
        for n, c, h, v in T.grid(1, 3, 3, 7):
            with T.block("add"):
                vn, vc, vh, vw = T.axis.remap("SSSS", [n, c, h, v])
                added[vn, vc, vh, vw] = conv[vn, vc, vh, vw] + b[0, vc, 0, 0]
        for n, c, h, v in T.grid(1, 3, 3, 7):
            with T.block("relu"):
                vn, vc, vh, vw = T.axis.remap("SSSS", [n, c, h, v])
                out[vn, vc, vh, vw] = T.max(added[vn, vc, vh, vw], T.float32(0.0))
        for n, c, h, v in T.grid(1, 3, 3, 7):
            with T.block("extra"):
                vn, vc, vh, vw = T.axis.remap("SSSS", [n, c, h, v])
                extra[vn, vc, vh, vw] = READ[vn, vc, vh, vw] * T.float32(2.0)
"""


@pytest.mark.parametrize("read", ["conv", "added"])
def test_stage_read_after_the_epilogue_is_still_written(read, schedule_target):
    """An elementwise stage is fused only when nothing after it reads what it replaces."""
    (func,) = parse(_READ_AFTER.replace("READ", read)).prim_funcs().values()
    scheduled = default_cpu_schedule(func)
    written = {store.buffer.name for store in collect(scheduled.body, tir.BufferStore) if store.buffer.scope != "local"}
    assert read in written
    assert (read == "added") == ("conv" not in written)  # conv + add fused when only `added` is read later
    inputs, outputs = _run_both({"kernel": func}, target=schedule_target)
    conv = _reference(*inputs[:2], 0.0, 1, 0, 1, epilogue=False)
    bias = conv + inputs[2]
    np.testing.assert_allclose(outputs[3], np.maximum(bias, 0), **TOLERANCE)
    np.testing.assert_allclose(outputs[4], 2 * (conv if read == "conv" else bias), **TOLERANCE)


@pytest.mark.parametrize("case", [(1, 16, 32, 16, 3, 1, 1, 1), (2, 3, 16, 32, 5, 2, 2, 1), (1, 8, 16, 20, 3, 1, 2, 2),
                                  (1, 3, 16, 30, 3, 1, 1, 1)],
                         ids=lambda c: "n{}c{}o{}s{}k{}st{}p{}d{}".format(*c))
def test_padded_rows_are_padded_by_the_chunk_that_reads_them(case, schedule_target):
    """A padded NCHW conv2d runs in parallel over chunks of output rows, each padding its own input
    rows on its stack (conv2d_rows.py): the shared padded buffer is never written, and the
    results (border chunks, a last chunk of fewer rows, strides, dilations) match numpy."""
    batch, channels, out_channels, size, kernel, stride, pad, dilation = case
    funcs = _conv_module(*case)
    (func,) = funcs.values()
    scheduled = default_cpu_schedule(func)
    written = {store.buffer.name for store in collect(scheduled.body, tir.BufferStore) if store.buffer.scope != "local"}
    assert not any(name.startswith("pad_temp") for name in written), written
    (parallel,) = _parallel_loops(scheduled)
    assert "pad_temp_rows" in _local_buffers_under(parallel.body)
    inputs, outputs = _run_both(funcs, target=schedule_target)
    expected = _reference(*inputs[:3], stride, pad, dilation, epilogue=True)
    np.testing.assert_allclose(outputs[-1], expected, **TOLERANCE)


@pytest.mark.parametrize("case", [(1, 64, 8, 64, 3, 1, 1, 1), (1, 64, 64, 5, 3, 1, 1, 1), (1, 3, 7, 13, 3, 1, 2, 2)],
                         ids=["rows-too-big", "one-chunk", "serial"])
def test_convolutions_unfit_for_row_chunks_share_one_padded_buffer(case):
    """Input rows too big for a chunk's stack buffer, too few output rows for two chunks, or too
    little work to run in parallel: the padded buffer is written once, before the convolution."""
    (func,) = _conv_module(*case).values()
    scheduled = default_cpu_schedule(func)
    written = {store.buffer.name for store in collect(scheduled.body, tir.BufferStore) if store.buffer.scope != "local"}
    assert "pad_temp" in written
    assert not any(name.endswith("_rows") for name in _local_buffers_under(scheduled.body))


def _padded_conv(channels: int, height: int, width: int, out_channels: int, out_rows: int,
                 row: str = "vh + vry", pad_is_parameter: bool = False) -> str:
    """TIR of a 1-padded input (height x width) and a 3x3 convolution reading it at row index `row`."""
    pad_shape = (1, channels, height + 2, width + 2)
    pad = f'pad: T.Buffer({pad_shape}, "float32"), ' if pad_is_parameter else ""
    allocated = "" if pad_is_parameter else f"pad = T.alloc_buffer({pad_shape})"
    return f"""
@I.ir_module
class Module:
    @T.prim_func
    def kernel(x: T.Buffer((1, {channels}, {height}, {width}), "float32"),
               w: T.Buffer(({out_channels}, {channels}, 3, 3), "float32"), {pad}
               out: T.Buffer((1, {out_channels}, {out_rows}, {width}), "float32")):
        {allocated}
        for n, c, h, v in T.grid({', '.join(map(str, pad_shape))}):
            with T.block("pad"):
                vn, vc, vh, vw = T.axis.remap("SSSS", [n, c, h, v])
                pad[vn, vc, vh, vw] = T.if_then_else(1 <= vh and vh < {height + 1} and 1 <= vw and vw < {width + 1},
                                                     x[vn, vc, vh - 1, vw - 1], T.float32(0.0))
        for n, c, h, v, rc, ry, rx in T.grid(1, {out_channels}, {out_rows}, {width}, {channels}, 3, 3):
            with T.block("conv"):
                vn, vc, vh, vw, vrc, vry, vrx = T.axis.remap("SSSSRRR", [n, c, h, v, rc, ry, rx])
                with T.init():
                    out[vn, vc, vh, vw] = T.float32(0.0)
                out[vn, vc, vh, vw] = out[vn, vc, vh, vw] + pad[vn, vrc, {row}, vw + vrx] * w[vc, vrc, vry, vrx]
"""


@pytest.mark.parametrize("row,span", [("vh + vry", 6), ("vh * 2 + vry * 2", 11), ("vh + vh * vry", None)],
                         ids=["linear", "strided-dilated", "product"])
def test_row_chunks_take_rows_linear_in_the_output_row_and_the_window(row, span):
    """A chunk's buffer holds the padded rows its output rows read; a row index with a product of
    two iterators (not what legalization writes) has no such span, and keeps the shared buffer."""
    from relax.tir.schedule import conv2d_rows

    (func,) = parse(_padded_conv(2, 20, 8, 8, 8, row)).prim_funcs().values()
    statements, _ = top_level(func.body)
    pad, nest = statements[0], match_nest(statements[1])
    chunks = conv2d_rows.row_chunks(conv2d._match(nest), pad, 4, [])
    assert (chunks and chunks.span(4)) == span


def test_a_padded_buffer_passed_in_is_still_written(schedule_target):
    """The padded copy is a parameter the caller reads: no chunk may leave it unwritten."""
    (func,) = parse(_padded_conv(8, 32, 32, 16, 32, pad_is_parameter=True)).prim_funcs().values()
    scheduled = default_cpu_schedule(func)
    written = {store.buffer.name for store in collect(scheduled.body, tir.BufferStore) if store.buffer.scope != "local"}
    assert {"pad", "out"} <= written
    inputs, outputs = _run_both({"kernel": func}, target=schedule_target)
    np.testing.assert_array_equal(outputs[2], np.pad(inputs[0], ((0, 0), (0, 0), (1, 1), (1, 1))))
    expected = _reference(*inputs[:2], 0.0, 1, 1, 1, epilogue=False)
    np.testing.assert_allclose(outputs[3], expected, **TOLERANCE)
