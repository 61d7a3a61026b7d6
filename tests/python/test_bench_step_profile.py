"""bench/micro/bert_step_profile.py keeps working: phases and per-kernel rows."""
import symtrace as st


def test_step_profile_tiny(capsys):
    from bench.micro.bert_step_profile import main
    backend = "llvm" if st._C._fe_backend_available("llvm") else "interp"
    main(["--config", "tiny", "--batch-size", "2", "--seq-len", "16", "--steps", "4",
          "--kernels", "--top", "3", "--backend", backend])
    out = capsys.readouterr().out
    assert "forward" in out and "backward" in out and "opt.step" in out
    assert "kernel launches per step" in out
    rows = [ln for ln in out.splitlines() if "ms/step" in ln and "calls/step" in ln]
    assert len(rows) == 3


def test_step_memory_first_step_like_the_others(capsys):
    """--memory: per-phase peaks of the translated first step and of the last.
    The first step runs eagerly under the trace; it must not keep every
    intermediate alive (runtime/trace.c's sweep): its forward grows the
    allocation about as much as a compiled step's (1.2x here; 1.9x without
    the sweep)."""
    import re
    from bench.micro.bert_step_profile import main
    backend = "llvm" if st._C._fe_backend_available("llvm") else "interp"
    main(["--config", "tiny", "--batch-size", "8", "--seq-len", "64", "--steps", "4",
          "--memory", "--backend", backend])
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.startswith("memory, step")]
    assert len(lines) == 2, out
    grow = []
    for ln in lines:
        start = float(re.search(r"start ([\d.]+) MB", ln).group(1))
        fwd_peak = float(re.search(r"forward peak ([\d.]+)", ln).group(1))
        grow.append(fwd_peak - start)
        assert "backward peak" in ln and "opt.step peak" in ln
    assert 0 < grow[0] <= 1.5 * grow[1], lines
