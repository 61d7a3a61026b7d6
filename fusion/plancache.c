/* fusion/plancache.c - memory plans kept per layout: st_fuse_plan_acquire
 * returns the plan of a lowered program for the sizes its graph holds now
 * and its inputs' strides, made by st_fuse_plan once per distinct layout
 * and kept by the program (PC_SLOTS of them, the least recently used one
 * replaced when it is not in use). Planning walks every value of the graph:
 * for a backward graph of a few thousand statements it costs tens of
 * milliseconds, which a compiled step with a non-contiguous input (a
 * transposed weight, a detached slice) paid on every call before, as did
 * the fused optimizer's update for every parameter. The key is a 128-bit
 * hash of every value's dtype and shape and of every input's strides.
 * Owns: st_fuse_plan_acquire, st_fuse_plan_release, st_fuse_plan_cache_clear,
 * st_fuse_plan_cache_stats. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "st_kernel.h"

#define PC_SLOTS 16

typedef struct {
    XXH128_hash_t key;
    st_mem_plan *plan;
    uint64_t used;     /* the clock at the last acquire */
    int refs;          /* acquired and not yet released */
} pc_slot;

struct st_plan_cache {
    pc_slot slot[PC_SLOTS];
    int n;
    uint64_t clock;
};

static pthread_mutex_t pc_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t pc_hits, pc_made;   /* under pc_lock */

static XXH128_hash_t layout_key(const st_kprog *p, const int64_t *const *input_strides)
{
    const st_graph *g = p->graph;
    XXH3_state_t *st = XXH3_createState();
    XXH128_hash_t h = {0, 0};
    if (!st)
        return h;
    XXH3_128bits_reset(st);
    for (int v = 0; v < g->nvalues; v++) {
        const st_meta *m = &g->values[v].meta;
        int32_t head[2] = {(int32_t)m->dtype, (int32_t)m->ndim};
        XXH3_128bits_update(st, head, sizeof head);
        XXH3_128bits_update(st, m->shape, sizeof(int64_t) * (size_t)m->ndim);
    }
    for (int k = 0; k < g->ninputs; k++) {
        const st_meta *m = &g->values[g->inputs[k]].meta;
        const int64_t *s = input_strides ? input_strides[k] : NULL;
        uint8_t given = s != NULL;
        XXH3_128bits_update(st, &given, 1);
        if (s)
            XXH3_128bits_update(st, s, sizeof(int64_t) * (size_t)m->ndim);
    }
    h = XXH3_128bits_digest(st);
    XXH3_freeState(st);
    return h;
}

/* The slot to fill: a free one, else the least recently used one not in
 * use (its plan freed); -1 when every slot is in use. */
static int victim(struct st_plan_cache *c)
{
    if (c->n < PC_SLOTS)
        return c->n++;
    int at = -1;
    for (int i = 0; i < PC_SLOTS; i++)
        if (c->slot[i].refs == 0 && (at < 0 || c->slot[i].used < c->slot[at].used))
            at = i;
    if (at >= 0) {
        st_mem_plan_free(c->slot[at].plan);
        c->slot[at].plan = NULL;
    }
    return at;
}

const st_mem_plan *st_fuse_plan_acquire(st_kprog *p, const int64_t *const *input_strides)
{
    XXH128_hash_t key = layout_key(p, input_strides);
    pthread_mutex_lock(&pc_lock);
    struct st_plan_cache *c = p->plans;
    if (!c && (c = calloc(1, sizeof *c)))
        p->plans = c;
    for (int i = 0; c && i < c->n; i++)
        if (c->slot[i].plan && XXH128_isEqual(c->slot[i].key, key)) {
            c->slot[i].used = ++c->clock;
            c->slot[i].refs++;
            pc_hits++;
            const st_mem_plan *hit = c->slot[i].plan;
            pthread_mutex_unlock(&pc_lock);
            return hit;
        }
    pthread_mutex_unlock(&pc_lock);
    st_mem_plan *m = st_fuse_plan(p, input_strides);
    if (!m)
        return NULL;
    pthread_mutex_lock(&pc_lock);
    pc_made++;
    int at = c ? victim(c) : -1;
    if (at >= 0)
        c->slot[at] = (pc_slot){key, m, ++c->clock, 1};
    pthread_mutex_unlock(&pc_lock);
    return m;     /* not kept (no slot free): st_fuse_plan_release frees it */
}

void st_fuse_plan_release(st_kprog *p, const st_mem_plan *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&pc_lock);
    struct st_plan_cache *c = p->plans;
    for (int i = 0; c && i < c->n; i++)
        if (c->slot[i].plan == m) {
            c->slot[i].refs--;
            pthread_mutex_unlock(&pc_lock);
            return;
        }
    pthread_mutex_unlock(&pc_lock);
    st_mem_plan_free((st_mem_plan *)m);
}

void st_fuse_plan_cache_clear(st_kprog *p)
{
    struct st_plan_cache *c = p->plans;
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        st_mem_plan_free(c->slot[i].plan);
    free(c);
    p->plans = NULL;
}

void st_fuse_plan_cache_stats(int64_t *hits, int64_t *made)
{
    pthread_mutex_lock(&pc_lock);
    *hits = pc_hits;
    *made = pc_made;
    pthread_mutex_unlock(&pc_lock);
}
