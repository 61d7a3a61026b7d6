/* tests/c/test_alloc.c - tests of the caching allocator (runtime/alloc.c)
 * and the CPU device (runtime/device_cpu.c): a randomized stress test with
 * data-pattern and overlap checks, split/merge, steady state, empty_cache,
 * peak statistics, out-of-memory with retry, and concurrent use. Each test
 * runs on its own test device (a wrapper of posix_memalign that counts
 * system memory and can refuse past a budget), so it has its own allocator. */
#include "st_runtime.h"
#include "st_test.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)
#define KiB ((size_t)1 << 10)

/* ---------------- random numbers (splitmix64) ---------------- */
typedef struct { uint64_t s; } rng_t;
static uint64_t rng_next(rng_t *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double rng_unit(rng_t *r) { return (double)(rng_next(r) >> 11) / 9007199254740992.0; }
static size_t rng_below(rng_t *r, size_t n) { return (size_t)(rng_next(r) % n); }
/* Log-uniform in [1, max]. */
static size_t rng_size(rng_t *r, size_t max)
{
    size_t n = (size_t)exp(rng_unit(r) * log((double)max + 1.0));
    return n < 1 ? 1 : n > max ? max : n;
}

/* ---------------- test devices ---------------- */
typedef struct {
    st_device dev;
    pthread_mutex_t mu;
    size_t outstanding;  /* bytes held from the system */
    size_t budget;       /* 0 = unlimited */
    int64_t nalloc, nfree, nrefused;
} test_dev;

static void *tdev_alloc(st_device *d, size_t n)
{
    test_dev *t = (test_dev *)d;
    pthread_mutex_lock(&t->mu);
    if (t->budget && t->outstanding + n > t->budget) {
        t->nrefused++;
        pthread_mutex_unlock(&t->mu);
        return NULL;
    }
    void *p = NULL;
    if (posix_memalign(&p, 64, n) != 0)
        p = NULL;
    if (p) {
        t->outstanding += n;
        t->nalloc++;
    }
    pthread_mutex_unlock(&t->mu);
    return p;
}

static void tdev_free(st_device *d, void *p, size_t n)
{
    test_dev *t = (test_dev *)d;
    pthread_mutex_lock(&t->mu);
    t->outstanding -= n;
    t->nfree++;
    pthread_mutex_unlock(&t->mu);
    free(p);
}

static test_dev *tdev_new(const char *name, size_t budget)
{
    test_dev *t = calloc(1, sizeof *t);
    t->dev.type = ST_DEV_CPU;
    t->dev.name = name;
    t->dev.raw_alloc = tdev_alloc;
    t->dev.raw_free = tdev_free;
    t->dev.copy = st_rt_cpu()->copy;
    t->dev.synchronize = st_rt_cpu()->synchronize;
    pthread_mutex_init(&t->mu, NULL);
    t->budget = budget;
    return t;
}

static st_alloc_stats stats(st_allocator *a)
{
    st_alloc_stats s;
    st_alloc_stats_get(a, &s);
    return s;
}

static size_t seg_need(size_t n)
{
    size_t r = n == 0 ? 512 : (n + 511) / 512 * 512;
    return r <= MiB ? 2 * MiB : (r + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
}

/* ---------------- byte patterns ---------------- */
static inline uint8_t pat(uint64_t tag, size_t k)
{
    return (uint8_t)((tag * 0x9E3779B97F4A7C15ull + k * 0xD6E8FEB86659FD93ull) >> 56);
}

/* Small blocks are filled entirely; large ones in their first and last
 * 4 KiB and one byte every 64 KiB in between (touching every page would make
 * the test slow and its memory large; overlap is also checked directly). */
#define GRID (64 * KiB)
#define FULL_LIMIT (64 * KiB)
static void fill(uint8_t *p, size_t n, uint64_t tag)
{
    if (n <= FULL_LIMIT) {
        for (size_t k = 0; k < n; k++)
            p[k] = pat(tag, k);
        return;
    }
    for (size_t k = 0; k < 4096; k++)
        p[k] = pat(tag, k);
    for (size_t k = n - 4096; k < n; k++)
        p[k] = pat(tag, k);
    for (size_t k = 4096; k < n - 4096; k += GRID)
        p[k] = pat(tag, k);
}

static bool verify(const uint8_t *p, size_t n, uint64_t tag, size_t *bad)
{
    if (n <= FULL_LIMIT) {
        for (size_t k = 0; k < n; k++)
            if (p[k] != pat(tag, k))
                return *bad = k, false;
        return true;
    }
    for (size_t k = 0; k < 4096; k++)
        if (p[k] != pat(tag, k))
            return *bad = k, false;
    for (size_t k = n - 4096; k < n; k++)
        if (p[k] != pat(tag, k))
            return *bad = k, false;
    for (size_t k = 4096; k < n - 4096; k += GRID)
        if (p[k] != pat(tag, k))
            return *bad = k, false;
    return true;
}

typedef struct {
    st_block *b;
    size_t n;
    uint64_t tag;
} live_t;

static int cmp_live(const void *x, const void *y)
{
    uintptr_t a = (uintptr_t)((const live_t *)x)->b->ptr;
    uintptr_t b = (uintptr_t)((const live_t *)y)->b->ptr;
    return a < b ? -1 : a > b;
}

/* No two live blocks overlap (by their rounded sizes). */
static void check_no_overlap(live_t *live, size_t nlive)
{
    live_t *s = malloc(nlive * sizeof *s + 1);
    memcpy(s, live, nlive * sizeof *s);
    qsort(s, nlive, sizeof *s, cmp_live);
    for (size_t i = 1; i < nlive; i++) {
        uintptr_t end = (uintptr_t)s[i - 1].b->ptr + s[i - 1].b->size;
        CHECK_FATAL(end <= (uintptr_t)s[i].b->ptr, "blocks %p (+%zu) and %p overlap",
                    s[i - 1].b->ptr, s[i - 1].b->size, s[i].b->ptr);
    }
    free(s);
}

/* ---------------- 1. stress ---------------- */
static void test_stress(uint64_t seed)
{
    st_test_name = "stress";
    enum { NOPS = 200000, MAXLIVE = 2000, CHECK_EVERY = 4096 };
    test_dev *td = tdev_new("test:stress", 0);
    st_allocator *a = st_alloc_for(&td->dev);
    CHECK_FATAL(a != NULL, "st_alloc_for: %s", st_err_msg());
    CHECK_FATAL(st_alloc_for(&td->dev) == a, "st_alloc_for must return one allocator per device");
    rng_t r = {seed};
    live_t *live = calloc(MAXLIVE, sizeof *live);
    size_t nlive = 0, maxlive_seen = 0;
    int64_t req_sum = 0, size_sum = 0, nallocs = 0, nfrees = 0;
    uint64_t next_tag = 1;
    for (int op = 0; op < NOPS; op++) {
        /* Phases alternate between growing and shrinking the live set. */
        double p_alloc = ((op / 10000) % 2 == 0) ? 0.62 : 0.38;
        if (nlive == 0 || (nlive < MAXLIVE && rng_unit(&r) < p_alloc)) {
            size_t n = rng_size(&r, 8 * MiB);
            st_block *b = st_alloc_block(a, n);
            CHECK_FATAL(b != NULL, "op %d: allocation of %zu bytes failed: %s", op, n,
                        st_err_msg());
            CHECK_FATAL(b->size >= n && b->requested == n && b->size % 512 == 0,
                        "op %d: block of %zu bytes for a request of %zu (requested field %zu)",
                        op, b->size, n, b->requested);
            CHECK_FATAL((uintptr_t)b->ptr % 64 == 0, "op %d: block %p not 64-byte aligned", op,
                        b->ptr);
            live[nlive] = (live_t){b, n, next_tag++};
            fill(b->ptr, n, live[nlive].tag);
            nlive++;
            req_sum += (int64_t)n;
            size_sum += (int64_t)b->size;
            nallocs++;
        } else {
            size_t i = rng_below(&r, nlive);
            size_t bad = 0;
            CHECK_FATAL(verify(live[i].b->ptr, live[i].n, live[i].tag, &bad),
                        "op %d: block %p (%zu bytes) corrupted at byte %zu (overlap?)", op,
                        live[i].b->ptr, live[i].n, bad);
            req_sum -= (int64_t)live[i].n;
            size_sum -= (int64_t)live[i].b->size;
            st_alloc_free(a, live[i].b);
            live[i] = live[--nlive];
            nfrees++;
        }
        if (nlive > maxlive_seen)
            maxlive_seen = nlive;
        if ((op + 1) % CHECK_EVERY == 0 || op == NOPS - 1) {
            CHECK_OK_FATAL(st_alloc_check(a));
            st_alloc_stats s = stats(a);
            CHECK_FATAL(s.active_blocks == (int64_t)nlive, "op %d: active_blocks %" PRId64
                        " but %zu live", op, s.active_blocks, nlive);
            CHECK_FATAL(s.requested_bytes == req_sum, "op %d: requested_bytes %" PRId64
                        " but %" PRId64 " requested", op, s.requested_bytes, req_sum);
            CHECK_FATAL(s.allocated_bytes == size_sum, "op %d: allocated_bytes %" PRId64
                        " but live blocks hold %" PRId64, op, s.allocated_bytes, size_sum);
            CHECK_FATAL(s.num_allocs == nallocs && s.num_frees == nfrees,
                        "op %d: num_allocs/frees %" PRId64 "/%" PRId64 ", expected %" PRId64
                        "/%" PRId64, op, s.num_allocs, s.num_frees, nallocs, nfrees);
            CHECK_FATAL(s.cache_hits + s.num_system_allocs == s.num_allocs,
                        "op %d: cache_hits %" PRId64 " + system allocs %" PRId64
                        " != allocs %" PRId64, op, s.cache_hits, s.num_system_allocs,
                        s.num_allocs);
            CHECK_FATAL((size_t)s.reserved_bytes == td->outstanding,
                        "op %d: reserved %" PRId64 " but the device holds %zu", op,
                        s.reserved_bytes, td->outstanding);
            CHECK_FATAL(s.reserved_bytes >= s.allocated_bytes && s.peak_allocated_bytes >=
                        s.allocated_bytes, "op %d: reserved/peak below allocated", op);
            check_no_overlap(live, nlive);
        }
    }
    st_alloc_stats s = stats(a);
    printf("  stress: %d ops, max live %zu, %" PRId64 " segments from the system, cache hit "
           "rate %.1f%%, peak reserved %.1f MiB\n", NOPS, maxlive_seen, s.num_system_allocs,
           100.0 * (double)s.cache_hits / (double)s.num_allocs,
           (double)s.peak_reserved_bytes / (double)MiB);
    CHECK_FATAL(maxlive_seen >= MAXLIVE / 2, "live set only reached %zu", maxlive_seen);
    for (size_t i = 0; i < nlive; i++) {
        size_t bad = 0;
        CHECK_FATAL(verify(live[i].b->ptr, live[i].n, live[i].tag, &bad), "final: block corrupted");
        st_alloc_free(a, live[i].b);
    }
    CHECK_OK_FATAL(st_alloc_check(a));
    s = stats(a);
    CHECK_FATAL(s.active_blocks == 0 && s.allocated_bytes == 0 && s.requested_bytes == 0,
                "after freeing all: active %" PRId64 ", allocated %" PRId64, s.active_blocks,
                s.allocated_bytes);
    st_alloc_empty_cache(a);
    CHECK_OK_FATAL(st_alloc_check(a));
    s = stats(a);
    CHECK_FATAL(s.reserved_bytes == 0 && s.num_segments == 0 && td->outstanding == 0,
                "empty_cache left %" PRId64 " bytes reserved", s.reserved_bytes);
    free(live);
}

/* ---------------- 2. rounding, split and merge ---------------- */
static void test_split_merge(void)
{
    st_test_name = "split_merge";
    test_dev *td = tdev_new("test:split", 0);
    st_allocator *a = st_alloc_for(&td->dev);

    /* rounding to 512 bytes, 0 -> 512 */
    size_t req[] = {0, 1, 511, 512, 513, 4096, 4097};
    size_t want[] = {512, 512, 512, 512, 1024, 4096, 4608};
    st_block *rb[7];
    int64_t reqsum = 0, sizesum = 0;
    for (int i = 0; i < 7; i++) {
        rb[i] = st_alloc_block(a, req[i]);
        CHECK_FATAL(rb[i] && rb[i]->size == want[i], "request %zu: block of %zu, want %zu", req[i],
                    rb[i] ? rb[i]->size : 0, want[i]);
        reqsum += (int64_t)req[i];
        sizesum += (int64_t)want[i];
    }
    st_alloc_stats s = stats(a);
    CHECK_FATAL(s.requested_bytes == reqsum && s.allocated_bytes == sizesum,
                "requested %" PRId64 " allocated %" PRId64, s.requested_bytes, s.allocated_bytes);
    CHECK_FATAL(s.num_system_allocs == 1 && s.cache_hits == 6, "7 small requests: %" PRId64
                " segments, %" PRId64 " hits", s.num_system_allocs, s.cache_hits);
    for (int i = 0; i < 7; i++)
        st_alloc_free(a, rb[i]);
    CHECK_OK_FATAL(st_alloc_check(a));

    /* small pool: one 2 MiB segment, split into halves, merged back */
    st_block *b1 = st_alloc_block(a, MiB);
    st_alloc_free(a, b1);
    int64_t sys0 = stats(a).num_system_allocs;
    st_block *h1 = st_alloc_block(a, 512 * KiB), *h2 = st_alloc_block(a, 512 * KiB);
    CHECK_FATAL(stats(a).num_system_allocs == sys0, "halves took a new segment");
    CHECK_FATAL((char *)h2->ptr == (char *)h1->ptr + 512 * KiB, "halves are not adjacent: %p %p",
                h1->ptr, h2->ptr);
    CHECK_FATAL(h1->size == 512 * KiB && h2->size == 512 * KiB, "split sizes %zu %zu", h1->size,
                h2->size);
    CHECK_OK_FATAL(st_alloc_check(a));
    st_alloc_free(a, h1);
    st_alloc_free(a, h2);
    CHECK_OK_FATAL(st_alloc_check(a));
    /* merged: two 1 MiB blocks fit in the one segment again */
    st_block *m1 = st_alloc_block(a, MiB), *m2 = st_alloc_block(a, MiB);
    CHECK_FATAL(stats(a).num_system_allocs == sys0, "free halves were not merged (new segment)");
    CHECK_FATAL(m1->segment == m2->segment, "1 MiB blocks in different segments");
    st_alloc_free(a, m1);
    st_alloc_free(a, m2);
    CHECK_OK_FATAL(st_alloc_check(a));

    /* large pool: 8 MiB freed, reused as 4 + 4 MiB, merged back to 8 */
    st_block *L = st_alloc_block(a, 8 * MiB);
    void *lp = L->ptr;
    CHECK_FATAL(L->size == 8 * MiB, "8 MiB block has %zu", L->size);
    st_alloc_free(a, L);
    int64_t sys1 = stats(a).num_system_allocs;
    st_block *q1 = st_alloc_block(a, 4 * MiB), *q2 = st_alloc_block(a, 4 * MiB);
    CHECK_FATAL(stats(a).num_system_allocs == sys1, "4 MiB halves took a new segment");
    CHECK_FATAL(q1->ptr == lp && (char *)q2->ptr == (char *)lp + 4 * MiB, "4 MiB halves misplaced");
    CHECK_OK_FATAL(st_alloc_check(a));
    st_alloc_free(a, q2);
    st_alloc_free(a, q1);
    CHECK_OK_FATAL(st_alloc_check(a));
    st_block *L2 = st_alloc_block(a, 8 * MiB);
    CHECK_FATAL(L2->ptr == lp && stats(a).num_system_allocs == sys1,
                "8 MiB after merging did not reuse the segment");
    st_alloc_free(a, L2);
    st_alloc_empty_cache(a);

    /* large remainder of exactly 1 MiB is not split: 3 MiB -> 4 MiB block */
    st_block *t3 = st_alloc_block(a, 3 * MiB + 1);
    CHECK_FATAL(t3->size == 4 * MiB, "3 MiB request from a 4 MiB segment got %zu", t3->size);
    /* ... but a 1.5 MiB remainder is */
    st_alloc_free(a, t3);
    st_alloc_empty_cache(a);
    st_block *t4 = st_alloc_block(a, 2 * MiB + 512 * KiB); /* segment 4 MiB, rem 1.5 MiB */
    CHECK_FATAL(t4->size == 2 * MiB + 512 * KiB, "2.5 MiB request got %zu", t4->size);
    CHECK_OK_FATAL(st_alloc_check(a));

    /* pools are separate: a cached large block never serves a small request */
    void *t4seg = t4->segment;
    st_alloc_free(a, t4);
    st_alloc_stats s2 = stats(a);
    CHECK_FATAL(s2.num_segments == 1, "%" PRId64 " segments", s2.num_segments);
    st_block *small = st_alloc_block(a, 1000);
    CHECK_FATAL(small->size == 1024, "1000 bytes got %zu", small->size);
    CHECK_FATAL(stats(a).num_system_allocs == s2.num_system_allocs + 1,
                "a small request was served from the large pool");
    CHECK_FATAL(small->segment != t4seg, "small block inside a large segment");
    st_alloc_free(a, small);
    CHECK_OK_FATAL(st_alloc_check(a));
    st_alloc_empty_cache(a);
    CHECK_FATAL(td->outstanding == 0, "device still holds %zu bytes", td->outstanding);
}

/* ---------------- 3. steady state ---------------- */
static void test_steady_state(uint64_t seed)
{
    st_test_name = "steady_state";
    test_dev *td = tdev_new("test:steady", 0);
    st_allocator *a = st_alloc_for(&td->dev);
    /* One "training step": 50 events, allocations of log-uniform sizes and
     * frees of earlier blocks; whatever is left is freed at the end. */
    enum { NEV = 50 };
    struct { bool alloc; size_t n; int slot; } ev[NEV];
    rng_t r = {seed ^ 0x5555};
    int nslots = 0;
    int open[NEV], nopen = 0;
    for (int i = 0; i < NEV; i++) {
        if (nopen == 0 || rng_unit(&r) < 0.6) {
            ev[i].alloc = true;
            ev[i].n = rng_size(&r, 8 * MiB);
            ev[i].slot = nslots;
            open[nopen++] = nslots++;
        } else {
            int k = (int)rng_below(&r, (size_t)nopen);
            ev[i].alloc = false;
            ev[i].slot = open[k];
            open[k] = open[--nopen];
        }
    }
    st_block *blocks[NEV];
    int64_t sys_after_first = -1, hits_prev = 0;
    for (int step = 0; step < 100; step++) {
        for (int i = 0; i < NEV; i++) {
            if (ev[i].alloc) {
                blocks[ev[i].slot] = st_alloc_block(a, ev[i].n);
                CHECK_FATAL(blocks[ev[i].slot], "step %d: alloc failed: %s", step, st_err_msg());
            } else {
                st_alloc_free(a, blocks[ev[i].slot]);
                blocks[ev[i].slot] = NULL;
            }
        }
        for (int k = 0; k < nopen; k++) {
            st_alloc_free(a, blocks[open[k]]);
            blocks[open[k]] = NULL;
        }
        st_alloc_stats s = stats(a);
        if (step == 0) {
            sys_after_first = s.num_system_allocs;
        } else {
            CHECK_FATAL(s.num_system_allocs == sys_after_first,
                        "step %d: %" PRId64 " system allocations, %" PRId64 " after the first step",
                        step, s.num_system_allocs, sys_after_first);
            CHECK_FATAL(s.cache_hits - hits_prev == nslots, "step %d: only %" PRId64
                        " of %d allocations were cache hits", step, s.cache_hits - hits_prev,
                        nslots);
        }
        hits_prev = s.cache_hits;
    }
    CHECK_OK_FATAL(st_alloc_check(a));
    printf("  steady state: %d allocations per step, %" PRId64
           " system allocations in the first step, none after\n", nslots, sys_after_first);
    st_alloc_empty_cache(a);
}

/* ---------------- 4. empty_cache ---------------- */
static void test_empty_cache(uint64_t seed)
{
    st_test_name = "empty_cache";
    test_dev *td = tdev_new("test:empty", 0);
    st_allocator *a = st_alloc_for(&td->dev);
    rng_t r = {seed ^ 0xABCD};
    enum { N = 400 };
    st_block *b[N];
    for (int i = 0; i < N; i++)
        b[i] = st_alloc_block(a, rng_size(&r, 8 * MiB));
    int nlive = 0;
    for (int i = 0; i < N; i++) {
        if (rng_unit(&r) < 0.8) {
            st_alloc_free(a, b[i]);
            b[i] = NULL;
        } else {
            nlive++;
        }
    }
    st_alloc_stats s0 = stats(a);
    st_alloc_empty_cache(a);
    CHECK_OK_FATAL(st_alloc_check(a));
    st_alloc_stats s = stats(a);
    int64_t need = 0;
    for (int i = 0; i < N; i++)
        if (b[i])
            need += (int64_t)seg_need(b[i]->requested);
    CHECK_FATAL(s.reserved_bytes <= need, "after empty_cache %" PRId64 " bytes reserved, "
                "live blocks need at most %" PRId64, s.reserved_bytes, need);
    CHECK_FATAL(s.num_segments <= nlive, "%" PRId64 " segments for %d live blocks", s.num_segments,
                nlive);
    CHECK_FATAL(s.reserved_bytes < s0.reserved_bytes, "empty_cache released nothing");
    CHECK_FATAL((size_t)s.reserved_bytes == td->outstanding, "device holds %zu, reserved %" PRId64,
                td->outstanding, s.reserved_bytes);
    CHECK_FATAL(s.num_system_frees > 0, "no system frees counted");
    printf("  empty_cache: %.1f MiB -> %.1f MiB reserved with %d live blocks\n",
           (double)s0.reserved_bytes / (double)MiB, (double)s.reserved_bytes / (double)MiB,
           nlive);
    for (int i = 0; i < N; i++)
        if (b[i])
            st_alloc_free(a, b[i]);
    st_alloc_empty_cache(a);
    CHECK_OK_FATAL(st_alloc_check(a));
    s = stats(a);
    CHECK_FATAL(s.reserved_bytes == 0 && s.num_segments == 0 && td->outstanding == 0 &&
                s.num_system_allocs == s.num_system_frees,
                "all freed: %" PRId64 " bytes still reserved", s.reserved_bytes);
}

/* ---------------- 5. peak statistics ---------------- */
static void test_peak(void)
{
    st_test_name = "reset_peak";
    test_dev *td = tdev_new("test:peak", 0);
    st_allocator *a = st_alloc_for(&td->dev);
    st_block *b = st_alloc_block(a, 4 * MiB);
    st_alloc_free(a, b);
    st_alloc_stats s = stats(a);
    CHECK_FATAL(s.peak_allocated_bytes == (int64_t)(4 * MiB) && s.allocated_bytes == 0,
                "peak %" PRId64, s.peak_allocated_bytes);
    CHECK_FATAL(s.peak_reserved_bytes == (int64_t)(4 * MiB), "peak reserved %" PRId64,
                s.peak_reserved_bytes);
    st_alloc_reset_peak(a);
    s = stats(a);
    CHECK_FATAL(s.peak_allocated_bytes == 0 && s.peak_reserved_bytes == s.reserved_bytes,
                "after reset: peak %" PRId64 ", peak reserved %" PRId64, s.peak_allocated_bytes,
                s.peak_reserved_bytes);
    st_block *c = st_alloc_block(a, 1000);
    s = stats(a);
    CHECK_FATAL(s.peak_allocated_bytes == 1024, "peak after 1000 bytes: %" PRId64,
                s.peak_allocated_bytes);
    st_alloc_free(a, c);
    st_alloc_empty_cache(a);
    s = stats(a);
    CHECK_FATAL(s.peak_reserved_bytes == (int64_t)(6 * MiB), "peak reserved %" PRId64,
                s.peak_reserved_bytes);
    st_alloc_reset_peak(a);
    CHECK_FATAL(stats(a).peak_reserved_bytes == 0, "peak reserved not reset");
    CHECK_OK_FATAL(st_alloc_check(a));
}

/* ---------------- 6. out of memory ---------------- */
static void test_oom(void)
{
    st_test_name = "oom";
    test_dev *td = tdev_new("test:oom", 8 * MiB);
    st_allocator *a = st_alloc_for(&td->dev);
    st_block *big = st_alloc_block(a, 6 * MiB);
    CHECK_FATAL(big, "6 MiB under an 8 MiB budget: %s", st_err_msg());
    st_alloc_free(a, big); /* cached: 6 MiB stays reserved */
    st_block *s1 = st_alloc_block(a, MiB), *s2 = st_alloc_block(a, MiB);
    CHECK_FATAL(s1 && s2, "first small segment: %s", st_err_msg());
    /* a second small segment exceeds the budget: the cache is emptied and
     * the allocation retried */
    st_block *s3 = st_alloc_block(a, MiB);
    CHECK_FATAL(s3, "allocation after emptying the cache failed: %s", st_err_msg());
    CHECK_FATAL(td->nrefused == 1, "expected one refused system allocation, got %" PRId64,
                td->nrefused);
    st_alloc_stats s = stats(a);
    CHECK_FATAL(s.reserved_bytes == (int64_t)(4 * MiB), "reserved %" PRId64, s.reserved_bytes);
    CHECK_OK_FATAL(st_alloc_check(a));
    /* a request that cannot fit even after emptying the cache */
    st_err_clear();
    st_block *x = st_alloc_block(a, 16 * MiB);
    CHECK_FATAL(x == NULL, "16 MiB under an 8 MiB budget succeeded");
    CHECK_FATAL(st_err_kind() == ST_ERR_MEMORY, "error kind %d", (int)st_err_kind());
    const char *m = st_err_msg();
    CHECK_FATAL(strstr(m, "16777216") && strstr(m, "allocated") && strstr(m, "reserved") &&
                strstr(m, "3145728") && strstr(m, "4194304"),
                "message lacks the request size or stats: %s", m);
    printf("  oom message: %s\n", m);
    st_err_clear();
    x = st_alloc_block(a, SIZE_MAX);
    CHECK_FATAL(x == NULL && st_err_kind() == ST_ERR_MEMORY, "SIZE_MAX request");
    st_err_clear();
    x = st_alloc_block(a, SIZE_MAX - 100);
    CHECK_FATAL(x == NULL && st_err_kind() == ST_ERR_MEMORY, "SIZE_MAX-100 request");
    CHECK_OK_FATAL(st_alloc_check(a));
    s = stats(a);
    CHECK_FATAL(s.active_blocks == 3 && s.num_allocs == 4, "failed allocations were counted");
    st_alloc_free(a, s1);
    st_alloc_free(a, s2);
    st_alloc_free(a, s3);
    st_alloc_empty_cache(a);
    CHECK_FATAL(td->outstanding == 0, "device holds %zu", td->outstanding);
    /* the real CPU device: st_alloc_for(NULL) is an error, not a crash */
    st_err_clear();
    CHECK_FATAL(st_alloc_for(NULL) == NULL && st_err_kind() == ST_ERR_RUNTIME,
                "st_alloc_for(NULL)");
    CHECK_FATAL(st_alloc_block(NULL, 10) == NULL, "st_alloc_block(NULL)");
    st_alloc_free(a, NULL); /* no-op */
}

/* ---------------- 7. threads ---------------- */
typedef struct {
    st_allocator *a;
    uint64_t seed;
    const char *fail;
} thr_arg;

static void *thr_main(void *p)
{
    thr_arg *ta = p;
    rng_t r = {ta->seed};
    enum { NLIVE = 200, NOPS = 25000 };
    live_t live[NLIVE];
    size_t nlive = 0;
    for (int op = 0; op < NOPS; op++) {
        if (nlive == 0 || (nlive < NLIVE && rng_unit(&r) < 0.5)) {
            size_t n = rng_size(&r, rng_unit(&r) < 0.05 ? 4 * MiB : 256 * KiB);
            st_block *b = st_alloc_block(ta->a, n);
            if (!b) {
                ta->fail = "allocation failed";
                return NULL;
            }
            live[nlive] = (live_t){b, n, rng_next(&r)};
            fill(b->ptr, n, live[nlive].tag);
            nlive++;
        } else {
            size_t i = rng_below(&r, nlive), bad;
            if (!verify(live[i].b->ptr, live[i].n, live[i].tag, &bad)) {
                ta->fail = "block corrupted";
                return NULL;
            }
            st_alloc_free(ta->a, live[i].b);
            live[i] = live[--nlive];
        }
    }
    for (size_t i = 0; i < nlive; i++)
        st_alloc_free(ta->a, live[i].b);
    return NULL;
}

static void test_threads(uint64_t seed)
{
    st_test_name = "threads";
    test_dev *td = tdev_new("test:threads", 0);
    st_allocator *a = st_alloc_for(&td->dev);
    enum { NT = 4 };
    pthread_t th[NT];
    thr_arg args[NT];
    for (int i = 0; i < NT; i++) {
        args[i] = (thr_arg){a, seed + 1000 * (uint64_t)(i + 1), NULL};
        CHECK_FATAL(pthread_create(&th[i], NULL, thr_main, &args[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        CHECK_FATAL(args[i].fail == NULL, "thread %d: %s", i, args[i].fail);
    }
    CHECK_OK_FATAL(st_alloc_check(a));
    st_alloc_stats s = stats(a);
    CHECK_FATAL(s.active_blocks == 0 && s.num_allocs == s.num_frees, "threads left %" PRId64
                " blocks", s.active_blocks);
    st_alloc_empty_cache(a);
    CHECK_FATAL(td->outstanding == 0, "device holds %zu", td->outstanding);
}

/* ---------------- 8. devices ---------------- */
static void test_devices(void)
{
    st_test_name = "devices";
    st_device *cpu = st_rt_cpu();
    CHECK_FATAL(cpu && cpu->type == ST_DEV_CPU && strcmp(cpu->name, "cpu") == 0, "cpu device");
    CHECK_FATAL(st_rt_device(ST_DEV_CPU, 0) == cpu, "st_rt_device(CPU, 0)");
    st_err_clear();
    CHECK_FATAL(st_rt_device(ST_DEV_CUDA, 0) == NULL, "CUDA device without CUDA");
    CHECK_FATAL(st_err_kind() == ST_ERR_RUNTIME && strstr(st_err_msg(), "CUDA is not available"),
                "CUDA error: %d %s", (int)st_err_kind(), st_err_msg());
    void *p = cpu->raw_alloc(cpu, 1000);
    CHECK_FATAL(p && (uintptr_t)p % 64 == 0, "cpu raw_alloc alignment");
    char src[1000];
    for (int i = 0; i < 1000; i++)
        src[i] = (char)i;
    CHECK_FATAL(cpu->copy(cpu, p, src, 1000) == ST_OK && memcmp(p, src, 1000) == 0, "cpu copy");
    cpu->synchronize(cpu);
    cpu->raw_free(cpu, p, 1000);
    /* the CPU device's own allocator */
    st_allocator *a = st_alloc_for(cpu);
    CHECK_FATAL(a && a == st_alloc_for(cpu), "cpu allocator");
    st_block *b = st_alloc_block(a, 100);
    CHECK_FATAL(b && (uintptr_t)b->ptr % 64 == 0, "cpu block");
    st_alloc_free(a, b);
    CHECK_OK_FATAL(st_alloc_check(a));
}

int main(void)
{
    uint64_t seed = 20240611;
    const char *env = getenv("SYMTRACE_TEST_SEED");
    if (env && *env)
        seed = strtoull(env, NULL, 0);
    printf("test_alloc: seed %" PRIu64 " (set SYMTRACE_TEST_SEED to change)\n", seed);
    RUN_TEST(test_devices());
    RUN_TEST(test_split_merge());
    RUN_TEST(test_peak());
    RUN_TEST(test_oom());
    RUN_TEST(test_steady_state(seed));
    RUN_TEST(test_empty_cache(seed));
    RUN_TEST(test_threads(seed));
    RUN_TEST(test_stress(seed));
    return st_test_exit_code("test_alloc");
}
