/* st_test.h - owns the checks of the C tests (tests/c/): the failure and
 * check counters, the CHECK family of macros, how a failure is reported,
 * running a named test function, and main()'s exit code. Header-only and
 * included once per test program: every function is static.
 *
 * Every check counts into st_test_checks; a failed one counts into
 * st_test_failures and prints one line to stderr (stdout is flushed first,
 * so the line lands among the test's own progress output):
 *
 *     FAIL [name] file.c:123: expression: message (err: st_err_msg())
 *
 * where [name] is st_test_name (left out while it is ""), the message is
 * the optional printf-style arguments after the check's own, and the
 * (err: ...) part is there when the thread's error status has a message.
 * What happens after a failure is in the macro's name:
 *
 *   CHECK(cond, ...)             counts and goes on
 *   REQUIRE(cond, ...)           then `goto out;` - leaves the current test
 *                                function through its cleanup label `out:`
 *   CHECK_FATAL(cond, ...)       then exit(1): for tests where a later step
 *                                would crash or mean nothing after a failure
 *   CHECK_OK(expr, ...)          expr is an st_status that must be ST_OK;
 *   CHECK_OK_FATAL(expr, ...)    prints the status's name (then exit(1))
 *   CHECK_CLOSE(got, want, atol, rtol, ...)
 *                                st_test_close(got, want, atol, rtol); prints
 *                                both values, the difference and the bound
 *   CHECK_EQ_INT(got, want, ...) as long long, printing both values
 *   CHECK_EQ_SIZE(got, want, ...) as size_t, printing both values
 *   FAIL(fmt, ...)               a failure found some other way, at this line
 *                                (counts a failure, not a check; the message
 *                                is printed as given, without (err: ...))
 *   st_test_fail_at(file, line, fmt, ...)
 *                                the same from a helper that reports at its
 *                                caller's line
 *
 * A helper that prints its own report (say the first three differing
 * elements of an array) may count the failure itself: st_test_failures++.
 *
 *   RUN_TEST(call)               sets st_test_name to the call's text (the
 *                                test may set its own), runs it, prints
 *                                "ok NAME (s)" or "FAILED NAME: n failure(s)",
 *                                and gives st_test_name back its old value
 *   return st_test_exit_code("test_x");
 *                                prints the totals; 0 when nothing failed,
 *                                else 1
 *
 * The macros update the counters atomically (test_alloc checks from
 * threads); st_test_name is meant to be set from the main thread only.
 * A check without a message is CHECK(cond): the optional arguments use
 * __VA_OPT__ (GNU C, as the build's gnu11). */
#ifndef ST_TEST_H
#define ST_TEST_H

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "st_ir.h" /* st_status, st_err_msg */

#define ST_TEST_UNUSED __attribute__((unused))

static ST_TEST_UNUSED int st_test_failures;     /* failed checks so far */
static ST_TEST_UNUSED int st_test_checks;       /* checks evaluated so far */
static ST_TEST_UNUSED const char *st_test_name = ""; /* [name] in FAIL lines */

static inline const char *st_test_status_name(st_status s)
{
    switch (s) {
    case ST_OK: return "ST_OK";
    case ST_ERR_VALUE: return "ST_ERR_VALUE";
    case ST_ERR_TYPE: return "ST_ERR_TYPE";
    case ST_ERR_INDEX: return "ST_ERR_INDEX";
    case ST_ERR_RUNTIME: return "ST_ERR_RUNTIME";
    case ST_ERR_MEMORY: return "ST_ERR_MEMORY";
    case ST_ERR_NOTIMPL: return "ST_ERR_NOTIMPL";
    }
    return "ST_ERR_?";
}

/* NaN matches only NaN, an infinity only the same infinity; otherwise
 * |got - want| <= atol + rtol * |want|. */
static inline bool st_test_close(double got, double want, double atol, double rtol)
{
    if (isnan(got) || isnan(want))
        return isnan(got) && isnan(want);
    if (isinf(got) || isinf(want))
        return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* ---- reporting (the macros below are the interface) ---- */

static inline void st_test_count_check_(void)
{
    __atomic_add_fetch(&st_test_checks, 1, __ATOMIC_RELAXED);
}

/* Starts a FAIL line (and holds stderr until st_test_fail_end_). */
static inline void st_test_fail_begin_(const char *file, int line, const char *expr)
{
    __atomic_add_fetch(&st_test_failures, 1, __ATOMIC_RELAXED);
    fflush(stdout);
    flockfile(stderr);
    fputs("FAIL ", stderr);
    if (st_test_name && *st_test_name)
        fprintf(stderr, "[%s] ", st_test_name);
    fprintf(stderr, "%s:%d", file, line);
    if (expr)
        fprintf(stderr, ": %s", expr);
}

__attribute__((format(printf, 1, 2)))
static inline void st_test_msg_(const char *fmt, ...)
{
    va_list ap;
    fputs(": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

static inline void st_test_fail_end_(bool with_err)
{
    const char *e = with_err ? st_err_msg() : NULL;
    if (e && *e)
        fprintf(stderr, " (err: %s)", e);
    fputc('\n', stderr);
    funlockfile(stderr);
}

static inline void st_test_fatal_(void)
{
    fflush(stdout);
    fprintf(stderr, "fatal check failed: exiting\n");
    exit(1);
}

__attribute__((format(printf, 3, 4)))
static inline void st_test_fail_at(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    st_test_fail_begin_(file, line, NULL);
    fputs(": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    st_test_fail_end_(false);
}

/* One check: ok is evaluated once; on failure the report, then `after`. */
#define ST_TEST_CHECK_(ok, expr, after, ...)                                \
    do {                                                                    \
        st_test_count_check_();                                             \
        if (!(ok)) {                                                        \
            st_test_fail_begin_(__FILE__, __LINE__, expr);                  \
            __VA_OPT__(st_test_msg_(__VA_ARGS__);)                          \
            st_test_fail_end_(true);                                        \
            after;                                                          \
        }                                                                   \
    } while (0)

#define CHECK(cond, ...) ST_TEST_CHECK_(cond, #cond, (void)0, __VA_ARGS__)
#define REQUIRE(cond, ...) ST_TEST_CHECK_(cond, #cond, goto out, __VA_ARGS__)
#define CHECK_FATAL(cond, ...) ST_TEST_CHECK_(cond, #cond, st_test_fatal_(), __VA_ARGS__)

#define ST_TEST_OK_(expr, text, after, ...)                                 \
    do {                                                                    \
        st_status st_test_s_ = (expr);                                      \
        st_test_count_check_();                                             \
        if (st_test_s_ != ST_OK) {                                          \
            st_test_fail_begin_(__FILE__, __LINE__, text);                  \
            fprintf(stderr, " returned %s", st_test_status_name(st_test_s_)); \
            __VA_OPT__(st_test_msg_(__VA_ARGS__);)                          \
            st_test_fail_end_(true);                                        \
            after;                                                          \
        }                                                                   \
    } while (0)

#define CHECK_OK(expr, ...) ST_TEST_OK_(expr, #expr, (void)0, __VA_ARGS__)
#define CHECK_OK_FATAL(expr, ...) ST_TEST_OK_(expr, #expr, st_test_fatal_(), __VA_ARGS__)

#define CHECK_CLOSE(got, want, atol, rtol, ...)                             \
    do {                                                                    \
        double st_test_g_ = (got), st_test_w_ = (want);                     \
        double st_test_a_ = (atol), st_test_r_ = (rtol);                    \
        st_test_count_check_();                                             \
        if (!st_test_close(st_test_g_, st_test_w_, st_test_a_, st_test_r_)) { \
            st_test_fail_begin_(__FILE__, __LINE__, #got " ~= " #want);     \
            fprintf(stderr, ": got %.17g, want %.17g (|diff| %.3g > atol %g + " \
                    "rtol %g * |want|)", st_test_g_, st_test_w_,            \
                    fabs(st_test_g_ - st_test_w_), st_test_a_, st_test_r_);  \
            __VA_OPT__(st_test_msg_(__VA_ARGS__);)                          \
            st_test_fail_end_(true);                                        \
        }                                                                   \
    } while (0)

#define ST_TEST_EQ_(type, pfmt, got, want, ...)                             \
    do {                                                                    \
        type st_test_g_ = (got), st_test_w_ = (want);                       \
        st_test_count_check_();                                             \
        if (st_test_g_ != st_test_w_) {                                     \
            st_test_fail_begin_(__FILE__, __LINE__, #got " == " #want);     \
            fprintf(stderr, ": got %" pfmt ", want %" pfmt, st_test_g_,     \
                    st_test_w_);                                            \
            __VA_OPT__(st_test_msg_(__VA_ARGS__);)                          \
            st_test_fail_end_(true);                                        \
        }                                                                   \
    } while (0)

#define CHECK_EQ_INT(got, want, ...) ST_TEST_EQ_(long long, "lld", got, want, __VA_ARGS__)
#define CHECK_EQ_SIZE(got, want, ...) ST_TEST_EQ_(size_t, "zu", got, want, __VA_ARGS__)

#define FAIL(...) st_test_fail_at(__FILE__, __LINE__, __VA_ARGS__)

/* ---- running tests ---- */

static inline double st_test_now_(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline void st_test_report_(const char *name, int failed, double seconds)
{
    if (failed) {
        fflush(stdout);
        fprintf(stderr, "FAILED %s: %d failure(s)\n", name, failed);
    } else {
        printf("ok %s (%.2f s)\n", name, seconds);
    }
}

/* Runs one test function call (any arguments) under its own name. */
#define RUN_TEST(call)                                                      \
    do {                                                                    \
        const char *st_test_outer_ = st_test_name;                          \
        int st_test_f0_ = st_test_failures;                                 \
        double st_test_t0_ = st_test_now_();                                \
        st_test_name = #call;                                               \
        call;                                                               \
        st_test_report_(#call, st_test_failures - st_test_f0_,              \
                        st_test_now_() - st_test_t0_);                      \
        st_test_name = st_test_outer_;                                      \
    } while (0)

/* The totals, and main()'s exit status: 0 when no check failed, else 1. */
static inline int st_test_exit_code(const char *program)
{
    fflush(stdout);
    if (st_test_failures) {
        fprintf(stderr, "%s: %d checks, %d failure(s)\n", program, st_test_checks,
                st_test_failures);
        return 1;
    }
    printf("%s: %d checks, all passed\n", program, st_test_checks);
    return 0;
}

#endif
