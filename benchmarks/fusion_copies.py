"""What XLA:CPU's fusion pass copies: a query's instructions before the pass against those inside its
fusions after it, per jaxgjk source line.

    python -m benchmarks.fusion_copies capsule-box 0 sep signed_distance [--general] [--top 25] [--depth 2]

Arguments as `benchmarks.op_profile`'s (case kind, polytope vertex count or 0, sep or pen, query),
on 4 096 pairs (the counts do not depend on the batch size); `--depth` names up to that many jaxgjk
frames per line, innermost first (a helper's callers). The pass copies a cheap elementwise
expression into every fusion that reads it, so each of a value's readers recomputes its whole chain
(`_vector.computed_once`). Where one source line's instructions grow several times through the
pass, its value is read by many fusions: computing it once, or reading an index computed once
instead of the values it picks from, is the candidate fix. Measure the fix with
`benchmarks.ab_inprocess`: a value computed once costs a store and a load, and some do not pay.

XLA dumps the program before and after the pass (`--xla_dump_hlo_pass_re=^fusion$`) into a
temporary directory; the flag must be set before XLA starts, so this module sets it on import. As in
`op_profile --by-source`, the queries' inlined `jax.jit`s are traced inline for whole stacks.
"""

import os
import tempfile

DUMP = tempfile.mkdtemp(prefix="jaxgjk-fusion-copies-")
os.environ["XLA_FLAGS"] = " ".join(filter(None, [
    os.environ.get("XLA_FLAGS"), f"--xla_dump_to={DUMP}", "--xla_dump_hlo_pass_re=^fusion$",
    "--xla_dump_hlo_module_re=jit_one_pair"]))

import collections  # noqa: E402 (XLA's flags first)
import glob  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

import jaxgjk as jg  # noqa: E402
import jaxgjk._gate  # noqa: E402

from . import cases as C  # noqa: E402
from .op_profile import operation_sources, scenario_parser  # noqa: E402

PAIRS = 4096
# Instructions that compute nothing: the counts leave them out.
_NOT_WORK = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "fusion"}


def instructions_by_source(hlo: str, depth: int = 1) -> collections.Counter:
    """{jaxgjk source line: number of instructions} of an HLO module's text (every computation, fused
    ones included; `op_profile.operation_sources` names each instruction's line, to `depth` frames)."""
    sources = operation_sources(hlo, depth)
    counts = collections.Counter()
    for line in hlo.splitlines():
        match = re.match(r"\s+(?:ROOT )?%(\S+) = \S+ ([\w-]+)\(", line)
        if match and match.group(2) not in _NOT_WORK:
            counts[sources.get(match.group(1)) or "?"] += 1
    return counts


def main():
    parser = scenario_parser(__doc__.splitlines()[0], 25)
    parser.add_argument("--depth", type=int, default=1)
    options = parser.parse_args()
    jaxgjk._gate.traced_once = lambda compute: compute
    config = jg.Config(specialised=not options.general)
    case = C.make_case(options.kind, PAIRS, options.mode == "pen", seed=0,
                       **({"n_vertices": options.n_vertices} if options.n_vertices else {}))
    pairs = C.jaxgjk_pairs(case, convert=lambda x: np.asarray(x, np.float32))

    def one_pair(*pair):
        return getattr(jg, options.query)(*pair, config=config)

    try:
        jax.jit(jax.vmap(one_pair)).lower(*pairs).compile()
        (before,) = glob.glob(f"{DUMP}/*before_fusion.txt")
        (after,) = glob.glob(f"{DUMP}/*after_fusion*.txt")
        counts = [instructions_by_source(open(path).read(), options.depth) for path in (before, after)]
    finally:
        shutil.rmtree(DUMP, ignore_errors=True)
    total_before, total_after = (sum(count.values()) for count in counts)
    print(f"{options.kind}/{options.n_vertices} {options.mode} {options.query}, {PAIRS} pairs: "
          f"{total_before} instructions before the fusion pass, {total_after} inside fusions after it "
          f"({total_after / total_before:.2f}x)")
    grown = sorted(counts[1], key=lambda source: counts[0][source] - counts[1][source])
    for source in grown[:options.top]:
        print(f"  +{counts[1][source] - counts[0][source]:6d}  {counts[0][source]:6d} -> "
              f"{counts[1][source]:6d}  {source}")


if __name__ == "__main__":
    main()
