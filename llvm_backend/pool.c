/* pool.c - the CPU thread pool of the LLVM backend: nproc - 1 worker
 * pthreads (SYMTRACE_NUM_THREADS overrides nproc) created on first use and
 * kept; a job is a range [0, total) cut into chunks that the workers and
 * the calling thread take with an atomic counter. One job at a time: a
 * caller that finds the pool busy (another thread's job) runs its range
 * inline. Idle workers poll for the next job for a while before they
 * sleep. A forked child starts its own. With the profiler's CPU clock
 * (SYMTRACE_PROFILE_CLOCK=cpu) the workers time their chunks with
 * CLOCK_THREAD_CPUTIME_ID and the caller hands the sum to the profiler
 * (its own share is in its thread's CPU time). Owns: st_llvm_pool_run,
 * st_llvm_pool_threads. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "llvm_internal.h"

static struct {
    pthread_once_t once;
    pthread_mutex_t submit;    /* held by the caller of the running job */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    int nworkers;
    uint64_t gen;              /* bumped per job */
    int active;                /* workers inside the current job */
    /* the job */
    st_llvm_task task;
    void *ctx;
    int64_t total, chunk, nchunks;
    atomic_llong next, finished;
    atomic_int result;
    atomic_llong worker_cpu_ns; /* the workers' chunk CPU time (profiler's CPU clock) */
} P = {.once = PTHREAD_ONCE_INIT, .submit = PTHREAD_MUTEX_INITIALIZER,
       .mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
       .done = PTHREAD_COND_INITIALIZER};

static int64_t thread_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* timed: a worker's chunks, timed for the profiler's CPU clock */
static void work(bool timed)
{
    for (;;) {
        int64_t c = atomic_fetch_add(&P.next, 1);
        if (c >= P.nchunks)
            return;
        int64_t lo = c * P.chunk, hi = lo + P.chunk;
        if (hi > P.total)
            hi = P.total;
        int64_t t0 = timed ? thread_cpu_ns() : 0;
        int32_t r = P.task(P.ctx, lo, hi);
        if (timed)
            atomic_fetch_add(&P.worker_cpu_ns, thread_cpu_ns() - t0);
        if (r != 0) {
            int z = 0;
            atomic_compare_exchange_strong(&P.result, &z, r);
        }
        atomic_fetch_add(&P.finished, 1);
    }
}

/* How long a worker polls for the next job before it sleeps: a step's
 * kernels come one after another (a compiled graph launches hundreds), and
 * a sleeping worker woke up 10-50 us late to each, leaving the caller to
 * run a short kernel's chunks alone. SYMTRACE_POOL_SPIN_US overrides (0:
 * sleep at once). */
#define SPIN_US 200

static int64_t spin_ns(void)
{
    static int64_t ns = -1;
    if (ns < 0) {
        const char *e = getenv("SYMTRACE_POOL_SPIN_US");
        long us = e && *e ? atol(e) : SPIN_US;
        ns = us > 0 ? (int64_t)us * 1000 : 0;
    }
    return ns;
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Polls (unlocked) until done(arg) or the budget is spent; the clock is
 * read every 64 polls. */
static void poll(bool (*done)(uint64_t), uint64_t arg, int64_t budget)
{
    int64_t end = now_ns() + budget;
    for (unsigned i = 1; !done(arg); i++) {
        relax();
        if ((i & 63) == 0 && now_ns() >= end)
            return;
    }
}

static bool job_after(uint64_t seen)
{
    return __atomic_load_n(&P.gen, __ATOMIC_ACQUIRE) != seen;
}

static bool chunks_done(uint64_t unused)
{
    (void)unused;
    return atomic_load(&P.finished) >= P.nchunks;
}

static void *worker(void *arg)
{
    (void)arg;
    uint64_t seen = 0;
    int64_t budget = spin_ns();
    pthread_mutex_lock(&P.mu);
    for (;;) {
        if (P.gen == seen && budget > 0) {
            pthread_mutex_unlock(&P.mu);
            poll(job_after, seen, budget);
            pthread_mutex_lock(&P.mu);
        }
        while (P.gen == seen)
            pthread_cond_wait(&P.wake, &P.mu);
        seen = P.gen;
        P.active++;
        pthread_mutex_unlock(&P.mu);
        work(st_rt_profile_cpu_clock());
        pthread_mutex_lock(&P.mu);
        if (--P.active == 0)
            pthread_cond_broadcast(&P.done);
    }
    return NULL;
}

static void start_workers(void);

/* A forked child (a DataLoader worker) has none of the parent's threads,
 * and a lock one of them held at the fork stays held: the child gets
 * fresh locks and starts its own workers on first use. */
static bool forked;

static void after_fork_child(void)
{
    pthread_mutex_init(&P.submit, NULL);
    pthread_mutex_init(&P.mu, NULL);
    pthread_cond_init(&P.wake, NULL);
    pthread_cond_init(&P.done, NULL);
    P.nworkers = 0;
    P.active = 0;
    forked = true;
}

static void pool_init(void)
{
    pthread_atfork(NULL, NULL, after_fork_child);
    start_workers();
}

static void start_workers(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    const char *e = getenv("SYMTRACE_NUM_THREADS");
    if (e && atoi(e) > 0)
        n = atoi(e);
    if (n < 1)
        n = 1;
    if (n > 256)
        n = 256;
    for (long i = 0; i < n - 1; i++) {
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &at, worker, NULL) == 0)
            P.nworkers++;
        pthread_attr_destroy(&at);
    }
}

int st_llvm_pool_threads(void)
{
    pthread_once(&P.once, pool_init);
    if (__atomic_exchange_n(&forked, false, __ATOMIC_ACQ_REL))
        start_workers();
    return P.nworkers + 1;
}

int32_t st_llvm_pool_run(st_llvm_task task, void *ctx, int64_t total,
                         int64_t grain, bool *parallel)
{
    if (parallel)
        *parallel = false;
    if (total <= 0)
        return 0;
    if (grain < 1)
        grain = 1;
    int nt = st_llvm_pool_threads();
    if (nt <= 1 || total < 2 * grain ||
        pthread_mutex_trylock(&P.submit) != 0)
        return task(ctx, 0, total);
    int64_t nch = total / grain;
    if (nch > 4 * (int64_t)nt)
        nch = 4 * (int64_t)nt;
    int64_t chunk = (total + nch - 1) / nch;
    pthread_mutex_lock(&P.mu);
    while (P.active > 0) /* late joiners of the previous job */
        pthread_cond_wait(&P.done, &P.mu);
    P.task = task;
    P.ctx = ctx;
    P.total = total;
    P.chunk = chunk;
    P.nchunks = (total + chunk - 1) / chunk;
    atomic_store(&P.next, 0);
    atomic_store(&P.finished, 0);
    atomic_store(&P.result, 0);
    atomic_store(&P.worker_cpu_ns, 0);
    __atomic_store_n(&P.gen, P.gen + 1, __ATOMIC_RELEASE); /* polled unlocked */
    pthread_cond_broadcast(&P.wake);
    pthread_mutex_unlock(&P.mu);
    work(false);
    /* the workers' last chunks: polled first (a sleep on the condition
     * variable costs a wake-up, 10-50 us, on every short kernel), then
     * waited for. Workers still leaving this job (active > 0) are waited
     * for by the next submit, before it resets the job's fields. */
    if (spin_ns() > 0)
        poll(chunks_done, 0, spin_ns());
    pthread_mutex_lock(&P.mu);
    while (atomic_load(&P.finished) < P.nchunks)
        pthread_cond_wait(&P.done, &P.mu);
    int32_t r = atomic_load(&P.result);
    int64_t wcpu = atomic_load(&P.worker_cpu_ns);
    pthread_mutex_unlock(&P.mu);
    if (wcpu > 0)
        st_rt_profile_worker_cpu(wcpu);
    pthread_mutex_unlock(&P.submit);
    if (parallel)
        *parallel = true;
    return r;
}
