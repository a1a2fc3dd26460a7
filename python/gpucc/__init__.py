"""gpucc: author tensor graphs in Python and run them on gpucc.

    from gpucc import Graph

    def show(result):
        print(result["backend"], result["outputs"]["values"]["data"])

    g = Graph()
    a = g.tensor([-2, 3, 4])
    b = g.tensor([10, 20, 30])
    g.submit(show, values=(a * b).relu())   # [0, 60, 120]

With $GPUCC_URL (or Graph(url=...)) the graph runs on a gpucc serve; as a
guest in the browser, on the page's host; with neither, on cpu-python,
gpucc's reference in pure Python, with the same float32 rounding and the
same bits. compile(fn) and compile(step, training=True) record a forward
pass or one SGD step (see compile.py).
"""

from .errors import GPUCCError
from .graph import Graph, Tensor
from .transport import Pending, wait_all, CPU_PYTHON
from .compile import compile, Parameter, Array

__all__ = ["Graph", "Tensor", "GPUCCError", "Pending", "wait_all", "compile", "Parameter", "Array", "CPU_PYTHON"]
__version__ = "0.1.0"
