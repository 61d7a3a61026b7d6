/* runtime/backend.c - the backend registry: backends register by name at
 * start-up (up to 16; a duplicate name is an error) and are looked up by
 * name. The reference backend "interp" is added lazily on first lookup, so
 * it is always there. Owns: st_backend_register, st_backend_get. */
#include <pthread.h>
#include <string.h>

#include "st_runtime.h"

#define MAX_BACKENDS 16

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static st_backend *registry[MAX_BACKENDS];
static int nregistered;

/* Under reg_lock. */
static st_backend *find_locked(const char *name)
{
    for (int i = 0; i < nregistered; i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

/* Under reg_lock. */
static st_status add_locked(st_backend *be)
{
    if (find_locked(be->name))
        return st_err(ST_ERR_RUNTIME, "backend '%s' is already registered",
                      be->name);
    if (nregistered >= MAX_BACKENDS)
        return st_err(ST_ERR_RUNTIME,
                      "cannot register backend '%s': at most %d backends",
                      be->name, MAX_BACKENDS);
    registry[nregistered++] = be;
    return ST_OK;
}

st_status st_backend_register(st_backend *be)
{
    if (!be || !be->name || !be->name[0])
        return st_err(ST_ERR_VALUE, "st_backend_register: backend needs a name");
    if (!be->compile || !be->launch || !be->release)
        return st_err(ST_ERR_VALUE,
                      "st_backend_register: backend '%s' lacks compile, "
                      "launch or release", be->name);
    pthread_mutex_lock(&reg_lock);
    st_status s = add_locked(be);
    pthread_mutex_unlock(&reg_lock);
    return s;
}

st_backend *st_backend_get(const char *name)
{
    if (!name)
        return NULL;
    pthread_mutex_lock(&reg_lock);
    st_backend *be = find_locked(name);
    if (!be && strcmp(name, "interp") == 0) {
        st_backend *ib = st_interp_backend();
        if (add_locked(ib) == ST_OK)
            be = ib;
    }
    pthread_mutex_unlock(&reg_lock);
    return be;
}
