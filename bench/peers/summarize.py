#!/usr/bin/env python3
"""Summarizes bench/peers/run.sh logs: the best time per system and
workload over every round (ms), gpucc's ratios to the fastest peer, the
load the rounds ran under, and a check that every system computed the same
outputs (each line carries its output's position-weighted sum and absolute
sum, TestPeers' peerChecksum, from the same inputs: its peerFill).

    /usr/bin/python3 bench/peers/summarize.py LOG... [--only REGEXP]

Exits 1 if a system's output disagrees with gpucc's beyond 1e-4 of the
absolute sum (a different function, not rounding).
"""
import re
import sys

NATIVE_1T = ["numpy-1t", "ort-node-1t"]
NATIVE_ALL = NATIVE_1T + ["ort-node-2t"]
WASM = ["ort-web-1t", "tfjs-wasm-1t"]
ORDER = ["gpucc-native", "gpucc-native-1t", "gpucc-native-2t", "gpucc-wasm", "gpucc-webgpu"] + NATIVE_ALL + WASM


def main(argv):
    only = re.compile("")
    if "--only" in argv:
        i = argv.index("--only")
        only = re.compile(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    best, kern, sums, order, loads, skips, heads = {}, {}, {}, [], [], {}, []
    for path in argv:
        for line in open(path):
            line = line.rstrip("\n")
            if line.startswith("# round"):
                loads.append(float(line.split(" load ")[1].split()[0]))
            elif line.startswith("# ") and "cores" in line:
                heads.append(line[2:])
            f = line.split("\t")
            if f[0] == "skip" and len(f) >= 4:
                skips[(f[1], f[2])] = f[3]
            if f[0] != "peer" or len(f) < 6 or not only.search(f[2]):
                continue
            system, work, ms, s, a = f[1], f[2], float(f[3]), float(f[4]), float(f[5])
            if work not in order:
                order.append(work)
            key = (system, work)
            best[key] = min(best.get(key, float("inf")), ms)
            if len(f) > 6:  # gpucc's kernel time
                kern[key] = min(kern.get(key, float("inf")), float(f[6]))
            sums.setdefault(key, (s, a))
    systems = [s for s in ORDER if any(k[0] == s for k in best)]
    systems += sorted({k[0] for k in best} - set(systems))
    bad = []
    for w in order:
        ref = next((sums[(s, w)] for s in systems if s.startswith("gpucc-") and (s, w) in sums), None)
        if ref is None:
            continue
        for s in systems:
            if (s, w) in sums:
                got = sums[(s, w)]
                tol = 1e-4 * max(ref[1], 1e-30)
                if abs(got[0] - ref[0]) > tol or abs(got[1] - ref[1]) > tol:
                    bad.append("%s %s: sum %.9g |sum| %.9g, gpucc's %.9g %.9g" % (s, w, got[0], got[1], ref[0], ref[1]))
    for h in heads:
        print("<!-- %s -->" % h)
    if loads:
        print("Load average (1 min) at the start of each system's round: %.1f-%.1f (median %.1f), %d runs of a system."
              % (min(loads), max(loads), sorted(loads)[len(loads) // 2], len(loads)))
    print()
    kcols = [s for s in systems if any(k[0] == s for k in kern)]
    # gpucc's native system at one thread, and at every core when run so.
    n1 = "gpucc-native-1t" if "gpucc-native-1t" in systems else "gpucc-native"
    nall = "gpucc-native-2t" if "gpucc-native-2t" in systems else n1
    cols = systems + ["%s kernels" % s for s in kcols] + [
        "%s ÷ fastest 1-thread native peer" % n1, "%s ÷ fastest native peer" % nall, "wasm ÷ fastest wasm peer"]
    print("| workload, float32, ms | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))

    def ratio(sys_, peers, w):
        p = [best[(q, w)] for q in peers if (q, w) in best]
        if (sys_, w) not in best or not p:
            return "—"
        r = best[(sys_, w)] / min(p)
        q = min((q for q in peers if (q, w) in best), key=lambda q: best[(q, w)])
        return "%.2f× %s" % (r, q)

    for w in order:
        cells = ["%.3g" % best[(s, w)] if (s, w) in best else ("skip" if (s, w) in skips else "—") for s in systems]
        cells += ["%.3g" % kern[(s, w)] if (s, w) in kern else "—" for s in kcols]
        cells += [ratio(n1, NATIVE_1T, w), ratio(nall, NATIVE_ALL, w), ratio("gpucc-wasm", WASM, w)]
        print("| %s | %s |" % (w, " | ".join(cells)))
    for (s, w), why in sorted(skips.items()):
        if (s, w) not in best and only.search(w):
            print("\nskip: %s %s: %s" % (s, w, why), end="")
    print()
    if bad:
        print("\nOUTPUTS DISAGREE:\n" + "\n".join(bad))
        return 1
    print("\nEvery system's output agrees with gpucc's (weighted sum and absolute sum within 1e-4 of the absolute sum).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
