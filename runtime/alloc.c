/* runtime/alloc.c - owns the caching allocator: one per device (a small
 * static table), generic over st_device (raw_alloc/raw_free), thread-safe
 * (one mutex per allocator). Sizes round to 512 bytes; small requests
 * (<= 1 MiB) come from 2 MiB segments, large ones from segments of their own
 * size rounded to 2 MiB. Free blocks live in size-ordered bins (best fit),
 * blocks split when the remainder is worth keeping and merge with free
 * neighbours on free. Block headers are malloc'd (never in device memory).
 * Also owns the allocator statistics and the invariant checker. */
#include "st_runtime.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define ROUND_BYTES ((size_t)512)
#define SMALL_MAX ((size_t)1 << 20)      /* <= 1 MiB: small pool */
#define SEG_SMALL ((size_t)2 << 20)      /* small segments: 2 MiB */
#define ROUND_LARGE ((size_t)2 << 20)    /* large segments round to 2 MiB */
#define MIN_SPLIT_LARGE ((size_t)1 << 20) /* large remainder must be > 1 MiB */

/* Bins: exact bins for every 512-multiple up to 2 MiB, then 8 log-spaced
 * bins per power of two. Bins are ordered by size, and each bin's list is
 * sorted by size, so the first block found at or after the request's bin
 * is the best fit. */
#define NEXACT ((int)(SEG_SMALL / ROUND_BYTES)) /* 4096 */
#define NBINS (NEXACT + (64 - 21) * 8)
#define NWORDS ((NBINS + 63) / 64)

typedef struct st_segment {
    st_allocator *owner;
    char *ptr;
    size_t size;
    bool large;
    st_block *first;
    struct st_segment *snext, *sprev;
} st_segment;

typedef struct {
    st_block *bins[NBINS];
    uint64_t bitmap[NWORDS];
    int64_t nfree;
} st_pool;

struct st_allocator {
    pthread_mutex_t mu;
    st_device *dev;
    st_pool small, large;
    st_segment *segs;
    st_alloc_stats stats;
};

/* ---------------- size classes and free lists ---------------- */

static int bin_of(size_t size)
{
    if (size <= SEG_SMALL)
        return (int)(size / ROUND_BYTES) - 1;
    int e = 63 - __builtin_clzll((unsigned long long)size); /* >= 21 */
    int sub = (int)((size >> (e - 3)) & 7);
    return NEXACT + (e - 21) * 8 + sub;
}

static st_pool *pool_of(st_allocator *a, bool large)
{
    return large ? &a->large : &a->small;
}

static void free_insert(st_pool *p, st_block *b)
{
    int bin = bin_of(b->size);
    st_block *prev = NULL, *cur = p->bins[bin];
    while (cur && cur->size < b->size) {
        prev = cur;
        cur = cur->fnext;
    }
    b->fprev = prev;
    b->fnext = cur;
    if (cur)
        cur->fprev = b;
    if (prev)
        prev->fnext = b;
    else
        p->bins[bin] = b;
    p->bitmap[bin / 64] |= (uint64_t)1 << (bin % 64);
    p->nfree++;
}

static void free_remove(st_pool *p, st_block *b)
{
    int bin = bin_of(b->size);
    if (b->fprev)
        b->fprev->fnext = b->fnext;
    else
        p->bins[bin] = b->fnext;
    if (b->fnext)
        b->fnext->fprev = b->fprev;
    b->fnext = b->fprev = NULL;
    if (!p->bins[bin])
        p->bitmap[bin / 64] &= ~((uint64_t)1 << (bin % 64));
    p->nfree--;
}

/* Smallest free block of at least size (best fit), or NULL. */
static st_block *free_find(st_pool *p, size_t size)
{
    int bin = bin_of(size);
    for (st_block *b = p->bins[bin]; b; b = b->fnext)
        if (b->size >= size)
            return b;
    int start = bin + 1;
    if (start >= NBINS)
        return NULL;
    int w = start / 64;
    uint64_t bits = p->bitmap[w] & (~(uint64_t)0 << (start % 64));
    for (;;) {
        if (bits)
            return p->bins[w * 64 + __builtin_ctzll(bits)];
        if (++w >= NWORDS)
            return NULL;
        bits = p->bitmap[w];
    }
}

/* ---------------- segments ---------------- */

static void seg_link(st_allocator *a, st_segment *s)
{
    s->sprev = NULL;
    s->snext = a->segs;
    if (a->segs)
        a->segs->sprev = s;
    a->segs = s;
}

static void seg_unlink(st_allocator *a, st_segment *s)
{
    if (s->sprev)
        s->sprev->snext = s->snext;
    else
        a->segs = s->snext;
    if (s->snext)
        s->snext->sprev = s->sprev;
}

/* Releases every fully free segment. Caller holds a->mu. */
static void empty_cache_locked(st_allocator *a)
{
    st_segment *s = a->segs;
    while (s) {
        st_segment *next = s->snext;
        st_block *b = s->first;
        if (b && !b->allocated && b->next == NULL) {
            free_remove(pool_of(a, s->large), b);
            seg_unlink(a, s);
            a->dev->raw_free(a->dev, s->ptr, s->size);
            a->stats.reserved_bytes -= (int64_t)s->size;
            a->stats.num_segments--;
            a->stats.num_system_frees++;
            free(b);
            free(s);
        }
        s = next;
    }
}

/* A new segment holding one free block (not in a free list). */
static st_block *seg_new(st_allocator *a, size_t segsize, bool large)
{
    st_segment *s = calloc(1, sizeof *s);
    st_block *b = calloc(1, sizeof *b);
    if (!s || !b) {
        free(s);
        free(b);
        return NULL;
    }
    void *p = a->dev->raw_alloc(a->dev, segsize);
    if (!p) {
        empty_cache_locked(a);
        p = a->dev->raw_alloc(a->dev, segsize);
    }
    if (!p) {
        free(s);
        free(b);
        return NULL;
    }
    s->owner = a;
    s->ptr = p;
    s->size = segsize;
    s->large = large;
    s->first = b;
    seg_link(a, s);
    b->ptr = p;
    b->size = segsize;
    b->segment = s;
    a->stats.reserved_bytes += (int64_t)segsize;
    if (a->stats.reserved_bytes > a->stats.peak_reserved_bytes)
        a->stats.peak_reserved_bytes = a->stats.reserved_bytes;
    a->stats.num_segments++;
    a->stats.num_system_allocs++;
    return b;
}

/* ---------------- the per-device table ---------------- */

#define MAX_ALLOCATORS 16
static struct {
    st_device *dev;
    st_allocator *a;
} alloc_table[MAX_ALLOCATORS];
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;

st_allocator *st_alloc_for(st_device *dev)
{
    if (!dev) {
        st_err(ST_ERR_RUNTIME, "st_alloc_for: no device");
        return NULL;
    }
    st_allocator *found = NULL;
    pthread_mutex_lock(&table_mu);
    int i;
    for (i = 0; i < MAX_ALLOCATORS && alloc_table[i].dev; i++)
        if (alloc_table[i].dev == dev) {
            found = alloc_table[i].a;
            break;
        }
    if (!found) {
        if (i == MAX_ALLOCATORS) {
            pthread_mutex_unlock(&table_mu);
            st_err(ST_ERR_RUNTIME, "st_alloc_for: too many devices (at most %d allocators)",
                   MAX_ALLOCATORS);
            return NULL;
        }
        found = calloc(1, sizeof *found);
        if (!found) {
            pthread_mutex_unlock(&table_mu);
            st_err(ST_ERR_MEMORY, "st_alloc_for: out of host memory for the allocator of %s",
                   dev->name ? dev->name : "?");
            return NULL;
        }
        pthread_mutex_init(&found->mu, NULL);
        found->dev = dev;
        alloc_table[i].a = found;
        alloc_table[i].dev = dev;
    }
    pthread_mutex_unlock(&table_mu);
    return found;
}

/* ---------------- allocate / free ---------------- */

st_block *st_alloc_block(st_allocator *a, size_t nbytes)
{
    if (!a) {
        st_err(ST_ERR_RUNTIME, "st_alloc_block: no allocator");
        return NULL;
    }
    /* Largest request whose rounding to the segment size cannot overflow. */
    if (nbytes > (SIZE_MAX / 2)) {
        st_alloc_stats st;
        st_alloc_stats_get(a, &st);
        st_err(ST_ERR_MEMORY,
               "out of memory on %s: tried to allocate %zu bytes; %" PRId64
               " bytes allocated, %" PRId64 " bytes reserved",
               a->dev->name ? a->dev->name : "?", nbytes, st.allocated_bytes,
               st.reserved_bytes);
        return NULL;
    }
    size_t size = nbytes == 0 ? ROUND_BYTES
                              : (nbytes + ROUND_BYTES - 1) / ROUND_BYTES * ROUND_BYTES;
    bool large = size > SMALL_MAX;
    st_pool *pool = pool_of(a, large);

    pthread_mutex_lock(&a->mu);
    st_block *b = free_find(pool, size);
    bool hit = b != NULL;
    if (b) {
        free_remove(pool, b);
    } else {
        size_t segsize = large ? (size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE
                               : SEG_SMALL;
        b = seg_new(a, segsize, large);
        if (!b) {
            int64_t alloc_b = a->stats.allocated_bytes, res_b = a->stats.reserved_bytes;
            pthread_mutex_unlock(&a->mu);
            st_err(ST_ERR_MEMORY,
                   "out of memory on %s: tried to allocate %zu bytes (%.2f MiB); %" PRId64
                   " bytes allocated, %" PRId64 " bytes reserved",
                   a->dev->name ? a->dev->name : "?", nbytes,
                   (double)nbytes / (1 << 20), alloc_b, res_b);
            return NULL;
        }
    }
    size_t rem = b->size - size;
    if (large ? rem > MIN_SPLIT_LARGE : rem >= ROUND_BYTES) {
        st_block *r = calloc(1, sizeof *r);
        if (r) { /* without a header the block is simply handed out whole */
            r->ptr = (char *)b->ptr + size;
            r->size = rem;
            r->segment = b->segment;
            r->prev = b;
            r->next = b->next;
            if (b->next)
                b->next->prev = r;
            b->next = r;
            b->size = size;
            free_insert(pool, r);
        }
    }
    b->allocated = true;
    b->requested = nbytes;
    st_alloc_stats *s = &a->stats;
    s->num_allocs++;
    if (hit)
        s->cache_hits++;
    s->allocated_bytes += (int64_t)b->size;
    s->requested_bytes += (int64_t)nbytes;
    s->active_blocks++;
    if (s->allocated_bytes > s->peak_allocated_bytes)
        s->peak_allocated_bytes = s->allocated_bytes;
    if (s->requested_bytes > s->peak_requested_bytes)
        s->peak_requested_bytes = s->requested_bytes;
    pthread_mutex_unlock(&a->mu);
    return b;
}

void st_alloc_free(st_allocator *a, st_block *b)
{
    if (!a || !b)
        return;
    pthread_mutex_lock(&a->mu);
    st_segment *seg = b->segment;
    if (!seg || seg->owner != a || !b->allocated) {
        pthread_mutex_unlock(&a->mu);
        st_err(ST_ERR_RUNTIME, "st_alloc_free: block %p is not a live block of the %s allocator",
               b->ptr, a->dev->name ? a->dev->name : "?");
        return;
    }
    st_pool *pool = pool_of(a, seg->large);
    st_alloc_stats *s = &a->stats;
    s->allocated_bytes -= (int64_t)b->size;
    s->requested_bytes -= (int64_t)b->requested;
    s->active_blocks--;
    s->num_frees++;
    b->allocated = false;
    b->requested = 0;
    st_block *p = b->prev;
    if (p && !p->allocated) {
        free_remove(pool, p);
        p->size += b->size;
        p->next = b->next;
        if (b->next)
            b->next->prev = p;
        free(b);
        b = p;
    }
    st_block *n = b->next;
    if (n && !n->allocated) {
        free_remove(pool, n);
        b->size += n->size;
        b->next = n->next;
        if (n->next)
            n->next->prev = b;
        free(n);
    }
    free_insert(pool, b);
    pthread_mutex_unlock(&a->mu);
}

/* ---------------- statistics ---------------- */

void st_alloc_stats_get(st_allocator *a, st_alloc_stats *out)
{
    if (!out)
        return;
    if (!a) {
        memset(out, 0, sizeof *out);
        return;
    }
    pthread_mutex_lock(&a->mu);
    *out = a->stats;
    pthread_mutex_unlock(&a->mu);
}

void st_alloc_reset_peak(st_allocator *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->stats.peak_allocated_bytes = a->stats.allocated_bytes;
    a->stats.peak_reserved_bytes = a->stats.reserved_bytes;
    a->stats.peak_requested_bytes = a->stats.requested_bytes;
    pthread_mutex_unlock(&a->mu);
}

void st_alloc_empty_cache(st_allocator *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    empty_cache_locked(a);
    pthread_mutex_unlock(&a->mu);
}

/* ---------------- invariant checker ---------------- */

static int cmp_ptr(const void *x, const void *y)
{
    uintptr_t a = (uintptr_t)*(st_block *const *)x, b = (uintptr_t)*(st_block *const *)y;
    return a < b ? -1 : a > b;
}

/* Checks the free lists of one pool against the sorted array of free blocks
 * found by the segment walk. */
static st_status check_pool(st_pool *p, bool large, st_block **frees, bool *seen,
                            int64_t nfrees, int64_t *nlisted)
{
    const char *pn = large ? "large" : "small";
    int64_t count = 0;
    for (int bin = 0; bin < NBINS; bin++) {
        bool bit = (p->bitmap[bin / 64] >> (bin % 64)) & 1;
        if (bit != (p->bins[bin] != NULL))
            return st_err(ST_ERR_RUNTIME, "alloc check: %s pool bin %d bitmap bit is %d", pn,
                          bin, (int)bit);
        st_block *prev = NULL;
        for (st_block *b = p->bins[bin]; b; prev = b, b = b->fnext) {
            if (b->fprev != prev)
                return st_err(ST_ERR_RUNTIME, "alloc check: %s pool bin %d: broken fprev link",
                              pn, bin);
            if (b->allocated)
                return st_err(ST_ERR_RUNTIME,
                              "alloc check: allocated block %p (%zu bytes) in a free list",
                              b->ptr, b->size);
            if (bin_of(b->size) != bin)
                return st_err(ST_ERR_RUNTIME,
                              "alloc check: block of %zu bytes in %s pool bin %d (expected %d)",
                              b->size, pn, bin, bin_of(b->size));
            if (prev && prev->size > b->size)
                return st_err(ST_ERR_RUNTIME, "alloc check: %s pool bin %d is not size-ordered",
                              pn, bin);
            st_segment *seg = b->segment;
            if (!seg || seg->large != large)
                return st_err(ST_ERR_RUNTIME,
                              "alloc check: free block %p is in the %s pool but its segment is not",
                              b->ptr, pn);
            st_block *key = b;
            st_block **hit = bsearch(&key, frees, (size_t)nfrees, sizeof *frees, cmp_ptr);
            if (!hit)
                return st_err(ST_ERR_RUNTIME,
                              "alloc check: block %p in a free list belongs to no segment walk",
                              b->ptr);
            if (seen[hit - frees])
                return st_err(ST_ERR_RUNTIME, "alloc check: block %p is listed twice", b->ptr);
            seen[hit - frees] = true;
            count++;
            if (count > nfrees)
                return st_err(ST_ERR_RUNTIME, "alloc check: %s pool free list has a cycle", pn);
        }
    }
    if (count != p->nfree)
        return st_err(ST_ERR_RUNTIME, "alloc check: %s pool counts %" PRId64
                      " free blocks, lists hold %" PRId64, pn, p->nfree, count);
    *nlisted += count;
    return ST_OK;
}

st_status st_alloc_check(st_allocator *a)
{
    if (!a)
        return st_err(ST_ERR_RUNTIME, "alloc check: no allocator");
    pthread_mutex_lock(&a->mu);
    st_status rc = ST_OK;
    int64_t allocated = 0, requested = 0, reserved = 0, active = 0, nseg = 0, nfree = 0;
    size_t cap = 256;
    st_block **frees = malloc(cap * sizeof *frees);
    bool *seen = NULL;
    if (!frees) {
        rc = st_err(ST_ERR_MEMORY, "alloc check: out of host memory");
        goto out;
    }
    for (st_segment *s = a->segs; s; s = s->snext) {
        nseg++;
        reserved += (int64_t)s->size;
        if (s->owner != a) {
            rc = st_err(ST_ERR_RUNTIME, "alloc check: segment %p has another owner", (void *)s->ptr);
            goto out;
        }
        if (s->snext && s->snext->sprev != s) {
            rc = st_err(ST_ERR_RUNTIME, "alloc check: broken segment list");
            goto out;
        }
        if (!s->large ? s->size != SEG_SMALL : s->size % ROUND_LARGE != 0) {
            rc = st_err(ST_ERR_RUNTIME, "alloc check: %s segment of %zu bytes",
                        s->large ? "large" : "small", s->size);
            goto out;
        }
        char *expect = s->ptr;
        st_block *prev = NULL;
        for (st_block *b = s->first; b; prev = b, b = b->next) {
            if (b->prev != prev || b->segment != s) {
                rc = st_err(ST_ERR_RUNTIME, "alloc check: block %p has broken segment links",
                            b->ptr);
                goto out;
            }
            if ((char *)b->ptr != expect) {
                rc = st_err(ST_ERR_RUNTIME,
                            "alloc check: block at %p, expected %p (gap or overlap) in segment %p",
                            b->ptr, (void *)expect, (void *)s->ptr);
                goto out;
            }
            if (b->size == 0 || b->size % ROUND_BYTES || ((uintptr_t)b->ptr % 64) ||
                b->size > (size_t)(s->ptr + s->size - expect)) {
                rc = st_err(ST_ERR_RUNTIME,
                            "alloc check: block %p of %zu bytes misaligned or past its segment",
                            b->ptr, b->size);
                goto out;
            }
            expect += b->size;
            if (b->allocated) {
                active++;
                allocated += (int64_t)b->size;
                requested += (int64_t)b->requested;
                if (b->requested > b->size) {
                    rc = st_err(ST_ERR_RUNTIME, "alloc check: block %p of %zu bytes holds a "
                                "request of %zu", b->ptr, b->size, b->requested);
                    goto out;
                }
            } else {
                if (prev && !prev->allocated) {
                    rc = st_err(ST_ERR_RUNTIME,
                                "alloc check: adjacent free blocks %p and %p were not merged",
                                prev->ptr, b->ptr);
                    goto out;
                }
                if ((size_t)nfree == cap) {
                    cap *= 2;
                    st_block **nf = realloc(frees, cap * sizeof *frees);
                    if (!nf) {
                        rc = st_err(ST_ERR_MEMORY, "alloc check: out of host memory");
                        goto out;
                    }
                    frees = nf;
                }
                frees[nfree++] = b;
            }
        }
        if (expect != s->ptr + s->size) {
            rc = st_err(ST_ERR_RUNTIME,
                        "alloc check: blocks of segment %p cover %td of %zu bytes",
                        (void *)s->ptr, expect - s->ptr, s->size);
            goto out;
        }
    }
    qsort(frees, (size_t)nfree, sizeof *frees, cmp_ptr);
    seen = calloc((size_t)nfree + 1, sizeof *seen);
    if (!seen) {
        rc = st_err(ST_ERR_MEMORY, "alloc check: out of host memory");
        goto out;
    }
    int64_t listed = 0;
    if ((rc = check_pool(&a->small, false, frees, seen, nfree, &listed)) != ST_OK ||
        (rc = check_pool(&a->large, true, frees, seen, nfree, &listed)) != ST_OK)
        goto out;
    if (listed != nfree) {
        rc = st_err(ST_ERR_RUNTIME,
                    "alloc check: %" PRId64 " free blocks in segments, %" PRId64
                    " in free lists", nfree, listed);
        goto out;
    }
    const st_alloc_stats *st = &a->stats;
    if (st->allocated_bytes != allocated || st->requested_bytes != requested ||
        st->reserved_bytes != reserved || st->active_blocks != active ||
        st->num_segments != nseg) {
        rc = st_err(ST_ERR_RUNTIME,
                    "alloc check: stats (allocated %" PRId64 ", requested %" PRId64
                    ", reserved %" PRId64 ", active %" PRId64 ", segments %" PRId64
                    ") differ from the walk (%" PRId64 ", %" PRId64 ", %" PRId64
                    ", %" PRId64 ", %" PRId64 ")",
                    st->allocated_bytes, st->requested_bytes, st->reserved_bytes,
                    st->active_blocks, st->num_segments, allocated, requested, reserved,
                    active, nseg);
        goto out;
    }
    if (st->peak_allocated_bytes < st->allocated_bytes ||
        st->peak_reserved_bytes < st->reserved_bytes ||
        st->peak_requested_bytes < st->requested_bytes ||
        st->num_system_allocs - st->num_system_frees != st->num_segments ||
        st->num_allocs - st->num_frees != st->active_blocks) {
        rc = st_err(ST_ERR_RUNTIME, "alloc check: inconsistent counters (peaks or "
                    "alloc/free counts)");
        goto out;
    }
out:
    pthread_mutex_unlock(&a->mu);
    free(frees);
    free(seen);
    return rc;
}
