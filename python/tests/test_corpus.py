"""cpu-python gives cpuref's bits on gpucc's own test graphs: irtest's
suites, 128 random graphs over the whole op table, and every elementwise
op over hard and random operands (the corpus go test ./python writes)."""

import json
import unittest

from support import CORPUS, bits_of, load_corpus, same_bits

from gpucc import cpuref, ir


@unittest.skipUnless(CORPUS, "GPUCC_CORPUS is not set (go test ./python runs this suite with it)")
class CorpusTest(unittest.TestCase):
    def test_cpu_python_gives_cpurefs_bits(self):
        cases = load_corpus()
        self.assertGreater(len(cases), 100)
        ops = set()
        for c in cases:
            with self.subTest(case=c["name"]):
                nodes, outputs = ir.decode(c["graph"])
                ops.update(n.op for n in nodes)
                vals = cpuref.evaluate(nodes)
                for name, i in outputs:
                    got, want = bits_of(vals[i]), [int(b) for b in c["expect"][name]]
                    if not same_bits(got, want):
                        k = next(k for k in range(len(got)) if got[k] != want[k]) if len(got) == len(want) else -1
                        self.fail("%s output %s: element %d is %#010x, cpuref %#010x" % (
                            c["name"], name, k, got[k] if k >= 0 else 0, want[k] if k >= 0 else 0))
        for op in ir.WIRE_OPS:  # every op of the table was reached
            self.assertTrue(op in ops or op + "_scalar" in ops, "the corpus never reaches %s" % op)


if __name__ == "__main__":
    unittest.main()
