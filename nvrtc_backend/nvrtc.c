/* nvrtc.c - NVRTC, loaded with dlopen at run time (one build works with or
 * without CUDA): the library search ($SYMTRACE_NVRTC_PATH, the directories
 * the Python layer found, e.g. the pip wheel's nvidia/cu13/lib, then the
 * loader's search and /usr/local/cuda/lib64: libsearch.c), and st_nvrtc_compile (CUDA C
 * -> cubin or PTX for one architecture; on a compile error the source is
 * written to $SYMTRACE_DUMP_DIR or /tmp and the error names the file).
 * Owns: st_nvrtc_set_search_path, st_nvrtc_available, st_nvrtc_version,
 * st_nvrtc_library, st_nvrtc_compile, st_nvrtc_output_free. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvrtc_internal.h"

/* the subset of nvrtc.h we use (nvrtc.h is not needed to build) */
typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

static struct {
    char version[32];
    const char *(*GetErrorString)(nvrtcResult);
    nvrtcResult (*Version)(int *, int *);
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int,
                                 const char *const *, const char *const *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetPTX)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
} N;

static atomic_int dump_counter;

static bool bind(st_nvrtc_lib *l, void *h, const char *path)
{
#define SYM(f, name)                                                        \
    do {                                                                    \
        *(void **)&N.f = dlsym(h, name);                                    \
        if (!N.f) {                                                         \
            char msg[300];                                                  \
            snprintf(msg, sizeof msg, "%s (no %s)", path, name);            \
            st_nvrtc_lib_note(l, msg);                                      \
            return false;                                                   \
        }                                                                   \
    } while (0)
    SYM(GetErrorString, "nvrtcGetErrorString");
    SYM(Version, "nvrtcVersion");
    SYM(CreateProgram, "nvrtcCreateProgram");
    SYM(DestroyProgram, "nvrtcDestroyProgram");
    SYM(CompileProgram, "nvrtcCompileProgram");
    SYM(GetPTXSize, "nvrtcGetPTXSize");
    SYM(GetPTX, "nvrtcGetPTX");
    SYM(GetCUBINSize, "nvrtcGetCUBINSize");
    SYM(GetCUBIN, "nvrtcGetCUBIN");
    SYM(GetProgramLogSize, "nvrtcGetProgramLogSize");
    SYM(GetProgramLog, "nvrtcGetProgramLog");
#undef SYM
    int maj = 0, min = 0;
    if (N.Version(&maj, &min) != 0) {
        st_nvrtc_lib_note(l, path);
        return false;
    }
    snprintf(N.version, sizeof N.version, "%d.%d", maj, min);
    return true;
}

static const char *const sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL};

/* NVRTC dlopens libnvrtc-builtins by soname from its own directory */
static st_nvrtc_lib L = {
    .name = "libnvrtc", .env = "SYMTRACE_NVRTC_PATH", .sonames = sonames,
    .preload = "libnvrtc-builtins.so*", .bind = bind,
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

void st_nvrtc_set_search_path(const char *paths)
{
    st_nvrtc_lib_set_search_path(&L, paths);
}

bool st_nvrtc_available(void)
{
    pthread_mutex_lock(&L.lock);
    bool ok = st_nvrtc_lib_load(&L);
    pthread_mutex_unlock(&L.lock);
    if (!ok)
        st_err(ST_ERR_RUNTIME,
               "NVRTC is not available: could not load libnvrtc (tried: %s). Install "
               "the nvidia-cuda-nvrtc wheel or set SYMTRACE_NVRTC_PATH", L.tried);
    return ok;
}

const char *st_nvrtc_version(void)
{
    return L.handle ? N.version : NULL;
}

const char *st_nvrtc_library(void)
{
    return L.handle ? L.path : NULL;
}

void st_nvrtc_output_free(st_nvrtc_output *out)
{
    if (!out)
        return;
    free(out->image);
    free(out->log);
    memset(out, 0, sizeof *out);
}

/* writes source to the dump directory; path into p (empty on failure) */
static void dump_source(const char *source, const char *name, char *p, size_t n)
{
    const char *dir = getenv("SYMTRACE_DUMP_DIR");
    if (!dir || !*dir)
        dir = "/tmp";
    snprintf(p, n, "%s/symtrace_nvrtc_%ld_%d_%s.cu", dir, (long)getpid(),
             atomic_fetch_add(&dump_counter, 1), name ? name : "graph");
    FILE *f = fopen(p, "w");
    if (!f) {
        snprintf(p, n, "(could not write the source to %s: %s)", dir, strerror(errno));
        return;
    }
    fputs(source, f);
    fclose(f);
}

st_status st_nvrtc_compile(const char *source, const char *name,
                           const char *arch, bool want_ptx,
                           st_nvrtc_output *out)
{
    memset(out, 0, sizeof *out);
    if (!st_nvrtc_available())
        return st_err_kind();
    if (!arch || strncmp(arch, "sm_", 3) != 0)
        return st_err(ST_ERR_VALUE, "nvrtc: bad architecture '%s' (want sm_XX)",
                      arch ? arch : "(null)");
    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s%s",
             want_ptx ? "compute_" : "sm_", arch + 3);
    /* no fused multiply-add: the results match the CPU backends' */
    const char *opts[] = {archopt, "-std=c++17", "--fmad=false",
                          "--extra-device-vectorization", NULL};
    int nopts = 4;
    /* SYMTRACE_NVRTC_FAST_COMPILE=1: less optimization, much faster
     * compiles (NVRTC >= 12.8); the compile checks of the tests use it */
    const char *fast = getenv("SYMTRACE_NVRTC_FAST_COMPILE");
    int vmaj = 0, vmin = 0;
    sscanf(N.version, "%d.%d", &vmaj, &vmin);
    if (fast && fast[0] == '1' && (vmaj > 12 || (vmaj == 12 && vmin >= 8)))
        opts[nopts - 1] = "--Ofast-compile=max";
    nvrtcProgram prog = NULL;
    nvrtcResult r = N.CreateProgram(&prog, source, name ? name : "symtrace.cu",
                                    0, NULL, NULL);
    if (r != 0)
        return st_err(ST_ERR_RUNTIME, "nvrtc: nvrtcCreateProgram: %s", N.GetErrorString(r));
    r = N.CompileProgram(prog, nopts, opts);
    size_t ls = 0;
    if (N.GetProgramLogSize(prog, &ls) == 0 && ls > 0) {
        out->log = malloc(ls + 1);
        if (out->log) {
            if (N.GetProgramLog(prog, out->log) != 0)
                out->log[0] = 0;
            out->log[ls] = 0;
        }
    }
    if (r != 0) {
        char p[1200];
        dump_source(source, name, p, sizeof p);
        char head[1500] = "";
        if (out->log)
            snprintf(head, sizeof head, "%s", out->log);
        N.DestroyProgram(&prog);
        return st_err(ST_ERR_RUNTIME, "nvrtc: compiling for %s failed (%s); source "
                      "written to %s; log:\n%s", arch, N.GetErrorString(r), p, head);
    }
    size_t sz = 0;
    r = want_ptx ? N.GetPTXSize(prog, &sz) : N.GetCUBINSize(prog, &sz);
    if (r == 0) {
        out->image = malloc(sz ? sz : 1);
        if (!out->image) {
            N.DestroyProgram(&prog);
            return st_err(ST_ERR_MEMORY, "nvrtc: out of memory (%zu bytes of output)", sz);
        }
        r = want_ptx ? N.GetPTX(prog, out->image) : N.GetCUBIN(prog, out->image);
        out->size = sz;
    }
    N.DestroyProgram(&prog);
    if (r != 0) {
        st_nvrtc_output_free(out);
        return st_err(ST_ERR_RUNTIME, "nvrtc: reading the %s: %s",
                      want_ptx ? "PTX" : "cubin", N.GetErrorString(r));
    }
    return ST_OK;
}
