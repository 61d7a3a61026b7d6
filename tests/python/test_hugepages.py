# CPU blocks of 4 MiB and more are 2 MiB aligned and advised as transparent
# huge pages (runtime/device_cpu.c); SYMTRACE_HUGEPAGES=0 turns that off.
# Whether the kernel then backs them with huge pages is its choice (THP
# "madvise" or "always", free memory): checked only where smaps says so.
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import symtrace as st

CODE = """
import re, symtrace as st
x = st.zeros(1024, 2048)          # 8 MiB: a block of its own
x.add_(1.0)
kb = sum(int(m) for m in re.findall("AnonHugePages: +([0-9]+) kB", open("/proc/self/smaps").read()))
print(x.data_ptr() % (2 << 20), kb, float(x.sum()))
"""


def run(env_value):
    env = dict(os.environ)
    env.pop("SYMTRACE_HUGEPAGES", None)
    if env_value is not None:
        env["SYMTRACE_HUGEPAGES"] = env_value
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    return int(out[0]), int(out[1]), float(out[2])


def test_big_blocks_are_2mib_aligned_and_advised():
    if not sys.platform.startswith("linux"):
        return
    align, huge_kb, total = run(None)
    assert align == 0
    assert total == 1024 * 2048
    thp = "/sys/kernel/mm/transparent_hugepage/enabled"
    mode = open(thp).read() if os.path.exists(thp) else ""
    off_align, off_kb, off_total = run("0")
    assert off_total == total
    if "[madvise]" not in mode and "[always]" not in mode:
        pytest.skip("transparent huge pages are off on this kernel")
    if huge_kb == 0:
        pytest.skip("the kernel backed no huge pages (none free)")
    assert huge_kb >= 4096  # most of the 8 MiB block (kB)
    if "[madvise]" in mode:  # only advised ranges get them
        assert off_kb == 0


def test_values_unchanged_with_big_blocks():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1500, 1024)).astype(np.float32)   # ~6 MiB
    b = rng.standard_normal((1024, 64)).astype(np.float32)
    np.testing.assert_allclose((st.tensor(a) @ st.tensor(b)).numpy(), a @ b, rtol=1e-4, atol=1e-3)
