/* runtime/random.c - counter-based random numbers shared by every backend
 * (Philox4x32-10, uniform and Box-Muller normal at (seed, offset)) and the
 * global generator (seed plus a running counter offset that launches
 * reserve ranges of). Owns: st_philox, st_rand_uniform, st_rand_uniform_f,
 * st_rand_top, st_rand_normal, st_rt_manual_seed, st_rt_initial_seed, st_rt_rng_reserve,
 * and the replay base (st_rt_rng_replay_*): the generator state a compiled
 * forward run started from, set while its backward runs, so that a
 * checkpoint's recomputed draws (ST_ATTR_RNG_REPLAY) take the same numbers. */
#include <math.h>
#include <pthread.h>

#include "st_runtime.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

#define DEFAULT_SEED 67280421310721ull

/* Philox4x32 with 10 rounds (Salmon et al., Random123): key = the seed's
 * low and high 32-bit halves, counter = {lo32(counter), hi32(counter), 0, 0}. */
void st_philox(uint64_t seed, uint64_t counter, uint32_t out[4])
{
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32);
    uint32_t c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* 53 random bits of two 32-bit words -> [0, 1). */
static double u53(uint32_t lo, uint32_t hi)
{
    uint64_t bits = ((uint64_t)hi << 32 | lo) >> 11;
    return (double)bits * (1.0 / 9007199254740992.0);
}

double st_rand_uniform(uint64_t seed, uint64_t offset)
{
    uint32_t o[4];
    st_philox(seed, offset, o);
    return u53(o[0], o[1]);
}

/* The largest uniform of a float dtype: below 1 by half its ulp at 1
 * (float32 1 - 2^-24, float16 1 - 2^-11, bfloat16 1 - 2^-8). */
double st_rand_top(st_dtype dt)
{
    switch (dt) {
    case ST_FLOAT32: return 1.0 - 0x1p-24;
    case ST_FLOAT16: return 1.0 - 0x1p-11;
    case ST_BFLOAT16: return 1.0 - 0x1p-8;
    default: return 1.0;
    }
}

/* Point i of a launch at offset: word i & 3 of block offset + i / 4, its
 * top 24 bits. A launch reserves a block per point and uses a quarter of
 * them, so launches never share a block. */
double st_rand_uniform_f(uint64_t seed, uint64_t offset, uint64_t i)
{
    uint32_t o[4];
    st_philox(seed, offset + (i >> 2), o);
    return (double)(o[i & 3] >> 8) * 0x1p-24;
}

double st_rand_normal(uint64_t seed, uint64_t offset)
{
    uint32_t o[4];
    st_philox(seed, offset, o);
    double u1 = 1.0 - u53(o[0], o[1]); /* (0, 1]: log is finite */
    double u2 = u53(o[2], o[3]);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* ---- the global generator ---- */

static pthread_mutex_t rng_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t rng_seed = DEFAULT_SEED;
static uint64_t rng_offset;

void st_rt_manual_seed(uint64_t seed)
{
    pthread_mutex_lock(&rng_lock);
    rng_seed = seed;
    rng_offset = 0;
    pthread_mutex_unlock(&rng_lock);
}

uint64_t st_rt_initial_seed(void)
{
    pthread_mutex_lock(&rng_lock);
    uint64_t s = rng_seed;
    pthread_mutex_unlock(&rng_lock);
    return s;
}

void st_rt_rng_reserve(uint64_t n, uint64_t *seed, uint64_t *offset)
{
    pthread_mutex_lock(&rng_lock);
    if (seed)
        *seed = rng_seed;
    if (offset)
        *offset = rng_offset;
    rng_offset += n;
    pthread_mutex_unlock(&rng_lock);
}

void st_rt_rng_get_state(uint64_t *seed, uint64_t *offset)
{
    pthread_mutex_lock(&rng_lock);
    *seed = rng_seed;
    *offset = rng_offset;
    pthread_mutex_unlock(&rng_lock);
}

void st_rt_rng_set_state(uint64_t seed, uint64_t offset)
{
    pthread_mutex_lock(&rng_lock);
    rng_seed = seed;
    rng_offset = offset;
    pthread_mutex_unlock(&rng_lock);
}

/* ---- the replay base (per thread: a backward runs on its caller's) ---- */

static _Thread_local bool replay_on;
static _Thread_local uint64_t replay_seed, replay_offset;

void st_rt_rng_replay_begin(uint64_t seed, uint64_t offset, st_rng_replay *saved)
{
    saved->on = replay_on;
    saved->seed = replay_seed;
    saved->offset = replay_offset;
    replay_on = true;
    replay_seed = seed;
    replay_offset = offset;
}

void st_rt_rng_replay_end(const st_rng_replay *saved)
{
    replay_on = saved->on;
    replay_seed = saved->seed;
    replay_offset = saved->offset;
}

bool st_rt_rng_replay_base(uint64_t *seed, uint64_t *offset)
{
    *seed = replay_seed;
    *offset = replay_offset;
    return replay_on;
}
