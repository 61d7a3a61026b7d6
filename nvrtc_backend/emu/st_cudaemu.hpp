/* st_cudaemu.hpp - the CUDA emulation header of the "cudaemu" testing
 * backend: force-included (g++ -include) in front of the NVRTC renderer's
 * CUDA C so that it compiles as host C++ into a shared object, and runs
 * there. It owns two things:
 * - the ABI between the host (cudaemu.c, plain C: it includes this file
 *   with ST_CUDAEMU_ABI_ONLY defined) and a compiled object: one launch
 *   record and one extern "C" entry point, defined by the line
 *   ST_CUDAEMU_ENTRY the host appends after the rendered source;
 * - what the generated code uses from CUDA: the qualifiers (__global__,
 *   __shared__ as static thread_local, ...), threadIdx/blockIdx/blockDim/
 *   gridDim, __syncthreads, warp shuffles, atomics, bit casts, the math
 *   functions the host C library lacks; and the scheduler that runs a grid.
 * Execution model: the threads of a block are cooperative fibers run by
 * the calling OS thread, each until it returns or waits, in thread order
 * (or last first: st_cudaemu_launch.reverse); the blocks of the grid run
 * one after another (x fastest, or last first), so static thread_local
 * "shared memory" is the block's. Fibers switch by an x86-64 stack switch
 * of our own; ucontext elsewhere or when ST_CUDAEMU_UCONTEXT is defined
 * (each of its switches is a system call: the tests run ~10x slower).
 * __syncthreads is a barrier over the block's fibers that have not
 * returned; a warp (32 consecutive linear thread ids) synchronizes on its
 * own for a shuffle (a slot per lane, a warp barrier after writing and
 * after reading), so a warp may skip a shuffle another warp makes. When no
 * fiber can run and no barrier can complete the launch fails (a deadlock,
 * named), as do a shuffle reading a lane that is not at the same shuffle
 * and inline PTX (asm volatile, which the host rewrites into ST_EMU_ASM):
 * the scheduler never hangs and never aborts. Fiber stacks come from the
 * host (the launch record), so an object holds no memory between launches
 * and needs no symbol from the host. Prefixes: st_cudaemu_ (ABI), st_emu_
 * (the rest). Not for production: a testing backend (DESIGN.md). */
#ifndef ST_CUDAEMU_HPP
#define ST_CUDAEMU_HPP

/* ---- the ABI (C and C++) ---- */
#ifdef __cplusplus
extern "C" {
#endif

/* The kernel's exact signature: (const st_kargs, unsigned, st_kerr *) and
 * a fourth parameter of NAME_col (void *) and of NAME_epi (const float *
 * or const double *). */
enum {
    ST_CUDAEMU_SIG3 = 0,
    ST_CUDAEMU_SIG_VOIDP = 1,
    ST_CUDAEMU_SIG_FLOATP = 2,
    ST_CUDAEMU_SIG_DOUBLEP = 3,
};

typedef struct st_cudaemu_launch {
    unsigned grid[3], block[3];
    void (*fn)(void);        /* the kernel (dlsym), called through its exact type */
    int sig;                 /* ST_CUDAEMU_SIG_* */
    const void *args;        /* the st_kargs (host pointers) */
    unsigned flags;
    void *err;               /* the st_kerr record */
    void *extra;             /* the fourth argument */
    const char *name;        /* the kernel's name, for messages */
    int reverse;             /* run a block's ready threads, and the grid's
                                blocks, last first (races the forward order
                                hides show up) */
    /* nstacks fiber stacks of stack_size bytes each (16-byte aligned,
     * owned by the host; nstacks >= the block's threads) */
    char *stacks;
    unsigned long stack_size;
    unsigned nstacks;
    char msg[512];           /* out: why the launch failed */
} st_cudaemu_launch;

/* The entry point of a compiled object: 0, or non-zero with L->msg set. */
typedef int (*st_cudaemu_entry_fn)(st_cudaemu_launch *L);
#define ST_CUDAEMU_ENTRY_SYMBOL "st_cudaemu_launch_v1"

#ifdef __cplusplus
}
#endif

#ifndef ST_CUDAEMU_ABI_ONLY
#ifndef __cplusplus
#error "st_cudaemu.hpp: the emulation part is C++ (ST_CUDAEMU_ABI_ONLY for the ABI alone)"
#endif

/* the x86-64 stack switch, unless ST_CUDAEMU_UCONTEXT asks for the
 * portable ucontext one (what other targets use) */
#if defined(__x86_64__) && !defined(ST_CUDAEMU_UCONTEXT)
#define ST_EMU_X86_SWITCH 1
#else
#define ST_EMU_X86_SWITCH 0
#endif

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !ST_EMU_X86_SWITCH
#include <ucontext.h>
#endif

/* ---- qualifiers ---- */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __shared__ static thread_local
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict
#define __constant__ static const

/* ---- the scheduler's state (per OS thread) ---- */
struct st_emu_u3 {
    unsigned x, y, z;
};

enum { ST_EMU_READY, ST_EMU_BLOCKBAR, ST_EMU_WARPBAR, ST_EMU_DONE };

struct st_emu_fiber {
    void *sp;                  /* saved stack pointer (x86-64) */
#if !ST_EMU_X86_SWITCH
    ucontext_t uc;
#endif
    st_emu_u3 tid;
    unsigned lin, warp, lane;
    int state;
    unsigned wseq;             /* warp barriers entered */
};

struct st_emu_warp {
    uint64_t slot[32];         /* a shuffle's values, by lane */
    uint32_t valid;            /* lanes that wrote slot[] this shuffle */
    unsigned live, waiting;    /* lanes not returned; at the warp barrier */
    bool clear_on_release;     /* the barrier after reading: valid = 0 */
};

struct st_emu_block {
    st_emu_u3 block_idx, block_dim, grid_dim;
    st_emu_fiber *fibers;
    st_emu_warp *warps;
    unsigned n, nwarps, live, blockbar;
    void *sched_sp;
#if !ST_EMU_X86_SWITCH
    ucontext_t sched_uc;
#endif
    void (*body)(void *);      /* runs the kernel for the current fiber */
    st_cudaemu_launch *L;
    bool failed;
};

static thread_local st_emu_fiber *st_emu_cur;
static thread_local st_emu_block *st_emu_blk;

#define threadIdx (st_emu_cur->tid)
#define blockIdx (st_emu_blk->block_idx)
#define blockDim (st_emu_blk->block_dim)
#define gridDim (st_emu_blk->grid_dim)
#define warpSize 32

/* ---- the stack switch ---- */
#if ST_EMU_X86_SWITCH
/* st_emu_switch(save, to): saves the callee-saved registers, MXCSR and the
 * x87 control word on the current stack and its pointer into *save, then
 * resumes the stack `to` (a frame this function or st_emu_stack_init
 * made). st_emu_start: a new fiber's first return lands here, with the
 * fiber in r12 and its entry function in r13. Hidden: each object has its
 * own copy. */
extern "C" void st_emu_switch_v1(void **save, void *to) __attribute__((visibility("hidden")));
extern "C" void st_emu_start_v1(void) __attribute__((visibility("hidden")));
asm(".text\n"
    ".globl st_emu_switch_v1\n.hidden st_emu_switch_v1\n"
    ".type st_emu_switch_v1,@function\n.p2align 4\n"
    "st_emu_switch_v1:\n"
    "    pushq %rbp\n    pushq %rbx\n    pushq %r12\n"
    "    pushq %r13\n    pushq %r14\n    pushq %r15\n"
    "    subq $8, %rsp\n    stmxcsr (%rsp)\n    fnstcw 4(%rsp)\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    ldmxcsr (%rsp)\n    fldcw 4(%rsp)\n    addq $8, %rsp\n"
    "    popq %r15\n    popq %r14\n    popq %r13\n"
    "    popq %r12\n    popq %rbx\n    popq %rbp\n"
    "    ret\n"
    ".size st_emu_switch_v1, .-st_emu_switch_v1\n"
    ".globl st_emu_start_v1\n.hidden st_emu_start_v1\n"
    ".type st_emu_start_v1,@function\n.p2align 4\n"
    "st_emu_start_v1:\n"
    "    movq %r12, %rdi\n"
    "    callq *%r13\n"
    "    ud2\n"
    ".size st_emu_start_v1, .-st_emu_start_v1\n");

static void st_emu_fiber_main(st_emu_fiber *f);

/* the first frame of fiber f on the stack [lo, lo + size) */
static void st_emu_stack_init(st_emu_fiber *f, char *lo, unsigned long size)
{
    uintptr_t top = ((uintptr_t)lo + size) & ~(uintptr_t)15;
    uint64_t *s = (uint64_t *)top;
    uint32_t csr;
    uint16_t cw;
    __asm__ volatile("stmxcsr %0" : "=m"(csr));
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    s[-1] = 0;                                  /* after the return: rsp = top - 16 */
    s[-2] = 0;
    s[-3] = (uint64_t)(uintptr_t)&st_emu_start_v1;  /* ret */
    s[-4] = 0;                                  /* rbp */
    s[-5] = 0;                                  /* rbx */
    s[-6] = (uint64_t)(uintptr_t)f;             /* r12 */
    s[-7] = (uint64_t)(uintptr_t)&st_emu_fiber_main; /* r13 */
    s[-8] = 0;                                  /* r14 */
    s[-9] = 0;                                  /* r15 */
    s[-10] = (uint64_t)csr | ((uint64_t)cw << 32);
    f->sp = &s[-10];
}

static inline void st_emu_to_fiber(st_emu_block *B, st_emu_fiber *f)
{
    st_emu_cur = f;
    st_emu_switch_v1(&B->sched_sp, f->sp);
}

static inline void st_emu_to_sched(st_emu_block *B, st_emu_fiber *f)
{
    st_emu_switch_v1(&f->sp, B->sched_sp);
}
#else
static void st_emu_fiber_main(st_emu_fiber *f);

static void st_emu_uc_entry(void)
{
    st_emu_fiber_main(st_emu_cur);
}

static void st_emu_stack_init(st_emu_fiber *f, char *lo, unsigned long size)
{
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = lo;
    f->uc.uc_stack.ss_size = size;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, st_emu_uc_entry, 0);
}

static inline void st_emu_to_fiber(st_emu_block *B, st_emu_fiber *f)
{
    st_emu_cur = f;
    swapcontext(&B->sched_uc, &f->uc);
}

static inline void st_emu_to_sched(st_emu_block *B, st_emu_fiber *f)
{
    swapcontext(&f->uc, &B->sched_uc);
}
#endif

static void st_emu_fiber_main(st_emu_fiber *f)
{
    st_emu_block *B = st_emu_blk;
    B->body(B->L);
    f->state = ST_EMU_DONE;
    B->live--;
    B->warps[f->warp].live--;
    st_emu_to_sched(B, f);   /* never resumed */
    __builtin_trap();
}

/* Fails the launch with a message (the first one wins) and leaves the
 * fiber for good. */
static void st_emu_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void st_emu_fail(const char *fmt, ...)
{
    st_emu_block *B = st_emu_blk;
    st_emu_fiber *f = st_emu_cur;
    if (!B->failed) {
        va_list ap;
        va_start(ap, fmt);
        char m[400];
        vsnprintf(m, sizeof m, fmt, ap);
        va_end(ap);
        snprintf(B->L->msg, sizeof B->L->msg,
                 "kernel %s, block (%u,%u,%u), thread (%u,%u,%u): %s",
                 B->L->name ? B->L->name : "?", B->block_idx.x, B->block_idx.y,
                 B->block_idx.z, f->tid.x, f->tid.y, f->tid.z, m);
    }
    B->failed = true;
    f->state = ST_EMU_DONE;
    st_emu_to_sched(B, f);
    __builtin_trap();
}

/* inline PTX: the host rewrites `asm volatile(` into ST_EMU_ASM( */
#define ST_EMU_ASM(...)                                                            \
    st_emu_fail("inline PTX (asm volatile) cannot run on the CPU; cudaemu never "     \
                "launches kernels that use it (the NAME_mma tensor-core variants)")
#define __trap() st_emu_fail("__trap()")

/* ---- barriers ---- */
static inline void __syncthreads(void)
{
    st_emu_block *B = st_emu_blk;
    st_emu_fiber *f = st_emu_cur;
    f->state = ST_EMU_BLOCKBAR;
    B->blockbar++;
    st_emu_to_sched(B, f);
}

/* the warp barrier; clear: the one after a shuffle's reads */
static inline void st_emu_warp_bar(bool clear)
{
    st_emu_block *B = st_emu_blk;
    st_emu_fiber *f = st_emu_cur;
    st_emu_warp *w = &B->warps[f->warp];
    f->state = ST_EMU_WARPBAR;
    f->wseq++;
    w->waiting++;
    if (clear)
        w->clear_on_release = true;
    st_emu_to_sched(B, f);
}

static inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    (void)mask;
    st_emu_warp_bar(true);
}

/* A warp exchange: every live lane writes its value, then reads lane
 * src(lane) (which must have written at this shuffle). */
template <class T, class F>
static inline T st_emu_shfl(T v, F src)
{
    static_assert(sizeof(T) <= 8, "cudaemu: shuffles of at most 8 bytes");
    st_emu_fiber *f = st_emu_cur;
    st_emu_warp *w = &st_emu_blk->warps[f->warp];
    uint64_t bits = 0;
    memcpy(&bits, &v, sizeof(T));
    w->slot[f->lane] = bits;
    w->valid |= 1u << f->lane;
    st_emu_warp_bar(false);
    f = st_emu_cur;
    unsigned s = src(f->lane);
    T r = v;
    if (s < 32) {   /* out of range: the lane's own value, as CUDA */
        if (!((w->valid >> s) & 1u))
            st_emu_fail("warp shuffle: lane %u reads lane %u, which is not at this shuffle "
                        "(it returned, or diverged)", f->lane, s);
        memcpy(&r, &w->slot[s], sizeof(T));
    }
    st_emu_warp_bar(true);
    return r;
}

template <class T>
static inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32)
{
    (void)mask;
    return st_emu_shfl(v, [=](unsigned lane) {
        unsigned s = lane ^ (unsigned)m;
        return (s & ~(unsigned)(width - 1)) == (lane & ~(unsigned)(width - 1)) ? s : 99u;
    });
}

template <class T>
static inline T __shfl_sync(unsigned mask, T v, int srcl, int width = 32)
{
    (void)mask;
    return st_emu_shfl(v, [=](unsigned lane) {
        return (lane & ~(unsigned)(width - 1)) + ((unsigned)srcl & (unsigned)(width - 1));
    });
}

template <class T>
static inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32)
{
    (void)mask;
    return st_emu_shfl(v, [=](unsigned lane) {
        unsigned seg = lane & (unsigned)(width - 1);
        return seg + d < (unsigned)width ? lane + d : 99u;
    });
}

template <class T>
static inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32)
{
    (void)mask;
    return st_emu_shfl(v, [=](unsigned lane) {
        unsigned seg = lane & (unsigned)(width - 1);
        return seg >= d ? lane - d : 99u;
    });
}

/* __ballot_sync and friends: every live lane's predicate */
static inline unsigned __ballot_sync(unsigned mask, int pred)
{
    (void)mask;
    st_emu_fiber *f = st_emu_cur;
    st_emu_warp *w = &st_emu_blk->warps[f->warp];
    w->slot[f->lane] = pred != 0;
    w->valid |= 1u << f->lane;
    st_emu_warp_bar(false);
    unsigned r = 0;
    for (unsigned l = 0; l < 32; l++)
        if (((w->valid >> l) & 1u) && w->slot[l])
            r |= 1u << l;
    st_emu_warp_bar(true);
    return r;
}
static inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
static inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, !pred) == 0; }

/* ---- memory ---- */
static inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
template <class T> static inline T __ldcg(const T *p) { return *p; }
template <class T> static inline T __ldg(const T *p) { return *p; }
template <class T> static inline T __ldca(const T *p) { return *p; }
template <class T> static inline T __ldcs(const T *p) { return *p; }
template <class T> static inline void __stcg(T *p, T v) { *p = v; }
template <class T> static inline void __stcs(T *p, T v) { *p = v; }

/* ---- atomics (fibers are cooperative; real atomics all the same) ---- */
#define ST_EMU_ATOMIC_INT(T)                                                           \
    static inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); } \
    static inline T atomicSub(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); } \
    static inline T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }   \
    static inline T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); } \
    static inline T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); } \
    static inline T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); } \
    static inline T atomicCAS(T *p, T cmp, T v)                                        \
    {                                                                                  \
        __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
        return cmp;                                                                    \
    }                                                                                  \
    static inline T atomicMax(T *p, T v)                                               \
    {                                                                                  \
        T o = *p;                                                                      \
        while (o < v && !__atomic_compare_exchange_n(p, &o, v, false, __ATOMIC_SEQ_CST,  \
                                                     __ATOMIC_SEQ_CST)) {}             \
        return o;                                                                      \
    }                                                                                  \
    static inline T atomicMin(T *p, T v)                                               \
    {                                                                                  \
        T o = *p;                                                                      \
        while (o > v && !__atomic_compare_exchange_n(p, &o, v, false, __ATOMIC_SEQ_CST,  \
                                                     __ATOMIC_SEQ_CST)) {}             \
        return o;                                                                      \
    }
ST_EMU_ATOMIC_INT(int)
ST_EMU_ATOMIC_INT(unsigned)
ST_EMU_ATOMIC_INT(long long)
ST_EMU_ATOMIC_INT(unsigned long long)
#undef ST_EMU_ATOMIC_INT

#define ST_EMU_ATOMIC_FLOAT(T, U)                                                      \
    static inline T atomicAdd(T *p, T v)                                               \
    {                                                                                  \
        U o = __atomic_load_n((U *)p, __ATOMIC_SEQ_CST), n;                            \
        T x;                                                                           \
        do {                                                                           \
            memcpy(&x, &o, sizeof x);                                                  \
            x = x + v;                                                                 \
            memcpy(&n, &x, sizeof n);                                                  \
        } while (!__atomic_compare_exchange_n((U *)p, &o, n, false, __ATOMIC_SEQ_CST,     \
                                              __ATOMIC_SEQ_CST));                      \
        memcpy(&x, &o, sizeof x);                                                      \
        return x;                                                                      \
    }                                                                                  \
    static inline T atomicExch(T *p, T v)                                              \
    {                                                                                  \
        U n, o;                                                                        \
        memcpy(&n, &v, sizeof n);                                                      \
        o = __atomic_exchange_n((U *)p, n, __ATOMIC_SEQ_CST);                          \
        T x;                                                                           \
        memcpy(&x, &o, sizeof x);                                                      \
        return x;                                                                      \
    }
ST_EMU_ATOMIC_FLOAT(float, uint32_t)
ST_EMU_ATOMIC_FLOAT(double, uint64_t)
#undef ST_EMU_ATOMIC_FLOAT

/* ---- bit casts and integer intrinsics ---- */
template <class D, class S> static inline D st_emu_bits(S s)
{
    static_assert(sizeof(D) == sizeof(S), "bit cast of different sizes");
    D d;
    memcpy(&d, &s, sizeof d);
    return d;
}
static inline double __longlong_as_double(long long x) { return st_emu_bits<double>(x); }
static inline long long __double_as_longlong(double x) { return st_emu_bits<long long>(x); }
static inline float __int_as_float(int x) { return st_emu_bits<float>(x); }
static inline int __float_as_int(float x) { return st_emu_bits<int>(x); }
static inline float __uint_as_float(unsigned x) { return st_emu_bits<float>(x); }
static inline unsigned __float_as_uint(float x) { return st_emu_bits<unsigned>(x); }
static inline double __hiloint2double(int hi, int lo)
{
    return st_emu_bits<double>((long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo));
}
static inline int __double2hiint(double x) { return (int)(st_emu_bits<unsigned long long>(x) >> 32); }
static inline int __double2loint(double x) { return (int)st_emu_bits<unsigned long long>(x); }
static inline unsigned __umulhi(unsigned a, unsigned b)
{
    return (unsigned)(((unsigned long long)a * b) >> 32);
}
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b)
{
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline long long __mul64hi(long long a, long long b)
{
    return (long long)(((__int128)a * b) >> 64);
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x)
{
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
    return (x >> 16) | (x << 16);
}

/* ---- CUDA math the C library lacks (round-to-nearest intrinsics are
 * the plain operations; the host compiles without FMA contraction). The
 * C library declares some __ names of its own: ours are st_emu_ names
 * the CUDA ones are macros onto. ---- */
static inline float st_emu_fadd_rn(float a, float b) { return a + b; }
static inline float st_emu_fsub_rn(float a, float b) { return a - b; }
static inline float st_emu_fmul_rn(float a, float b) { return a * b; }
static inline float st_emu_fdiv_rn(float a, float b) { return a / b; }
static inline float st_emu_frcp_rn(float a) { return 1.0f / a; }
static inline float st_emu_fsqrt_rn(float a) { return sqrtf(a); }
static inline float st_emu_fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline double st_emu_dadd_rn(double a, double b) { return a + b; }
static inline double st_emu_dsub_rn(double a, double b) { return a - b; }
static inline double st_emu_dmul_rn(double a, double b) { return a * b; }
static inline double st_emu_ddiv_rn(double a, double b) { return a / b; }
static inline double st_emu_drcp_rn(double a) { return 1.0 / a; }
static inline double st_emu_dsqrt_rn(double a) { return sqrt(a); }
static inline double st_emu_fma_rn(double a, double b, double c) { return fma(a, b, c); }
static inline float st_emu_fdividef(float a, float b) { return a / b; }
static inline float st_emu_expf(float x) { return expf(x); }
static inline float st_emu_exp10f(float x) { return powf(10.0f, x); }
static inline float st_emu_logf(float x) { return logf(x); }
static inline float st_emu_log2f(float x) { return log2f(x); }
static inline float st_emu_log10f(float x) { return log10f(x); }
static inline float st_emu_sinf(float x) { return sinf(x); }
static inline float st_emu_cosf(float x) { return cosf(x); }
static inline float st_emu_tanf(float x) { return tanf(x); }
static inline float st_emu_powf(float a, float b) { return powf(a, b); }
static inline float st_emu_saturatef(float x) { return x != x ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
#define __fadd_rn st_emu_fadd_rn
#define __fsub_rn st_emu_fsub_rn
#define __fmul_rn st_emu_fmul_rn
#define __fdiv_rn st_emu_fdiv_rn
#define __frcp_rn st_emu_frcp_rn
#define __fsqrt_rn st_emu_fsqrt_rn
#define __fmaf_rn st_emu_fmaf_rn
#define __dadd_rn st_emu_dadd_rn
#define __dsub_rn st_emu_dsub_rn
#define __dmul_rn st_emu_dmul_rn
#define __ddiv_rn st_emu_ddiv_rn
#define __drcp_rn st_emu_drcp_rn
#define __dsqrt_rn st_emu_dsqrt_rn
#define __fma_rn st_emu_fma_rn
#define __fdividef st_emu_fdividef
#define __expf st_emu_expf
#define __exp10f st_emu_exp10f
#define __logf st_emu_logf
#define __log2f st_emu_log2f
#define __log10f st_emu_log10f
#define __sinf st_emu_sinf
#define __cosf st_emu_cosf
#define __tanf st_emu_tanf
#define __powf st_emu_powf
#define __saturatef st_emu_saturatef
/* names C23 gives the C library too (rsqrt, ...) are macros onto our own */
static inline float st_emu_rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double st_emu_rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float st_emu_rcbrtf(float x) { return 1.0f / cbrtf(x); }
static inline double st_emu_rcbrt(double x) { return 1.0 / cbrt(x); }
static inline float st_emu_sinpif(float x) { return sinf((float)M_PI * x); }
static inline double st_emu_sinpi(double x) { return sin(M_PI * x); }
static inline float st_emu_cospif(float x) { return cosf((float)M_PI * x); }
static inline double st_emu_cospi(double x) { return cos(M_PI * x); }
static inline float st_emu_normcdff(float x) { return 0.5f * erfcf(-x * (float)M_SQRT1_2); }
static inline double st_emu_normcdf(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }
#define rsqrtf st_emu_rsqrtf
#define rsqrt st_emu_rsqrt
#define rcbrtf st_emu_rcbrtf
#define rcbrt st_emu_rcbrt
#define sinpif st_emu_sinpif
#define sinpi st_emu_sinpi
#define cospif st_emu_cospif
#define cospi st_emu_cospi
#define normcdff st_emu_normcdff
#define normcdf st_emu_normcdf
static inline float fdividef(float a, float b) { return a / b; }
static inline float saturatef(float x) { return st_emu_saturatef(x); }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }

/* ---- the grid ---- */

/* Runs the block B->block_idx: a fiber per thread until every one has
 * returned; false (the message set) on a failure or a deadlock. */
static bool st_emu_run_block(st_emu_block *B)
{
    st_cudaemu_launch *L = B->L;
    unsigned bx = B->block_dim.x, by = B->block_dim.y;
    for (unsigned w = 0; w < B->nwarps; w++) {
        st_emu_warp *wp = &B->warps[w];
        wp->valid = 0;
        wp->waiting = 0;
        wp->clear_on_release = false;
        wp->live = (w + 1) * 32 <= B->n ? 32 : B->n - w * 32;
    }
    for (unsigned i = 0; i < B->n; i++) {
        st_emu_fiber *f = &B->fibers[i];
        f->lin = i;
        f->tid.x = i % bx;
        f->tid.y = (i / bx) % by;
        f->tid.z = i / (bx * by);
        f->warp = i / 32;
        f->lane = i % 32;
        f->state = ST_EMU_READY;
        f->wseq = 0;
        st_emu_stack_init(f, L->stacks + (unsigned long)i * L->stack_size, L->stack_size);
    }
    B->live = B->n;
    B->blockbar = 0;
    for (;;) {
        for (unsigned j = 0; j < B->n; j++) {
            st_emu_fiber *f = &B->fibers[L->reverse ? B->n - 1 - j : j];
            if (f->state != ST_EMU_READY)
                continue;
            st_emu_to_fiber(B, f);
            if (B->failed)
                return false;
        }
        if (B->live == 0)
            return true;
        /* every fiber waits: complete what can complete */
        bool released = false;
        for (unsigned w = 0; w < B->nwarps; w++) {
            st_emu_warp *wp = &B->warps[w];
            if (wp->waiting == 0 || wp->waiting != wp->live)
                continue;
            unsigned seq = 0;
            bool first = true;
            for (unsigned l = 0; l < 32 && w * 32 + l < B->n; l++) {
                st_emu_fiber *f = &B->fibers[w * 32 + l];
                if (f->state != ST_EMU_WARPBAR)
                    continue;
                if (!first && f->wseq != seq) {
                    snprintf(L->msg, sizeof L->msg,
                             "kernel %s, block (%u,%u,%u): the lanes of warp %u are at "
                             "different warp synchronizations (divergent shuffles)",
                             L->name ? L->name : "?", B->block_idx.x, B->block_idx.y,
                             B->block_idx.z, w);
                    return false;
                }
                seq = f->wseq;
                first = false;
                f->state = ST_EMU_READY;
            }
            wp->waiting = 0;
            if (wp->clear_on_release)
                wp->valid = 0;
            wp->clear_on_release = false;
            released = true;
        }
        if (!released && B->blockbar > 0 && B->blockbar == B->live) {
            for (unsigned i = 0; i < B->n; i++)
                if (B->fibers[i].state == ST_EMU_BLOCKBAR)
                    B->fibers[i].state = ST_EMU_READY;
            B->blockbar = 0;
            released = true;
        }
        if (!released) {
            unsigned nw = 0;
            for (unsigned w = 0; w < B->nwarps; w++)
                nw += B->warps[w].waiting;
            snprintf(L->msg, sizeof L->msg,
                     "kernel %s, block (%u,%u,%u): deadlock: %u thread(s) wait at "
                     "__syncthreads, %u at a warp shuffle, %u of %u returned",
                     L->name ? L->name : "?", B->block_idx.x, B->block_idx.y, B->block_idx.z,
                     B->blockbar, nw, B->n - B->live, B->n);
            return false;
        }
    }
}

static int st_emu_run(st_cudaemu_launch *L, void (*body)(void *))
{
    L->msg[0] = 0;
    unsigned long n = (unsigned long)L->block[0] * L->block[1] * L->block[2];
    /* the device's limits (cuLaunchKernel refuses what exceeds them) */
    if (n == 0 || n > 1024 || L->block[0] > 1024 || L->block[1] > 1024 || L->block[2] > 64 ||
        L->grid[0] == 0 || L->grid[1] == 0 || L->grid[2] == 0 || L->grid[0] > 0x7fffffffu ||
        L->grid[1] > 65535 || L->grid[2] > 65535) {
        snprintf(L->msg, sizeof L->msg, "kernel %s: bad launch: grid %ux%ux%u, block %ux%ux%u",
                 L->name ? L->name : "?", L->grid[0], L->grid[1], L->grid[2], L->block[0],
                 L->block[1], L->block[2]);
        return 1;
    }
    if (n > L->nstacks || L->stack_size < 16384) {
        snprintf(L->msg, sizeof L->msg, "kernel %s: %lu threads, %u fiber stacks",
                 L->name ? L->name : "?", n, L->nstacks);
        return 1;
    }
    st_emu_block B;
    memset(&B, 0, sizeof B);
    B.L = L;
    B.body = body;
    B.n = (unsigned)n;
    B.nwarps = (unsigned)((n + 31) / 32);
    B.fibers = (st_emu_fiber *)calloc(n, sizeof(st_emu_fiber));
    B.warps = (st_emu_warp *)calloc(B.nwarps, sizeof(st_emu_warp));
    if (!B.fibers || !B.warps) {
        free(B.fibers);
        free(B.warps);
        snprintf(L->msg, sizeof L->msg, "kernel %s: out of memory", L->name ? L->name : "?");
        return 1;
    }
    B.block_dim = {L->block[0], L->block[1], L->block[2]};
    B.grid_dim = {L->grid[0], L->grid[1], L->grid[2]};
    st_emu_block *prev_blk = st_emu_blk;
    st_emu_fiber *prev_cur = st_emu_cur;
    st_emu_blk = &B;
    bool ok = true;
    unsigned long nb = (unsigned long)L->grid[0] * L->grid[1] * L->grid[2];
    for (unsigned long j = 0; ok && j < nb; j++) {
        unsigned long b = L->reverse ? nb - 1 - j : j;
        B.block_idx = {(unsigned)(b % L->grid[0]), (unsigned)(b / L->grid[0] % L->grid[1]),
                       (unsigned)(b / L->grid[0] / L->grid[1])};
        ok = st_emu_run_block(&B);
    }
    st_emu_blk = prev_blk;
    st_emu_cur = prev_cur;
    free(B.fibers);
    free(B.warps);
    return ok ? 0 : 1;
}

/* The kernel of L for the current fiber, called through its exact type. */
template <class K, class E>
static void st_emu_body(void *p)
{
    st_cudaemu_launch *L = (st_cudaemu_launch *)p;
    const K &a = *(const K *)L->args;
    E *err = (E *)L->err;
    switch (L->sig) {
    case ST_CUDAEMU_SIG3:
        ((void (*)(const K, unsigned, E *))L->fn)(a, L->flags, err);
        break;
    case ST_CUDAEMU_SIG_VOIDP:
        ((void (*)(const K, unsigned, E *, void *))L->fn)(a, L->flags, err, L->extra);
        break;
    case ST_CUDAEMU_SIG_FLOATP:
        ((void (*)(const K, unsigned, E *, const float *))L->fn)(a, L->flags, err,
                                                                 (const float *)L->extra);
        break;
    case ST_CUDAEMU_SIG_DOUBLEP:
        ((void (*)(const K, unsigned, E *, const double *))L->fn)(a, L->flags, err,
                                                                  (const double *)L->extra);
        break;
    default:
        st_emu_fail("unknown kernel signature %d", L->sig);
    }
}

/* The entry point, appended by the host after the rendered source (where
 * st_kargs and st_kerr are complete). */
#define ST_CUDAEMU_ENTRY                                                                    \
    extern "C" __attribute__((visibility("default"))) int st_cudaemu_launch_v1(            \
        st_cudaemu_launch *L)                                                               \
    {                                                                                       \
        return st_emu_run(L, st_emu_body<st_kargs, st_kerr>);                               \
    }

#endif /* ST_CUDAEMU_ABI_ONLY */
#endif
