/* cxx.c - the host C++ compiler of the cudaemu backend: which one ($CXX,
 * split on spaces, else `c++`), probed once with -dumpfullversion; a
 * rendered source compiled with the emulation header force-included
 * (-include) into a shared object (-std=c++17 -O1 -fPIC -shared -w), kept
 * in a disk cache ($SYMTRACE_CACHE_DIR/cudaemu/, else
 * /tmp/symtrace-cudaemu-<uid>/, made 0700 and ours) under an XXH64 of the
 * header, the source, the command, the flags and the compiler's version,
 * written under a temporary name and renamed (concurrent processes never
 * see a partial object), and loaded with dlopen for the rest of the
 * process. SYMTRACE_DUMP_DIR: the source is also written there.
 * Owns: st_cudaemu_available, st_cudaemu_compiler, st_cudaemu_load. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "cudaemu_internal.h"

extern char **environ;

static const char *const FLAGS[] = {"-std=c++17", "-O1", "-fPIC", "-shared", "-w", NULL};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- the compiler ---- */
#define MAX_WORDS 16
static int probed;                 /* 0 not yet, 1 found, -1 not */
static char cmd[512];              /* $CXX or c++ */
static char words_buf[512];
static char *words[MAX_WORDS + 1];
static int nwords;
static char version[64];
static char desc[640];             /* "cmd (version)" */
static char why[900];              /* when not found */

/* Runs argv (argv[0] looked up in PATH) with stdout and stderr into the
 * file out (created/truncated); its exit status, or -1 when it could not
 * start (errno-style reason in *err). */
static int run(char *const argv[], const char *out, int *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        *err = rc;
        return -1;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            *err = errno;
            return -1;
        }
    }
    *err = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* the first n - 1 bytes of a file into buf ("" when unreadable) */
static void read_head(const char *path, char *buf, size_t n)
{
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = 0;
    fclose(f);
}

static bool probe_locked(void)
{
    if (probed)
        return probed > 0;
    const char *e = getenv("CXX");
    snprintf(cmd, sizeof cmd, "%s", e && e[0] ? e : "c++");
    snprintf(words_buf, sizeof words_buf, "%s", cmd);
    char *save = NULL;
    nwords = 0;
    for (char *w = strtok_r(words_buf, " \t", &save); w && nwords < MAX_WORDS;
         w = strtok_r(NULL, " \t", &save))
        words[nwords++] = w;
    probed = -1;
    if (nwords == 0) {
        snprintf(why, sizeof why, "cudaemu needs a C++ compiler: $CXX is blank");
        return false;
    }
    char *argv[MAX_WORDS + 2];
    memcpy(argv, words, sizeof(char *) * (size_t)nwords);
    argv[nwords] = (char *)"-dumpfullversion";
    argv[nwords + 1] = NULL;
    char out[] = "/tmp/symtrace-cudaemu-probeXXXXXX";
    int fd = mkstemp(out);
    if (fd < 0) {
        snprintf(why, sizeof why, "cudaemu: cannot make a temporary file (%s)", strerror(errno));
        return false;
    }
    close(fd);
    int err = 0, rc = run(argv, out, &err);
    char head[200];
    read_head(out, head, sizeof head);
    unlink(out);
    head[strcspn(head, "\r\n")] = 0;
    if (rc != 0) {
        snprintf(why, sizeof why,
                 "cudaemu needs a C++ compiler (g++ or clang++): `%s -dumpfullversion` %s%s%s "
                 "(set CXX to one)", cmd, rc < 0 ? "could not run: " : "failed: ",
                 rc < 0 ? strerror(err) : head, rc < 0 ? "" : "");
        return false;
    }
    snprintf(version, sizeof version, "%.63s", head);
    snprintf(desc, sizeof desc, "%s (%s)", cmd, version);
    probed = 1;
    return true;
}

bool st_cudaemu_available(void)
{
    pthread_mutex_lock(&mu);
    bool ok = probe_locked();
    pthread_mutex_unlock(&mu);
    if (!ok)
        st_err(ST_ERR_RUNTIME, "%s", why);
    return ok;
}

const char *st_cudaemu_compiler(void)
{
    return probed > 0 ? desc : NULL;
}

/* ---- the disk cache ---- */

/* mkdir -p of path (each part 0700 when private) */
static bool make_dirs(const char *path, bool private_)
{
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1;; p++) {
        if (*p != '/' && *p != 0)
            continue;
        char c = *p;
        *p = 0;
        if (mkdir(tmp, private_ ? 0700 : 0755) != 0 && errno != EEXIST)
            return false;
        *p = c;
        if (!c)
            break;
    }
    return true;
}

/* The cache directory into buf; false with the error set. */
static bool cache_dir(char *buf, size_t n)
{
    const char *e = getenv("SYMTRACE_CACHE_DIR");
    bool mine = !(e && e[0]);
    if (mine)
        snprintf(buf, n, "/tmp/symtrace-cudaemu-%u", (unsigned)getuid());
    else
        snprintf(buf, n, "%s/cudaemu", e);
    if (!make_dirs(buf, mine)) {
        st_err(ST_ERR_RUNTIME, "cudaemu: cannot make the cache directory %s (%s)", buf,
               strerror(errno));
        return false;
    }
    struct stat st;
    if (mine && (lstat(buf, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
                 (st.st_mode & 077) != 0)) {
        st_err(ST_ERR_RUNTIME, "cudaemu: %s is not a private directory of this user "
               "(set SYMTRACE_CACHE_DIR)", buf);
        return false;
    }
    return true;
}

/* writes n bytes to path through a temporary name and a rename */
static bool write_file(const char *path, const char *bytes, size_t n)
{
    char tmp[1200];
    static unsigned seq;
    snprintf(tmp, sizeof tmp, "%s.%d.%u.tmp", path, (int)getpid(),
             __atomic_fetch_add(&seq, 1u, __ATOMIC_RELAXED));
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return false;
    bool ok = fwrite(bytes, 1, n, f) == n;
    ok = fclose(f) == 0 && ok;
    if (ok)
        ok = rename(tmp, path) == 0;
    if (!ok)
        unlink(tmp);
    return ok;
}

/* ---- loaded objects (for the process) ---- */
typedef struct {
    uint64_t key;
    void *handle;
    st_cudaemu_entry_fn entry;
} loaded;
static loaded *table;
static int ntable, cap_table;

static uint64_t key_of(const char *source)
{
    XXH64_state_t *s = XXH64_createState();
    if (!s)
        return XXH64(source, strlen(source), 0);
    XXH64_reset(s, 0x5ce3a1u);
    XXH64_update(s, st_cudaemu_header, st_cudaemu_header_len + 1);
    XXH64_update(s, source, strlen(source) + 1);
    for (int i = 0; FLAGS[i]; i++)
        XXH64_update(s, FLAGS[i], strlen(FLAGS[i]) + 1);
    XXH64_update(s, cmd, strlen(cmd) + 1);
    XXH64_update(s, version, strlen(version) + 1);
    uint64_t h = XXH64_digest(s);
    XXH64_freeState(s);
    return h;
}

/* the dump of SYMTRACE_DUMP_DIR (best effort) */
static void dump_source(const char *source, uint64_t key)
{
    const char *d = getenv("SYMTRACE_DUMP_DIR");
    if (!d || !d[0] || !make_dirs(d, false))
        return;
    char path[1200];
    snprintf(path, sizeof path, "%s/cudaemu-%016llx.cpp", d, (unsigned long long)key);
    write_file(path, source, strlen(source));
}

/* compiles source into so (without the lock: compiles run in parallel;
 * names are made unique by the pid and a counter taken under it) */
static st_status build(const char *dir, const char *source, uint64_t key, const char *so,
                       unsigned seq)
{
    char hdr[1200], src[1200], out[1200], log[1200];
    uint64_t hk = XXH64(st_cudaemu_header, st_cudaemu_header_len, 0);
    snprintf(hdr, sizeof hdr, "%s/st_cudaemu-%016llx.hpp", dir, (unsigned long long)hk);
    if (access(hdr, R_OK) != 0 && !write_file(hdr, st_cudaemu_header, st_cudaemu_header_len))
        return st_err(ST_ERR_RUNTIME, "cudaemu: cannot write %s (%s)", hdr, strerror(errno));
    snprintf(src, sizeof src, "%s/%016llx.%d.%u.cpp", dir, (unsigned long long)key, (int)getpid(),
             seq);
    snprintf(out, sizeof out, "%s/%016llx.%d.%u.so.tmp", dir, (unsigned long long)key,
             (int)getpid(), seq);
    snprintf(log, sizeof log, "%s/%016llx.%d.%u.log", dir, (unsigned long long)key, (int)getpid(),
             seq);
    if (!write_file(src, source, strlen(source)))
        return st_err(ST_ERR_RUNTIME, "cudaemu: cannot write %s (%s)", src, strerror(errno));
    char *argv[MAX_WORDS + 16];
    int n = 0;
    for (int i = 0; i < nwords; i++)
        argv[n++] = words[i];
    for (int i = 0; FLAGS[i]; i++)
        argv[n++] = (char *)FLAGS[i];
    argv[n++] = (char *)"-include";
    argv[n++] = hdr;
    argv[n++] = (char *)"-o";
    argv[n++] = out;
    argv[n++] = src;
    argv[n] = NULL;
    int err = 0, rc = run(argv, log, &err);
    if (rc != 0) {
        char head[1600];
        read_head(log, head, sizeof head);
        unlink(out);
        if (rc < 0)
            return st_err(ST_ERR_RUNTIME, "cudaemu: cannot run %s: %s", cmd, strerror(err));
        return st_err(ST_ERR_RUNTIME, "cudaemu: %s failed (status %d) on %s (kept, with the "
                      "messages in %s):\n%s", cmd, rc, src, log, head);
    }
    if (rename(out, so) != 0) {
        unlink(out);
        return st_err(ST_ERR_RUNTIME, "cudaemu: cannot rename %s to %s (%s)", out, so,
                      strerror(errno));
    }
    unlink(src);
    unlink(log);
    return ST_OK;
}

st_status st_cudaemu_load(const char *source, void **handle, st_cudaemu_entry_fn *entry)
{
    *handle = NULL;
    *entry = NULL;
    static unsigned builds;
    pthread_mutex_lock(&mu);
    bool found = probe_locked();
    unsigned seq = builds++;
    pthread_mutex_unlock(&mu);
    if (!found)
        return st_err(ST_ERR_RUNTIME, "%s", why);
    uint64_t key = key_of(source);
    pthread_mutex_lock(&mu);
    for (int i = 0; i < ntable; i++)
        if (table[i].key == key) {
            *handle = table[i].handle;
            *entry = table[i].entry;
            pthread_mutex_unlock(&mu);
            return ST_OK;
        }
    pthread_mutex_unlock(&mu);
    dump_source(source, key);
    char dir[1100], so[1200];
    if (!cache_dir(dir, sizeof dir))
        return st_err_kind();
    snprintf(so, sizeof so, "%s/%016llx.so", dir, (unsigned long long)key);
    void *h = NULL;
    st_status s;
    for (int attempt = 0; attempt < 2 && !h; attempt++) {
        if (access(so, R_OK) != 0 && (s = build(dir, source, key, so, seq)) != ST_OK)
            return s;
        h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
        if (!h && attempt == 0)
            unlink(so);   /* a damaged object: build it again */
    }
    if (!h)
        return st_err(ST_ERR_RUNTIME, "cudaemu: dlopen %s: %s", so, dlerror());
    st_cudaemu_entry_fn e;
    *(void **)&e = dlsym(h, ST_CUDAEMU_ENTRY_SYMBOL);
    if (!e) {
        dlclose(h);
        return st_err(ST_ERR_RUNTIME, "cudaemu: %s has no %s", so, ST_CUDAEMU_ENTRY_SYMBOL);
    }
    /* dlopen of one path twice gives one handle: a racing load of the same
     * key finds its entry here or adds the same one */
    pthread_mutex_lock(&mu);
    s = ST_OK;
    bool have = false;
    for (int i = 0; i < ntable && !have; i++)
        have = table[i].key == key;
    if (!have) {
        if (ntable == cap_table) {
            int nc = cap_table ? cap_table * 2 : 64;
            loaded *t = realloc(table, sizeof *t * (size_t)nc);
            if (t) {
                table = t;
                cap_table = nc;
            }
        }
        if (ntable < cap_table)
            table[ntable++] = (loaded){key, h, e};
        else
            s = st_err(ST_ERR_MEMORY, "cudaemu: out of memory");
    }
    pthread_mutex_unlock(&mu);
    if (s == ST_OK) {
        *handle = h;
        *entry = e;
    }
    return s;
}
