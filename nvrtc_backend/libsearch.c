/* libsearch.c - finding a CUDA library to dlopen (NVRTC, cuBLAS): the
 * entries of $<env> (files or directories), then the directories the
 * Python layer found (pip wheels' nvidia/<x>/lib), then the loader's search
 * by soname, then /usr/local/cuda/lib64; a companion library in the same
 * directory (NVRTC's builtins, cuBLASLt) is loaded first, by path, so a
 * directory off the loader's path works too; what was tried is kept for the
 * error message. Each library's own symbols are bound by its bind hook.
 * Owns: st_nvrtc_lib_set_search_path, st_nvrtc_lib_note, st_nvrtc_lib_load. */
#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nvrtc_internal.h"

void st_nvrtc_lib_set_search_path(st_nvrtc_lib *l, const char *paths)
{
    pthread_mutex_lock(&l->lock);
    free(l->search_path);
    l->search_path = paths && *paths ? strdup(paths) : NULL;
    pthread_mutex_unlock(&l->lock);
}

void st_nvrtc_lib_note(st_nvrtc_lib *l, const char *what)
{
    size_t n = strlen(l->tried);
    if (n + strlen(what) + 3 < sizeof l->tried)
        snprintf(l->tried + n, sizeof l->tried - n, "%s%s", n ? ", " : "", what);
}

/* the companion next to a library loaded by path (kept for the process;
 * also needed under a sanitizer's dlopen interceptor, which loses the
 * library's $ORIGIN) */
static void preload(const st_nvrtc_lib *l, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!l->preload || !slash)
        return;
    char pat[1200];
    snprintf(pat, sizeof pat, "%.*s/%s", (int)(slash - path), path, l->preload);
    glob_t gl;
    if (glob(pat, 0, NULL, &gl) != 0)
        return;
    for (size_t i = 0; i < gl.gl_pathc; i++)
        dlopen(gl.gl_pathv[i], RTLD_NOW | RTLD_GLOBAL);
    globfree(&gl);
}

static bool try_open(st_nvrtc_lib *l, const char *path)
{
    preload(l, path);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        char msg[1300];
        const char *e = dlerror();
        snprintf(msg, sizeof msg, "%s (%.200s)", path, e ? e : "dlopen failed");
        st_nvrtc_lib_note(l, msg);
        return false;
    }
    if (!l->bind(l, h, path)) {
        dlclose(h);
        return false;
    }
    l->handle = h;
    snprintf(l->path, sizeof l->path, "%s", path);
    return true;
}

/* entry: a library file, or a directory holding one */
static bool try_entry(st_nvrtc_lib *l, const char *e)
{
    struct stat st;
    if (!*e || stat(e, &st) != 0) {
        if (*e)
            st_nvrtc_lib_note(l, e);
        return false;
    }
    if (S_ISREG(st.st_mode))
        return try_open(l, e);
    for (const char *const *so = l->sonames; *so; so++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/%s", e, *so);
        if (access(p, R_OK) == 0 && try_open(l, p))
            return true;
    }
    char msg[1100];
    snprintf(msg, sizeof msg, "%s/ (no %s)", e, l->name);
    st_nvrtc_lib_note(l, msg);
    return false;
}

static bool try_list(st_nvrtc_lib *l, const char *list)
{
    if (!list)
        return false;
    char *dup = strdup(list), *save = NULL;
    if (!dup)
        return false;
    bool ok = false;
    for (char *t = strtok_r(dup, ":", &save); t && !ok; t = strtok_r(NULL, ":", &save))
        ok = try_entry(l, t);
    free(dup);
    return ok;
}

bool st_nvrtc_lib_load(st_nvrtc_lib *l)
{
    if (l->handle)
        return true;
    l->tried[0] = 0;
    if (try_list(l, getenv(l->env)) || try_list(l, l->search_path))
        return true;
    for (const char *const *so = l->sonames; *so; so++)
        if (try_open(l, *so))
            return true;
    return try_list(l, "/usr/local/cuda/lib64:/usr/local/cuda/lib");
}
