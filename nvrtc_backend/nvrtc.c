/* nvrtc.c - NVRTC, loaded with dlopen at run time (one build works with or
 * without CUDA): the library search ($SYMTRACE_NVRTC_PATH, the directories
 * the Python layer found, e.g. the pip wheel's nvidia/cu13/lib, then the
 * loader's search and /usr/local/cuda/lib64), and st_nvrtc_compile (CUDA C
 * -> cubin or PTX for one architecture; on a compile error the source is
 * written to $SYMTRACE_DUMP_DIR or /tmp and the error names the file).
 * Owns: st_nvrtc_set_search_path, st_nvrtc_available, st_nvrtc_version,
 * st_nvrtc_library, st_nvrtc_compile, st_nvrtc_output_free. */
#include <dlfcn.h>
#include <errno.h>
#include <glob.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nvrtc_internal.h"

/* the subset of nvrtc.h we use (nvrtc.h is not needed to build) */
typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

static struct {
    void *lib;
    char path[1024];
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

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *search_path;       /* set by the Python layer */
static char tried[2048];        /* what the last failed search tried */
static atomic_int dump_counter;

void st_nvrtc_set_search_path(const char *paths)
{
    pthread_mutex_lock(&lock);
    free(search_path);
    search_path = paths && *paths ? strdup(paths) : NULL;
    pthread_mutex_unlock(&lock);
}

static void note(const char *what)
{
    size_t n = strlen(tried);
    if (n + strlen(what) + 3 < sizeof tried)
        snprintf(tried + n, sizeof tried - n, "%s%s", n ? ", " : "", what);
}

/* NVRTC dlopens libnvrtc-builtins by soname from its own directory; under
 * a sanitizer's dlopen interceptor that lookup loses NVRTC's $ORIGIN, so
 * the builtins next to a library we load by path are loaded first. */
static void preload_builtins(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return;
    char pat[1200];
    snprintf(pat, sizeof pat, "%.*s/libnvrtc-builtins.so*", (int)(slash - path), path);
    glob_t gl;
    if (glob(pat, 0, NULL, &gl) != 0)
        return;
    for (size_t i = 0; i < gl.gl_pathc; i++)
        dlopen(gl.gl_pathv[i], RTLD_NOW | RTLD_GLOBAL); /* kept for the process */
    globfree(&gl);
}

static bool try_open(const char *path)
{
    preload_builtins(path);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        note(path);
        return false;
    }
#define SYM(f, name)                                                        \
    do {                                                                    \
        *(void **)&N.f = dlsym(h, name);                                    \
        if (!N.f) {                                                         \
            char msg[300];                                                  \
            snprintf(msg, sizeof msg, "%s (no %s)", path, name);            \
            note(msg);                                                      \
            dlclose(h);                                                     \
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
        note(path);
        dlclose(h);
        return false;
    }
    N.lib = h;
    snprintf(N.version, sizeof N.version, "%d.%d", maj, min);
    snprintf(N.path, sizeof N.path, "%s", path);
    return true;
}

static const char *const sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                      "libnvrtc.so"};

/* entry: a library file, or a directory holding one */
static bool try_entry(const char *e)
{
    struct stat st;
    if (!*e || stat(e, &st) != 0) {
        if (*e)
            note(e);
        return false;
    }
    if (S_ISREG(st.st_mode))
        return try_open(e);
    for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/%s", e, sonames[i]);
        if (access(p, R_OK) == 0 && try_open(p))
            return true;
    }
    char msg[1100];
    snprintf(msg, sizeof msg, "%s/ (no libnvrtc)", e);
    note(msg);
    return false;
}

static bool try_list(const char *list)
{
    if (!list)
        return false;
    char *dup = strdup(list), *save = NULL;
    if (!dup)
        return false;
    bool ok = false;
    for (char *t = strtok_r(dup, ":", &save); t && !ok; t = strtok_r(NULL, ":", &save))
        ok = try_entry(t);
    free(dup);
    return ok;
}

static bool load_locked(void)
{
    if (N.lib)
        return true;
    tried[0] = 0;
    if (try_list(getenv("SYMTRACE_NVRTC_PATH")) || try_list(search_path))
        return true;
    for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++)
        if (try_open(sonames[i]))
            return true;
    return try_list("/usr/local/cuda/lib64:/usr/local/cuda/lib");
}

bool st_nvrtc_available(void)
{
    pthread_mutex_lock(&lock);
    bool ok = load_locked();
    pthread_mutex_unlock(&lock);
    if (!ok)
        st_err(ST_ERR_RUNTIME,
               "NVRTC is not available: could not load libnvrtc (tried: %s). Install "
               "the nvidia-cuda-nvrtc wheel or set SYMTRACE_NVRTC_PATH", tried);
    return ok;
}

const char *st_nvrtc_version(void)
{
    return N.lib ? N.version : NULL;
}

const char *st_nvrtc_library(void)
{
    return N.lib ? N.path : NULL;
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
