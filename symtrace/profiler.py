"""Kernel profiler: the wall time of every kernel launch, summed per compiled
kernel (torch.profiler's key_averages, for symtrace's own kernels).

    with symtrace.profiler.profile() as prof:
        step()
    print(prof.table())

`SYMTRACE_PROFILE=1` in the environment profiles the whole process and prints
the table to stderr at exit. CPU launches are synchronous, so a row's time is
the kernel's; on CUDA it is the time to enqueue."""
from . import _C

__all__ = ["profile", "KernelRow"]


class KernelRow:
    __slots__ = ("name", "kind", "points", "calls", "total_ms")

    def __init__(self, name, kind, points, calls, ns):
        self.name, self.kind, self.points, self.calls = name, kind, points, calls
        self.total_ms = ns / 1e6

    @property
    def us_per_call(self):
        return self.total_ms * 1e3 / self.calls if self.calls else 0.0

    def __repr__(self):
        return (f"KernelRow({self.name!r}, {self.kind}, points={self.points}, "
                f"calls={self.calls}, total_ms={self.total_ms:.3f})")


class profile:
    """Context manager: clears the profile, turns it on, and on exit turns it
    off (unless SYMTRACE_PROFILE had it on) and keeps the rows."""

    def __init__(self):
        self.rows = []
        self._was = False

    def __enter__(self):
        self._was = _env_on()
        _C._rt_profile_reset()
        _C._rt_profile(True)
        return self

    def __exit__(self, *exc):
        self.rows = [KernelRow(*r) for r in _C._rt_profile(self._was)]
        return False

    def total_ms(self, kind=None):
        return sum(r.total_ms for r in self.rows if kind is None or r.kind == kind)

    def table(self, top=30):
        lines = [f"{'total ms':>10} {'%':>6} {'calls':>7} {'us/call':>10} {'points':>12}  kernel"]
        all_ms = self.total_ms() or 1.0
        for r in self.rows[:top]:
            lines.append(f"{r.total_ms:10.2f} {100 * r.total_ms / all_ms:6.1f} {r.calls:7d} "
                         f"{r.us_per_call:10.1f} {r.points:12d}  {r.name} ({r.kind})")
        kinds = ", ".join(f"{k} {self.total_ms(k):.1f}" for k in ("elementwise", "reduce", "matmul"))
        lines.append(f"{len(self.rows)} kernels, {self.total_ms():.1f} ms in launches ({kinds})")
        return "\n".join(lines)


def _env_on():
    import os
    v = os.environ.get("SYMTRACE_PROFILE", "")
    return bool(v) and v != "0"
