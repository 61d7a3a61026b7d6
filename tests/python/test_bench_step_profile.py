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
