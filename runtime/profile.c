/* runtime/profile.c - the kernel profiler. With SYMTRACE_PROFILE=1 in the
 * environment (or st_rt_profile_enable(true)) the executor times every
 * kernel launch; time is summed per (program, kernel) with the kernel's
 * name, kind and iteration size, and the table is printed to stderr at exit
 * (most time first) or read with st_rt_profile_get. CPU launches are
 * synchronous, so a launch's wall time is the kernel's; on CUDA it is the
 * enqueue only. SYMTRACE_PROFILE_CLOCK=cpu times launches with CPU time
 * instead (steady on a loaded host): the calling thread's
 * CLOCK_THREAD_CPUTIME_ID over the launch plus the CPU time the pool's
 * workers spent in its chunks (st_rt_profile_worker_cpu); a row counts the
 * calls that ran on workers, so the table says which rows were one thread.
 * Owns: st_rt_profile_*. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "st_runtime.h"

typedef struct {
    const void *prog;
    int kernel;
    char name[48];
    int kind;
    int64_t points;
    int64_t calls;
    int64_t par_calls; /* calls whose chunks also ran on pool workers */
    int64_t ns;
} prof_row;

static pthread_mutex_t prof_lock = PTHREAD_MUTEX_INITIALIZER;
static prof_row *rows;
static int nrows, caprows;
static int enabled = -1; /* -1: environment not read yet */
static int cpu_clock = -1; /* SYMTRACE_PROFILE_CLOCK=cpu; -1: not read yet */
/* this thread's pool jobs: the workers' CPU time in them, and how many */
static __thread int64_t worker_ns, worker_jobs;

static void print_at_exit(void);

bool st_rt_profile_on(void)
{
    if (enabled < 0) {
        const char *e = getenv("SYMTRACE_PROFILE");
        enabled = e && *e && strcmp(e, "0") != 0;
        if (enabled)
            atexit(print_at_exit);
    }
    return enabled > 0;
}

void st_rt_profile_enable(bool on)
{
    (void)st_rt_profile_on();
    enabled = on;
}

bool st_rt_profile_cpu_clock(void)
{
    if (cpu_clock < 0) {
        const char *e = getenv("SYMTRACE_PROFILE_CLOCK");
        cpu_clock = e && strcmp(e, "cpu") == 0;
    }
    return cpu_clock > 0;
}

void st_rt_profile_worker_cpu(int64_t ns)
{
    worker_ns += ns;
    worker_jobs++;
}

st_rt_profile_mark st_rt_profile_start(void)
{
    st_rt_profile_mark m = {0, 0};
    struct timespec ts;
    if (st_rt_profile_cpu_clock()) {
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        m.jobs = worker_jobs;
        m.t = worker_ns;
    } else {
        clock_gettime(CLOCK_MONOTONIC, &ts);
    }
    m.t += (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    return m;
}

void st_rt_profile_stop(const st_rt_profile_mark *m, const void *prog,
                        int kernel, const char *name, int kind, int64_t points)
{
    st_rt_profile_mark e = st_rt_profile_start();
    st_rt_profile_add(prog, kernel, name, kind, points, e.t - m->t,
                      e.jobs != m->jobs);
}

void st_rt_profile_add(const void *prog, int kernel, const char *name,
                       int kind, int64_t points, int64_t ns, bool par)
{
    pthread_mutex_lock(&prof_lock);
    int i;
    for (i = nrows - 1; i >= 0; i--)
        if (rows[i].prog == prog && rows[i].kernel == kernel &&
            rows[i].points == points)
            break;
    if (i < 0) {
        if (nrows == caprows) {
            int nc = caprows ? 2 * caprows : 256;
            prof_row *r = realloc(rows, sizeof *r * (size_t)nc);
            if (!r) {
                pthread_mutex_unlock(&prof_lock);
                return;
            }
            rows = r;
            caprows = nc;
        }
        i = nrows++;
        memset(&rows[i], 0, sizeof rows[i]);
        rows[i].prog = prog;
        rows[i].kernel = kernel;
        rows[i].kind = kind;
        rows[i].points = points;
        snprintf(rows[i].name, sizeof rows[i].name, "%s", name);
    }
    rows[i].calls++;
    rows[i].par_calls += par;
    rows[i].ns += ns;
    pthread_mutex_unlock(&prof_lock);
}

static int by_time(const void *a, const void *b)
{
    int64_t x = ((const prof_row *)a)->ns, y = ((const prof_row *)b)->ns;
    return x < y ? 1 : x > y ? -1 : 0;
}

int st_rt_profile_get(st_rt_profile_row *out, int cap)
{
    pthread_mutex_lock(&prof_lock);
    qsort(rows, (size_t)nrows, sizeof *rows, by_time);
    int n = nrows < cap ? nrows : cap;
    for (int i = 0; i < n; i++) {
        snprintf(out[i].name, sizeof out[i].name, "%s", rows[i].name);
        out[i].kind = rows[i].kind;
        out[i].points = rows[i].points;
        out[i].calls = rows[i].calls;
        out[i].par_calls = rows[i].par_calls;
        out[i].ns = rows[i].ns;
    }
    int total = nrows;
    pthread_mutex_unlock(&prof_lock);
    return total;
}

void st_rt_profile_reset(void)
{
    pthread_mutex_lock(&prof_lock);
    nrows = 0;
    pthread_mutex_unlock(&prof_lock);
}

static const char *kind_name(int k)
{
    switch (k) {
    case ST_K_ELEMENTWISE: return "elementwise";
    case ST_K_REDUCE: return "reduce";
    case ST_K_MATMUL: return "matmul";
    default: return "other";
    }
}

static void print_at_exit(void)
{
    enum { TOP = 60 };
    st_rt_profile_row r[TOP];
    int n = st_rt_profile_get(r, TOP);
    int64_t all = 0, kinds[4] = {0};
    pthread_mutex_lock(&prof_lock);
    for (int i = 0; i < nrows; i++) {
        all += rows[i].ns;
        if (rows[i].kind >= 0 && rows[i].kind < 4)
            kinds[rows[i].kind] += rows[i].ns;
    }
    pthread_mutex_unlock(&prof_lock);
    bool cpu = st_rt_profile_cpu_clock();
    fprintf(stderr, "symtrace profile: %d kernels, %.1f ms %s in launches "
            "(elementwise %.1f, reduce %.1f, matmul %.1f)\n", n,
            all / 1e6, cpu ? "CPU (calling thread + pool workers' chunks)" : "wall",
            kinds[ST_K_ELEMENTWISE] / 1e6,
            kinds[ST_K_REDUCE] / 1e6, kinds[ST_K_MATMUL] / 1e6);
    if (cpu)
        fprintf(stderr, "threads: 1 = every call ran on the calling thread "
                "alone, n = some calls' chunks also ran on pool workers\n");
    fprintf(stderr, "%10s %6s %8s %11s %12s %s  %s\n", "total ms", "%", "calls",
            "us/call", "points", cpu ? "threads" : "", "kernel");
    int shown = n < TOP ? n : TOP;
    for (int i = 0; i < shown; i++)
        fprintf(stderr, "%10.2f %6.1f %8lld %11.1f %12lld %s  %s (%s)\n",
                r[i].ns / 1e6, all ? 100.0 * r[i].ns / all : 0.0,
                (long long)r[i].calls, r[i].ns / 1e3 / r[i].calls,
                (long long)r[i].points,
                !cpu ? "" : r[i].par_calls ? "      n" : "      1",
                r[i].name, kind_name(r[i].kind));
}
