#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the ONNX backend node tests (model.onnx, test_data_set_*/*.pb)
under the directory given as the only argument, as onnx's own
`backend-test-tools generate-data` does, from the generators that Debian's
python3-onnx ships (without the data files). Each generator seeds numpy
with 0, so the inputs are the suite's canonical ones (see shared/onnx.md).

onnx 1.12 predates numpy 1.24, which removed np.float, np.int, np.bool and
np.object: they are aliased to the builtins first (no value changes).
"""
import os
import sys

import numpy as np

for _name, _alias in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _name not in np.__dict__:
        setattr(np, _name, _alias)

import onnx  # noqa: E402
import onnx.backend.test.case.node as node_test  # noqa: E402
from onnx import numpy_helper  # noqa: E402


def main(out):
    cases = node_test.collect_testcases(None)
    n = 0
    for case in cases:
        d = os.path.join(out, case.name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, "test_data_set_%d" % i)
            os.makedirs(ds, exist_ok=True)
            for kind, values, infos in (("input", inputs, case.model.graph.input),
                                        ("output", outputs, case.model.graph.output)):
                for j, v in enumerate(values):
                    if not infos[j].type.HasField("tensor_type"):
                        continue  # sequences, maps, optionals: gpucc refuses the model
                    with open(os.path.join(ds, "%s_%d.pb" % (kind, j)), "wb") as f:
                        f.write(numpy_helper.from_array(np.asarray(v), infos[j].name).SerializeToString())
        n += 1
    print("onnx %s: %d node tests written to %s" % (onnx.__version__, n, out))


if __name__ == "__main__":
    main(sys.argv[1])
