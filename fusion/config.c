/* fusion/config.c - the process-wide fusion options (DESIGN.md "Knobs"):
 * read once from SYMTRACE_FUSION, SYMTRACE_FUSE_REDUCTIONS,
 * SYMTRACE_FUSE_MATMUL_EPILOGUE and SYMTRACE_MAX_FUSED_OPS (a value that
 * is not a number in range keeps the default), then mutable
 * (symtrace.config writes the returned struct). Also the dump directory
 * (SYMTRACE_DUMP_DIR) lowering writes its StatementIR and kernel IR to.
 * Owns: st_fuse_config, st_fuse_dump_dir. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

#include "fuse_internal.h"

static st_fuse_options options;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Integer value of environment variable name within [lo, hi], else def. */
static int env_int(const char *name, int def, long lo, long hi)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\n')
        end++;
    if (errno || *end || v < lo || v > hi)
        return def;
    return (int)v;
}

static void read_env(void)
{
    options.fusion = env_int("SYMTRACE_FUSION", 1, 0, 1);
    options.fuse_reductions = env_int("SYMTRACE_FUSE_REDUCTIONS", 1, 0, 1);
    options.fuse_matmul_epilogue =
        env_int("SYMTRACE_FUSE_MATMUL_EPILOGUE", 1, 0, 1);
    options.max_fused_ops = env_int("SYMTRACE_MAX_FUSED_OPS", 0, 0, INT_MAX);
}

st_fuse_options *st_fuse_config(void)
{
    pthread_once(&once, read_env);
    return &options;
}

const char *st_fuse_dump_dir(void)
{
    const char *d = getenv("SYMTRACE_DUMP_DIR");
    return d && *d ? d : NULL;
}
