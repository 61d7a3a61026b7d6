/* backend.c - the "nvrtc" st_backend: compile = render every kernel of a
 * graph into one translation unit, NVRTC it for the device's sm_XX, load
 * the cubin with cuModuleLoadData and look the functions up; launch =
 * st_nvrtc_launch_config + cuLaunchKernel on the device's stream with the
 * st_kargs struct by value, then (for now) a synchronize and a read of the
 * kernel's error record, so that an index out of bounds is reported as on
 * the CPU. Kernels run on cuda:0 for now. NOTE: this file has NOT run on a
 * GPU yet: it is compiled and linked, and st_nvrtc_register() refuses to
 * register without a CUDA device. Owns: st_nvrtc_backend, st_nvrtc_register. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvrtc_internal.h"
#include "st_cuda.h"

typedef struct {
    st_device *dev;
    st_cu_module mod;
    st_cu_ptr err;                /* a device st_nvrtc_kerr */
    int n;
    const st_kernel *ks;
    st_cu_function *fn, *fn_mma;  /* per kernel; NULL for VIEW kernels */
} compiled;

static void release(st_backend *be, void *h)
{
    (void)be;
    compiled *c = h;
    if (!c)
        return;
    const st_cuda_api *api = st_cuda_api_get();
    if (api && c->dev && st_cuda_make_current(c->dev) == ST_OK) {
        if (c->err)
            api->MemFree(c->err);
        if (c->mod)
            api->ModuleUnload(c->mod);
    }
    free(c->fn);
    free(c->fn_mma);
    free(c);
}

static void *compile(st_backend *be, const st_kernel *ks, int n)
{
    const st_cuda_api *api = st_cuda_api_get();
    if (!api)
        return NULL;
    st_device *dev = st_cuda_device(0);
    if (!dev || st_cuda_make_current(dev) != ST_OK)
        return NULL;
    st_cuda_dev *g = st_cuda_dev_of(dev);
    compiled *c = calloc(1, sizeof *c);
    if (!c) {
        st_err(ST_ERR_MEMORY, "nvrtc: out of memory");
        return NULL;
    }
    c->dev = dev;
    c->n = n;
    c->ks = ks;
    c->fn = calloc((size_t)n + 1, sizeof *c->fn);
    c->fn_mma = calloc((size_t)n + 1, sizeof *c->fn_mma);
    char *src = c->fn && c->fn_mma ? st_nvrtc_render(ks, n) : NULL;
    if (!src) {
        if (!c->fn || !c->fn_mma)
            st_err(ST_ERR_MEMORY, "nvrtc: out of memory");
        release(be, c);
        return NULL;
    }
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d", g->cc);
    st_nvrtc_output out;
    st_status s = st_nvrtc_compile(src, "symtrace_graph.cu", arch, false, &out);
    free(src);
    if (s == ST_OK)
        s = st_cuda_check(api->ModuleLoadData(&c->mod, out.image), "cuModuleLoadData");
    st_nvrtc_output_free(&out);
    if (s == ST_OK)
        s = st_cuda_check(api->MemAlloc(&c->err, sizeof(st_nvrtc_kerr)), "cuMemAlloc");
    if (s == ST_OK)
        s = st_cuda_check(api->MemsetD8(c->err, 0, sizeof(st_nvrtc_kerr)), "cuMemsetD8");
    for (int i = 0; s == ST_OK && i < n; i++) {
        if (ks[i].kind == ST_K_VIEW)
            continue;
        char name[128];
        st_nvrtc_kernel_name(&ks[i], i, name, sizeof name);
        s = st_cuda_check(api->ModuleGetFunction(&c->fn[i], c->mod, name),
                          "cuModuleGetFunction");
        if (s == ST_OK && st_nvrtc_has_mma(&ks[i])) {
            char mn[160];
            snprintf(mn, sizeof mn, "%s_mma", name);
            s = st_cuda_check(api->ModuleGetFunction(&c->fn_mma[i], c->mod, mn),
                              "cuModuleGetFunction");
        }
    }
    if (s != ST_OK) {
        release(be, c);
        return NULL;
    }
    return c;
}

static st_status launch(st_backend *be, void *h, int index, const st_kargs *args)
{
    (void)be;
    compiled *c = h;
    if (!c || index < 0 || index >= c->n)
        return st_err(ST_ERR_INDEX, "nvrtc: kernel index %d out of range (%d kernels)",
                      index, c ? c->n : 0);
    const st_kernel *k = &c->ks[index];
    if (k->kind == ST_K_VIEW)
        return ST_OK;
    const st_cuda_api *api = st_cuda_api_get();
    if (!api)
        return st_err_kind();
    st_status s = st_cuda_make_current(c->dev);
    if (s != ST_OK)
        return s;
    st_cuda_dev *g = st_cuda_dev_of(c->dev);
    st_nvrtc_launch L = st_nvrtc_launch_config(k, args, g->sm_count, g->cc);
    if (L.empty)
        return ST_OK;
    st_cu_function f = L.mma && c->fn_mma[index] ? c->fn_mma[index] : c->fn[index];
    unsigned flags = L.flags;
    st_cu_ptr err = c->err;
    void *params[3] = {(void *)args, &flags, &err};
    s = st_cuda_check(api->LaunchKernel(f, L.grid[0], L.grid[1], L.grid[2], L.block[0],
                                        L.block[1], L.block[2], 0, g->stream, params, NULL),
                      "cuLaunchKernel");
    if (s != ST_OK)
        return s;
    /* TODO: check the error record once per graph, not per kernel */
    s = st_cuda_check(api->StreamSynchronize(g->stream), "cuStreamSynchronize");
    if (s != ST_OK)
        return s;
    st_nvrtc_kerr e;
    s = st_cuda_check(api->Memcpy((st_cu_ptr)(uintptr_t)&e, c->err, sizeof e), "cuMemcpy");
    if (s != ST_OK)
        return s;
    if (e.code == 0)
        return ST_OK;
    api->MemsetD8(c->err, 0, sizeof e);
    if (e.code == ST_NVRTC_EINDEX)
        return st_err(ST_ERR_INDEX, "index %lld is out of bounds for dimension %d with size %lld",
                      (long long)e.value, e.dim, (long long)e.size);
    if (e.code == ST_NVRTC_EPOW)
        return st_err(ST_ERR_RUNTIME, "Integers to negative integer powers are not allowed.");
    return st_err(ST_ERR_RUNTIME, "nvrtc: kernel %s failed (code %d)", k->name, e.code);
}

static const char *cache_tag(st_backend *be)
{
    (void)be;
    static char tag[64];
    st_device *d = st_cuda_is_available() ? st_cuda_device(0) : NULL;
    st_cuda_dev *g = st_cuda_dev_of(d);
    snprintf(tag, sizeof tag, "nvrtc-%s-sm_%d", st_nvrtc_version() ? st_nvrtc_version() : "none",
             g ? g->cc : 0);
    return tag;
}

static st_backend nvrtc_be = {
    .name = "nvrtc",
    .device = ST_DEV_CUDA,
    .compile = compile,
    .launch = launch,
    .release = release,
    .cache_tag = cache_tag,
};

st_backend *st_nvrtc_backend(void)
{
    return &nvrtc_be;
}

st_status st_nvrtc_register(void)
{
    if (st_backend_get("nvrtc"))
        return ST_OK;
    if (!st_cuda_is_available())
        return st_err(ST_ERR_RUNTIME, "nvrtc backend: CUDA is not available (no driver or no GPU)");
    if (!st_nvrtc_available())
        return st_err_kind();
    return st_backend_register(&nvrtc_be);
}
