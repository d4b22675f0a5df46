# SPDX-License-Identifier: Apache-2.0
"""Writes a copy of an exported loss model with another batch size.

Usage: rebatch_model.py IN.onnx OUT.onnx BATCH

The shipped exports have a fixed batch (2): the graph inputs are [2, T] and
the reshape targets the exporter folded into int64 constants start with 2.
This rewrites the leading dim of every graph input and of every int64
shape constant of rank-1 length >= 3 whose first entry is the old batch
(the [B, T, ...] reshape targets), and drops value_info (shape hints of the
old batch). Used to compare gradient accumulation over micro-batches of B
against one step on a batch of N * B; a wrong rewrite makes that comparison
fail rather than pass.
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    src, dst, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
    model = onnx.load(src)
    graph = model.graph
    old = graph.input[0].type.tensor_type.shape.dim[0].dim_value
    for value in graph.input:
        dims = value.type.tensor_type.shape.dim
        assert dims[0].dim_value == old, f"input {value.name}: batch {dims[0]} != {old}"
        dims[0].dim_value = batch
    for value in graph.output:
        dims = value.type.tensor_type.shape.dim
        if len(dims) and dims[0].dim_value == old:
            dims[0].dim_value = batch
    del graph.value_info[:]

    def rewrite(tensor):
        array = numpy_helper.to_array(tensor)
        if array.dtype != np.int64 or array.ndim != 1 or array.size < 3 or array[0] != old:
            return None
        array = array.copy()
        array[0] = batch
        return numpy_helper.from_array(array, tensor.name)

    count = 0
    for i, init in enumerate(graph.initializer):
        new = rewrite(init)
        if new is not None:
            graph.initializer[i].CopyFrom(new)
            count += 1
    for node in graph.node:
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value":
                    new = rewrite(attr.t)
                    if new is not None:
                        attr.t.CopyFrom(new)
                        count += 1
    onnx.save(model, dst)
    print(f"rebatched {src} from {old} to {batch} ({count} shape constants)")


if __name__ == "__main__":
    main()
