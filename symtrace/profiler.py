"""Profiler (torch.profiler's names): the wall time of every kernel launch,
summed per compiled kernel (torch.profiler's key_averages, for symtrace's own
kernels), plus the user's record_function ranges, a step schedule
(schedule / ProfilerAction / profile.step) and chrome-trace export
(export_chrome_trace, tensorboard_trace_handler).

    with symtrace.profiler.profile() as prof:
        step()
    print(prof.table())

    with symtrace.profiler.profile(schedule=symtrace.profiler.schedule(wait=1, warmup=1, active=2),
                                   on_trace_ready=symtrace.profiler.tensorboard_trace_handler("log")) as p:
        for batch in data:
            train(batch)
            p.step()

`SYMTRACE_PROFILE=1` in the environment profiles the whole process and prints
the table to stderr at exit. CPU launches are synchronous, so a row's time is
the kernel's; on CUDA it is the time to enqueue. record_function ranges are
host wall time; kernels carry no timestamps, so the chrome trace holds the
ranges as events and the kernel rows as a summary ("symtraceKernels").

`SYMTRACE_PROFILE_CLOCK=cpu` (read at the first launch) times kernels in CPU time
instead of wall time, steady on a loaded host: the launching thread's
CLOCK_THREAD_CPUTIME_ID over the launch plus the CPU time the thread pool's workers
spent in the kernel's chunks."""
import contextlib
import enum
import functools
import gzip
import json
import os
import threading
import time
import warnings

from . import _C

__all__ = ["profile", "KernelRow", "record_function", "schedule", "ProfilerAction", "ProfilerActivity",
           "tensorboard_trace_handler", "supported_activities"]


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


class RecordEvent:
    """One record_function range: name, start and end (ns, time.perf_counter_ns) and thread id."""
    __slots__ = ("name", "start_ns", "end_ns", "thread")

    def __init__(self, name, start_ns, end_ns, thread):
        self.name, self.start_ns, self.end_ns, self.thread = name, start_ns, end_ns, thread

    @property
    def duration_ms(self):
        return (self.end_ns - self.start_ns) / 1e6

    def __repr__(self):
        return f"RecordEvent({self.name!r}, {self.duration_ms:.3f} ms)"


class ProfilerActivity(enum.Enum):
    """The kinds of activity a profile may record, as torch's (symtrace records its own
    kernels on whichever device runs them)."""
    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


def supported_activities():
    """supported_activities() -> set of ProfilerActivity: CPU, and CUDA when a GPU is there."""
    from . import cuda
    acts = {ProfilerActivity.CPU}
    if cuda.is_available():
        acts.add(ProfilerActivity.CUDA)
    return acts


class ProfilerAction(enum.Enum):
    """What a profile does at a step (torch.profiler.ProfilerAction)."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0) -> fn(step)
    -> ProfilerAction: after skip_first steps, cycles of wait NONE, warmup WARMUP and active
    RECORD steps (the last RECORD_AND_SAVE), repeat times (0: forever), as torch's."""
    def schedule_fn(step):
        if step < 0:
            raise ValueError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError(f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
                         f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
                         f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_):
    return ProfilerAction.RECORD


# the profiles recording now (record_function adds its ranges to each)
_RECORDING = []
_LOCK = threading.Lock()


class record_function(contextlib.ContextDecorator):
    """record_function(name, args=None): context manager or decorator labelling a range of
    host code; profiles recording at the time keep it as a RecordEvent (nothing is kept
    when none records)."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._start = None

    def __enter__(self):
        self._start = time.perf_counter_ns() if _RECORDING else None
        return self

    def __exit__(self, *exc):
        if self._start is not None and _RECORDING:
            ev = RecordEvent(self.name, self._start, time.perf_counter_ns(), threading.get_ident())
            with _LOCK:
                for p in _RECORDING:
                    p._record_events.append(ev)
        self._start = None
        return False


class profile:
    """profile(*, activities=None, schedule=None, on_trace_ready=None, ...): records the
    kernel launches (rows) and record_function ranges (events()) while active, as
    torch.profiler.profile. Without a schedule it records from enter to exit; with one,
    step() advances it and on_trace_ready(prof) runs after each RECORD_AND_SAVE step.
    record_shapes, profile_memory, with_stack, with_flops, with_modules,
    experimental_config, execution_trace_observer, custom_trace_id_callback and
    post_processing_timeout_s are accepted and have no effect."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None,
                 custom_trace_id_callback=None, post_processing_timeout_s=None):
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead", FutureWarning,
                          stacklevel=2)
        self.activities = set(activities) if activities is not None else supported_activities()
        self.rows = []
        self._record_events = []
        self._was = False
        self._recording = False
        self._t0 = None
        self.acc_events = acc_events
        self.on_trace_ready = on_trace_ready
        if schedule:
            self.schedule = schedule
            self.record_steps = True
        else:
            self.schedule = _default_schedule_fn
            self.record_steps = False
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        if self.current_action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler and must not be "
                             "returned by a user-provided schedule")
        self.step_rec_fn = None
        A = ProfilerAction
        self.action_map = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): [functools.partial(warnings.warn, "Incorrect schedule: WARMUP followed by NONE"),
                                 self.start_trace, self.stop_trace],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [functools.partial(warnings.warn, "Incorrect schedule: RECORD followed by NONE"),
                                 self.stop_trace],
            (A.RECORD, A.WARMUP): [functools.partial(warnings.warn,
                                                     "Incorrect schedule: RECORD followed by WARMUP"),
                                   self.stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self.stop_trace, self._trace_ready, self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [self.stop_trace, self._trace_ready, self.prepare_trace,
                                            self.start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [self.stop_trace, self._trace_ready, self.prepare_trace,
                                                     self.start_trace],
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
        }

    # ---- the schedule ----
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self):
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)

    def step(self):
        """Signals that the next step starts: the schedule's action for it takes effect."""
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev_action = self.current_action
        action = self.schedule(self.step_num + 1)
        if action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler and must not be "
                             "returned by a user-provided schedule")
        self.step_num += 1
        self.current_action = action
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def _transit_action(self, prev_action, current_action):
        for action in self.action_map.get((prev_action, current_action), ()):
            action()

    def _trace_ready(self):
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def prepare_trace(self):
        """Starts a cycle: the previous cycle's rows and events go (unless acc_events)."""
        if not self.acc_events:
            self.rows = []
            self._record_events = []

    def start_trace(self):
        """Turns recording on (kernel launches and record_function ranges)."""
        if self._recording:
            return
        self._was = _env_on()
        if self._t0 is None:
            self._t0 = time.perf_counter_ns()
        _C._rt_profile_reset()
        _C._rt_profile(True)
        self._recording = True
        with _LOCK:
            _RECORDING.append(self)

    def stop_trace(self):
        """Turns recording off and keeps the kernel rows of the cycle."""
        if not self._recording:
            return
        with _LOCK:
            _RECORDING.remove(self)
        self._recording = False
        rows = [KernelRow(*r) for r in _C._rt_profile(self._was)]
        if self.acc_events and self.rows:
            by = {(r.name, r.kind): r for r in self.rows}
            for r in rows:
                old = by.get((r.name, r.kind))
                if old is None:
                    self.rows.append(r)
                else:
                    old.calls += r.calls
                    old.total_ms += r.total_ms
            self.rows.sort(key=lambda r: -r.total_ms)
        else:
            self.rows = rows

    # ---- results ----
    def events(self):
        """The record_function ranges of the cycle (RecordEvent: name, start_ns, end_ns, thread)."""
        return list(self._record_events)

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
        if self._record_events:
            agg = {}
            for e in self._record_events:
                n, ms = agg.get(e.name, (0, 0.0))
                agg[e.name] = (n + 1, ms + e.duration_ms)
            lines.append(f"{'total ms':>10} {'calls':>7}  record_function")
            for name, (n, ms) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
                lines.append(f"{ms:10.2f} {n:7d}  {name}")
        return "\n".join(lines)

    def export_chrome_trace(self, path, use_python_export=False):
        """Writes the cycle as a chrome trace (JSON; gzipped when path ends in .gz): the
        record_function ranges as complete events, the kernel rows under "symtraceKernels"."""
        pid = os.getpid()
        t0 = self._t0 or 0
        evs = [{"ph": "X", "cat": "user_annotation", "name": e.name, "pid": pid, "tid": e.thread,
                "ts": (e.start_ns - t0) / 1e3, "dur": (e.end_ns - e.start_ns) / 1e3}
               for e in self._record_events]
        doc = {"traceEvents": evs, "displayTimeUnit": "ms",
               "symtraceKernels": [{"name": r.name, "kind": r.kind, "points": r.points, "calls": r.calls,
                                    "total_ms": r.total_ms} for r in self.rows]}
        data = json.dumps(doc).encode()
        if str(path).endswith(".gz"):
            with gzip.open(path, "wb") as f:
                f.write(data)
        else:
            with open(path, "wb") as f:
                f.write(data)
        return path


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False, use_python_export=False):
    """tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False) -> on_trace_ready
    handler writing each cycle to dir_name/<worker>.<time_ns>.pt.trace.json[.gz], as torch's."""
    import socket

    def handler_fn(prof):
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name = file_name + ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name), use_python_export=use_python_export)
    return handler_fn


def _env_on():
    v = os.environ.get("SYMTRACE_PROFILE", "")
    return bool(v) and v != "0"
