"""Which family module registers each operator, so that registry.get imports only the
families a build looks up. Written by `python scripts/op_family_index.py` (which imports
the families in order, each operator under the first whose import registers it);
testsuite/op/test_family_index.py checks it. An operator missing here still loads:
registry.get then imports every family."""

FAMILY_OPS = {
    "binary": (
        "relax.add", "relax.bitwise_and", "relax.bitwise_or", "relax.bitwise_xor", "relax.divide",
        "relax.equal", "relax.floor_divide", "relax.floor_mod", "relax.greater",
        "relax.greater_equal", "relax.left_shift", "relax.less", "relax.less_equal",
        "relax.logical_and", "relax.logical_or", "relax.logical_xor", "relax.maximum",
        "relax.minimum", "relax.mod", "relax.multiply", "relax.not_equal", "relax.power",
        "relax.right_shift", "relax.subtract",
    ),
    "unary": (
        "relax.abs", "relax.acos", "relax.acosh", "relax.asin", "relax.asinh", "relax.atan",
        "relax.atanh", "relax.bitwise_not", "relax.ceil", "relax.clip", "relax.cos", "relax.cosh",
        "relax.erf", "relax.exp", "relax.floor", "relax.isfinite", "relax.isinf", "relax.isnan",
        "relax.log", "relax.logical_not", "relax.negative", "relax.round", "relax.rsqrt",
        "relax.sigmoid", "relax.sign", "relax.sin", "relax.sinh", "relax.sqrt", "relax.square",
        "relax.tan", "relax.tanh", "relax.trunc",
    ),
    "activation": (
        "relax.nn.gelu", "relax.nn.gelu_tanh", "relax.nn.leakyrelu", "relax.nn.relu",
        "relax.nn.relu6", "relax.nn.silu", "relax.nn.softplus",
    ),
    "reduction": (
        "relax.argmax", "relax.argmin", "relax.collapse_sum_to", "relax.max", "relax.mean",
        "relax.min", "relax.prod", "relax.std", "relax.sum", "relax.variance",
    ),
    "normalization": (
        "relax.nn.layer_norm", "relax.nn.log_softmax", "relax.nn.rms_norm", "relax.nn.softmax",
    ),
    "linear_algebra": (
        "relax.linear", "relax.matmul",
    ),
    "manipulation": (
        "relax.broadcast_to", "relax.concat", "relax.expand_dims", "relax.flatten", "relax.flip",
        "relax.layout_transform", "relax.permute_dims", "relax.repeat", "relax.reshape",
        "relax.split", "relax.squeeze", "relax.stack", "relax.strided_slice", "relax.take",
        "relax.tile",
    ),
    "creation": (
        "relax.arange", "relax.astype", "relax.full", "relax.full_like", "relax.ones",
        "relax.ones_like", "relax.tril", "relax.triu", "relax.where", "relax.zeros",
        "relax.zeros_like",
    ),
    "call": (
        "relax.assert_op", "relax.builtin.alloc_tensor", "relax.call_builtin_with_ctx",
        "relax.call_dps_packed", "relax.call_pure_packed", "relax.call_py_func", "relax.call_tir",
        "relax.call_tir_inplace", "relax.device", "relax.hint_on_device", "relax.invoke_closure",
        "relax.invoke_pure_closure", "relax.make_closure", "relax.memory.alloc_storage",
        "relax.memory.alloc_tensor", "relax.memory.kill_storage", "relax.memory.kill_tensor",
        "relax.null_value", "relax.print", "relax.shape_of", "relax.shape_to_tensor",
        "relax.tensor_to_shape", "relax.to_vdevice", "relax.vm.alloc_storage",
        "relax.vm.alloc_tensor", "relax.vm.call_tir_dyn", "relax.vm.kill_object",
    ),
    "nn_conv": (
        "relax.nn.conv1d", "relax.nn.conv2d", "relax.nn.conv2d_transpose",
    ),
    "nn_conv_nd": (
        "relax.nn.conv1d_transpose", "relax.nn.conv3d", "relax.nn.conv3d_transpose",
    ),
    "nn_pool": (
        "relax.nn.adaptive_avg_pool2d", "relax.nn.avg_pool2d", "relax.nn.max_pool2d",
    ),
    "nn_pool_nd": (
        "relax.nn.adaptive_avg_pool1d", "relax.nn.adaptive_avg_pool3d", "relax.nn.avg_pool1d",
        "relax.nn.avg_pool3d", "relax.nn.max_pool1d", "relax.nn.max_pool3d",
    ),
    "nn_misc": (
        "relax.nn.dropout", "relax.nn.pad",
    ),
    "nn_norm": (
        "relax.nn.batch_norm", "relax.nn.group_norm",
    ),
    "nn_attention": (
        "relax.nn.attention", "relax.nn.attention_bias",
    ),
    "nn_loss": (
        "relax.nn.cross_entropy_with_logits", "relax.nn.nll_loss",
    ),
    "nn_instance_norm": (
        "relax.nn.instance_norm",
    ),
    "image": (
        "relax.image.resize2d",
    ),
    "image_3d": (
        "relax.image.resize3d",
    ),
    "image_grid": (
        "relax.image.affine_grid", "relax.image.grid_sample",
    ),
    "indexing": (
        "relax.cumprod", "relax.cumsum", "relax.einsum", "relax.gather_elements", "relax.one_hot",
        "relax.scatter_elements",
    ),
    "indexing_nd": (
        "relax.gather_nd", "relax.index_put", "relax.index_tensor", "relax.scatter_nd",
    ),
    "slice_update": (
        "relax.reverse_sequence", "relax.slice_scatter",
    ),
    "sorting": (
        "relax.argsort", "relax.dynamic_strided_slice", "relax.nonzero", "relax.sort", "relax.topk",
        "relax.unique",
    ),
    "math_ext": (
        "relax.atan2", "relax.ewise_fma", "relax.log_add_exp", "relax.nn.prelu", "relax.nn.selu",
        "relax.outer", "relax.size",
    ),
    "creation_ext": (
        "relax.eye", "relax.eye_like", "relax.hamming_window", "relax.meshgrid",
    ),
    "quantize": (
        "relax.dequantize", "relax.quantize",
    ),
    "tensor_ext": (
        "relax.bucketize", "relax.collapse_sum_like", "relax.median",
        "relax.multinomial_from_uniform", "relax.nn.batch_flatten", "relax.nn.pixel_shuffle",
    ),
    "tensor_inspect": (
        "relax.inspect.tensor_byte_offset", "relax.inspect.tensor_dtype_bits",
        "relax.inspect.tensor_dtype_code", "relax.inspect.tensor_dtype_lanes",
        "relax.inspect.tensor_elem_offset", "relax.inspect.tensor_ndim",
        "relax.inspect.tensor_shape_i", "relax.inspect.tensor_stride_i",
        "relax.memory.ensure_zero_offset", "relax.memory.view",
    ),
    "training": (
        "relax.builtin.stop_lift_params", "relax.call_inplace_packed", "relax.call_tir_with_grad",
        "relax.grad.end_checkpoint", "relax.grad.no_grad", "relax.grad.start_checkpoint",
        "relax.wrap_param",
    ),
    "grad_backward": (
        "relax.grad.avg_pool2d_backward", "relax.grad.max_pool2d_backward",
        "relax.grad.nll_loss_backward", "relax.grad.take_backward",
    ),
    "vision": (
        "relax.vision.get_valid_counts", "relax.vision.roi_align", "relax.vision.roi_pool",
    ),
    "vision_nms": (
        "relax.vision.non_max_suppression",
    ),
    "vision_detection": (
        "relax.vision.all_class_non_max_suppression", "relax.vision.multibox_transform_loc",
    ),
    "ccl": (
        "relax.ccl.allgather", "relax.ccl.allreduce", "relax.ccl.broadcast_from_worker0",
        "relax.ccl.scatter_from_worker0",
    ),
    "dist": (
        "relax.dist.annotate_sharding", "relax.dist.redistribute",
    ),
}

FAMILY_OF = {name: family for family, names in FAMILY_OPS.items() for name in names}
