/* kcache.c - the on-disk kernel cache shared by compiling backends:
 * payloads (e.g. object files) stored under a key string (hex xxHash of the
 * kernel IR, the target and the compiler version) in
 * $SYMTRACE_CACHE_DIR (default ~/.cache/symtrace)/kernels/<key>.bin.
 * A file is a header (magic, format version, payload length, XXH3-64 of
 * the payload) and the payload; it is written to a temp file and renamed,
 * so readers never see a partial file. A file that fails any check
 * (truncated, flipped byte, other version) is counted, removed and reported
 * as a miss: never loaded. Owns: st_kcache_*. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "st_runtime.h"

#define KC_MAGIC 0x314b5453u /* "STK1" */
#define KC_VERSION 1u

typedef struct {
    uint32_t magic, version;
    uint64_t length;
    uint64_t hash;
} kc_header;

static struct {
    atomic_llong hits, misses, stores, corrupt, store_errors;
} S;

static pthread_mutex_t dir_mu = PTHREAD_MUTEX_INITIALIZER;
static char dir_override[1024];

void st_kcache_set_dir(const char *dir)
{
    pthread_mutex_lock(&dir_mu);
    snprintf(dir_override, sizeof dir_override, "%s", dir ? dir : "");
    pthread_mutex_unlock(&dir_mu);
}

/* The cache directory into buf (without the kernels/ part); false when no
 * directory can be named. */
static bool cache_dir(char *buf, size_t n)
{
    pthread_mutex_lock(&dir_mu);
    bool have = dir_override[0] != 0;
    if (have)
        snprintf(buf, n, "%s", dir_override);
    pthread_mutex_unlock(&dir_mu);
    if (have)
        return true;
    const char *e = getenv("SYMTRACE_CACHE_DIR");
    if (e && e[0]) {
        snprintf(buf, n, "%s", e);
        return true;
    }
    const char *home = getenv("HOME");
    if (!home || !home[0])
        return false;
    snprintf(buf, n, "%s/.cache/symtrace", home);
    return true;
}

const char *st_kcache_dir(void)
{
    static _Thread_local char buf[1100];
    if (!cache_dir(buf, sizeof buf))
        return NULL;
    return buf;
}

static bool key_ok(const char *key)
{
    if (!key || !key[0] || strlen(key) > 200)
        return false;
    for (const char *p = key; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
              (*p >= 'A' && *p <= 'Z') || *p == '-' || *p == '_'))
            return false;
    return true;
}

static bool file_path(const char *key, char *buf, size_t n)
{
    char d[1100];
    if (!key_ok(key) || !cache_dir(d, sizeof d))
        return false;
    int w = snprintf(buf, n, "%s/kernels/%s.bin", d, key);
    return w > 0 && (size_t)w < n;
}

/* mkdir -p of the directory part of path */
static bool make_dirs(const char *path)
{
    char tmp[1400];
    snprintf(tmp, sizeof tmp, "%s", path);
    char *slash = strrchr(tmp, '/');
    if (!slash)
        return true;
    *slash = 0;
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return false;
        *p = '/';
    }
    return mkdir(tmp, 0755) == 0 || errno == EEXIST;
}

bool st_kcache_load(const char *key, void **bytes, size_t *n)
{
    *bytes = NULL;
    *n = 0;
    char path[1400];
    if (!file_path(key, path, sizeof path)) {
        atomic_fetch_add(&S.misses, 1);
        return false;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        atomic_fetch_add(&S.misses, 1);
        return false;
    }
    kc_header h;
    bool ok = false;
    char *buf = NULL;
    struct stat stt;
    if (fstat(fileno(f), &stt) == 0 && fread(&h, sizeof h, 1, f) == 1 &&
        h.magic == KC_MAGIC && h.version == KC_VERSION &&
        (uint64_t)stt.st_size == sizeof h + h.length && h.length < (1ull << 34)) {
        buf = malloc(h.length ? (size_t)h.length : 1);
        if (buf && fread(buf, 1, (size_t)h.length, f) == h.length &&
            XXH3_64bits(buf, (size_t)h.length) == h.hash)
            ok = true;
    }
    fclose(f);
    if (!ok) {
        free(buf);
        atomic_fetch_add(&S.corrupt, 1);
        atomic_fetch_add(&S.misses, 1);
        unlink(path); /* rebuilt by the caller's store */
        return false;
    }
    atomic_fetch_add(&S.hits, 1);
    *bytes = buf;
    *n = (size_t)h.length;
    return true;
}

st_status st_kcache_store(const char *key, const void *bytes, size_t n)
{
    char path[1400], tmp[1500];
    if (!file_path(key, path, sizeof path))
        return st_err(ST_ERR_VALUE, "kernel cache: bad key or no cache "
                      "directory (set SYMTRACE_CACHE_DIR)");
    if (!make_dirs(path)) {
        atomic_fetch_add(&S.store_errors, 1);
        return st_err(ST_ERR_RUNTIME, "kernel cache: cannot create the "
                      "directory of %s: %s", path, strerror(errno));
    }
    static atomic_uint seq;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(),
             atomic_fetch_add(&seq, 1));
    kc_header h = {KC_MAGIC, KC_VERSION, n, XXH3_64bits(bytes, n)};
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        atomic_fetch_add(&S.store_errors, 1);
        return st_err(ST_ERR_RUNTIME, "kernel cache: cannot write %s: %s",
                      tmp, strerror(errno));
    }
    bool ok = fwrite(&h, sizeof h, 1, f) == 1 &&
              (n == 0 || fwrite(bytes, 1, n, f) == n);
    ok = (fflush(f) == 0) && ok;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        atomic_fetch_add(&S.store_errors, 1);
        return st_err(ST_ERR_RUNTIME, "kernel cache: cannot write %s",
                      path);
    }
    atomic_fetch_add(&S.stores, 1);
    return ST_OK;
}

bool st_kcache_path(const char *key, char *buf, size_t n)
{
    return file_path(key, buf, n);
}

void st_kcache_file_stats(st_kcache_file_stats_t *out)
{
    out->hits = atomic_load(&S.hits);
    out->misses = atomic_load(&S.misses);
    out->stores = atomic_load(&S.stores);
    out->corrupt = atomic_load(&S.corrupt);
    out->store_errors = atomic_load(&S.store_errors);
}
