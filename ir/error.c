/* ir/error.c - owns the thread-local error status: the kind and message set
 * by the failing function (st_err), read by callers (st_err_kind,
 * st_err_msg) and reset by st_err_clear. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "st_ir.h"

#define ST_ERR_BUF 1024

static _Thread_local st_status err_kind = ST_OK;
static _Thread_local char err_msg[ST_ERR_BUF];

st_status st_err(st_status kind, const char *fmt, ...)
{
    /* Format into a scratch buffer first: the arguments may point into
     * err_msg itself (re-raising with added context). */
    char tmp[ST_ERR_BUF];
    tmp[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(tmp, sizeof tmp, fmt, ap);
        va_end(ap);
    }
    memcpy(err_msg, tmp, sizeof tmp);
    err_msg[ST_ERR_BUF - 1] = '\0';
    err_kind = kind;
    return kind;
}

st_status st_err_kind(void)
{
    return err_kind;
}

const char *st_err_msg(void)
{
    return err_kind == ST_OK ? "" : err_msg;
}

void st_err_clear(void)
{
    err_kind = ST_OK;
    err_msg[0] = '\0';
}
