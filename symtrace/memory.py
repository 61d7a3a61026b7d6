"""Caching allocator statistics (as torch.cuda.memory_* for each device)."""
from . import _C


def stats(device="cpu"):
    """Allocator statistics: allocated/reserved/peak bytes, allocation counts, cache hits."""
    return _C.memory_stats(str(device))


def memory_allocated(device="cpu"):
    return stats(device)["allocated_bytes"]


def max_memory_allocated(device="cpu"):
    return stats(device)["peak_allocated_bytes"]


def max_memory_requested(device="cpu"):
    """Peak of the bytes callers asked for since the last reset_peak_stats (torch's
    memory_stats()["requested_bytes.all.peak"]): unlike max_memory_allocated it does not
    count the cache's rounding, so it does not depend on the allocations made before."""
    return stats(device)["peak_requested_bytes"]


def memory_reserved(device="cpu"):
    return stats(device)["reserved_bytes"]


def max_memory_reserved(device="cpu"):
    return stats(device)["peak_reserved_bytes"]


def empty_cache(device="cpu"):
    """Returns every fully free cached segment to the system."""
    _C.empty_cache(str(device))


def reset_peak_stats(device="cpu"):
    _C.reset_peak_stats(str(device))


def _check(device="cpu"):
    """Raises if the allocator's invariants are broken (for tests)."""
    _C._alloc_check(str(device))


class MemoryEstimate:
    """The static memory plan of a compiled graph for given inputs, per
    kernel: `live` (liveness: each intermediate from its birth to its last
    use), `estimated` (what the runtime holds: the arena the intermediates
    are packed into, for the whole run, plus the outputs made so far) and,
    with measured=True, `actual`: the caching allocator's real bytes before
    each kernel. All columns exclude the inputs. As in seeds/004."""

    def __init__(self, plan, rows=None):
        self.plan = plan
        self.rows = rows

    @property
    def peak_estimated(self):
        return self.plan["peak_bytes"] - self.plan["input_bytes"]

    @property
    def peak_live(self):
        return self.plan["peak_live_bytes"] - self.plan["input_bytes"]

    @property
    def peak_measured(self):
        return max(r[3] for r in self.rows) if self.rows else None

    def __str__(self):
        p = self.plan
        lines = [f"memory estimate: inputs {p['input_bytes']} B, arena {p['arena_bytes']} B, "
                 f"outputs {p['output_bytes']} B, peak {p['peak_bytes']} B "
                 f"(liveness peak {p['peak_live_bytes']} B)"]
        if self.rows:
            lines.append(f"{'op':<36}{'live':>12}{'estimated':>12}{'actual':>12}")
            for name, live, est, act in self.rows:
                lines.append(f"{name[:35]:<36}{live:>12}{est:>12}{act:>12}")
            lines.append(f"{'peak':<36}{self.peak_live:>12}{self.peak_estimated:>12}"
                         f"{self.peak_measured:>12}")
        else:
            lines.append(f"{'op':<36}{'live':>12}{'estimated':>12}")
            base = p["input_bytes"]
            for name, live, res in p["kernels"]:
                lines.append(f"{name[:35]:<36}{live - base:>12}{res - base:>12}")
        return "\n".join(lines)

    __repr__ = __str__


def trace_graph(fn, *args, candidates=()):
    """Runs fn(*args) eagerly while capturing its ops into a StatementIR
    graph; returns (Graph, inputs) with inputs the tensors the graph takes,
    in order (args, parameters and other tensors fn read). An input that is
    one of args or candidates (e.g. a model's parameters) comes back as
    that very object."""
    _C._trace_begin()
    try:
        out = fn(*args)
    except BaseException:
        _C._trace_abort()
        raise
    outs = out if isinstance(out, (tuple, list)) else (out,)
    cands = tuple(candidates) + tuple(a for a in args if isinstance(a, _C.TensorBase))
    cap, inputs = _C._trace_end(tuple(outs), cands)
    return _C.Graph(cap), tuple(inputs)


def estimate(graph, *inputs, measured=False, backend=None):
    """estimate(fn_or_graph, *inputs, measured=False) -> MemoryEstimate.

    graph is a function (traced on inputs into a graph), a symtrace._C.Graph
    (compiled here with backend) or a CompiledGraph; inputs are tensors for
    it (their sizes decide the plan). measured=True also runs the graph and
    records the allocator before each kernel."""
    if callable(graph) and not isinstance(graph, (_C.Graph, _C.CompiledGraph)):
        graph, inputs = trace_graph(graph, *inputs)
    if isinstance(graph, _C.Graph):
        cg = graph.compile(backend=backend) if backend else graph.compile()
    else:
        cg = graph
    plan = cg.plan(*inputs)
    rows = None
    if measured:
        _, rows = cg.run(*inputs, trace=True)
    return MemoryEstimate(plan, rows)
