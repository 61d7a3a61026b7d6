"""symtrace.backends.cpu: the CPU's vector capability, named as torch names it."""
import platform

__all__ = ["get_cpu_capability"]


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def get_cpu_capability():
    """get_cpu_capability() -> str: "AVX512" (avx512f/vl/bw/dq and fma), "AVX2" (avx2 and fma) or
    "DEFAULT" on x86-64, from /proc/cpuinfo's flags as torch's dispatch decides; "DEFAULT" elsewhere."""
    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686"):
        return "DEFAULT"
    fl = _cpu_flags()
    if {"avx512f", "avx512vl", "avx512bw", "avx512dq", "fma"} <= fl:
        return "AVX512"
    if {"avx2", "fma"} <= fl:
        return "AVX2"
    return "DEFAULT"
