"""The Relay op names TVM registers (apache/tvm, last Relay tree: RELAY_REGISTER_OP and the QNN registration
macros in src/relay), as a fact list.

A pattern table ported from TVM may name ops byoc does not implement (e.g. ``power``, ``fixed_point_multiply``):
``is_op`` gives those a pattern on an unregistered ``Op`` that no byoc graph can contain, so the table loads and
the entry offloads nothing, as it would on a TVM graph without that op. Names in neither list are typos and
still fail in ``is_op``."""

__all__ = ["TVM_OP_NAMES"]

TVM_OP_NAMES = frozenset("""
    abs acos acosh add adv_index all annotation.bitpack_end annotation.bitpack_start annotation.cast_hint
    annotation.checkpoint annotation.compiler_begin annotation.compiler_end annotation.stop_fusion
    annotation.with_funcid any arange argmax argmin argsort argwhere asin asinh atan atanh
    auto_scheduler_layout_transform bitwise_and bitwise_not bitwise_or bitwise_xor broadcast_to
    broadcast_to_like call_lowered cast cast_like ceil clip collapse_sum_like collapse_sum_to concatenate
    contrib_reverse_reshape copy cos cosh cumprod cumsum debug device_copy dft divide dyn.broadcast_to
    dyn.expand_dims dyn.full dyn.image.resize2d dyn.nn.pad dyn.nn.upsampling dyn.nn.upsampling3d dyn.one_hot
    dyn.ones dyn.reshape dyn.sparse_to_dense dyn.squeeze dyn.strided_slice dyn.tile dyn.topk dyn.zeros einsum
    equal erf exp expand_dims fast_erf fast_exp fast_tanh fixed_point_multiply fixed_point_multiply_per_axis
    floor floor_divide floor_mod full full_like gather gather_nd greater greater_equal image.affine_grid
    image.crop_and_resize image.dilation2d image.grid_sample image.resize1d image.resize2d image.resize3d
    invert_permutation isfinite isinf isnan layout_transform left_shift less less_equal log log10 log2
    logical_and logical_not logical_or logical_xor matrix_set_diag max maximum mean memory.alloc_storage
    memory.alloc_tensor memory.kill meshgrid meta_schedule_layout_transform min minimum mod multiply
    ndarray_size negative nn.adaptive_avg_pool1d nn.adaptive_avg_pool2d nn.adaptive_avg_pool3d
    nn.adaptive_max_pool1d nn.adaptive_max_pool2d nn.adaptive_max_pool3d nn.avg_pool1d nn.avg_pool2d
    nn.avg_pool2d_grad nn.avg_pool3d nn.batch_flatten nn.batch_matmul nn.batch_norm nn.batch_to_space_nd
    nn.bias_add nn.bitpack nn.bitserial_conv2d nn.bitserial_dense nn.contrib_conv2d_gemm_weight_transform
    nn.contrib_conv2d_gemm_without_weight_transform nn.contrib_conv2d_winograd_nnpack_weight_transform
    nn.contrib_conv2d_winograd_weight_transform nn.contrib_conv2d_winograd_without_weight_transform
    nn.contrib_conv3d_winograd_weight_transform nn.contrib_conv3d_winograd_without_weight_transform
    nn.contrib_dense_pack nn.conv1d nn.conv1d_transpose nn.conv2d nn.conv2d_backward_weight nn.conv2d_transpose
    nn.conv3d nn.conv3d_transpose nn.correlation nn.cross_entropy nn.cross_entropy_with_logits
    nn.deformable_conv2d nn.dense nn.depth_to_space nn.dilate nn.dropout nn.fast_softmax nn.fifo_buffer
    nn.global_avg_pool2d nn.global_max_pool2d nn.group_norm nn.instance_norm nn.internal.sparse_dense_padded
    nn.l2_normalize nn.layer_norm nn.leaky_relu nn.log_softmax nn.lrn nn.matmul nn.max_pool1d nn.max_pool2d
    nn.max_pool2d_grad nn.max_pool3d nn.mirror_pad nn.nll_loss nn.pad nn.prelu nn.relu nn.softmax
    nn.space_to_batch_nd nn.space_to_depth nn.sparse_add nn.sparse_conv2d nn.sparse_dense nn.sparse_transpose
    nn.upsampling nn.upsampling3d not_equal on_device one_hot ones ones_like power prod qnn.abs qnn.add
    qnn.avg_pool2d qnn.batch_matmul qnn.concatenate qnn.contrib_dense_pack qnn.conv2d qnn.conv2d_transpose
    qnn.dense qnn.dequantize qnn.erf qnn.exp qnn.hardswish qnn.leaky_relu qnn.log qnn.mul qnn.quantize
    qnn.requantize qnn.rsqrt qnn.sigmoid qnn.simulated_dequantize qnn.simulated_quantize qnn.softmax qnn.sqrt
    qnn.subtract qnn.tanh random.multinomial random.normal random.threefry_generate random.threefry_split
    random.uniform reinterpret relay.op.annotation.simulated_quantize repeat reshape reshape_like reverse
    reverse_sequence right_shift round rsqrt scatter_elements scatter_nd searchsorted sequence_mask shape_of
    sigmoid sign sin sinh slice_like sliding_window sort sparse_fill_empty_rows sparse_reshape sparse_to_dense
    split sqrt squeeze stack stft strided_set strided_slice subtract sum take tan tanh tile topk torch_op
    transpose trilu trunc trunc_divide trunc_mod unique unravel_index variance
    vision.all_class_non_max_suppression vision.get_valid_counts vision.multibox_prior
    vision.multibox_transform_loc vision.non_max_suppression vision.proposal vision.regular_non_max_suppression
    vision.roi_align vision.roi_pool vision.yolo_reorg vm.invoke_tvm_op vm.reshape_tensor vm.shape_of where
    zeros zeros_like
""".split())
