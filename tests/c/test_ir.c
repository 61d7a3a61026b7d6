/* tests/c/test_ir.c - tests of ir/: dtype promotion and result_type (tables
 * verified against PyTorch 2.13), half/bfloat16 conversions, broadcasting,
 * dim wrapping, every op's shape/dtype inference (a normal case and error
 * cases with the right kind), graphs (add/verify/reinfer), the printer's
 * exact output and the structural hash. Exits non-zero naming each failed
 * check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st_ir.h"
#include "st_test.h"

/* ---- tables generated with torch (promote_types, result_type, casts) ---- */
static const st_dtype promote_expect[ST_NDTYPES][ST_NDTYPES] = {
    /* bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64 (torch.promote_types) */
    {ST_BOOL, ST_UINT8, ST_INT8, ST_INT16, ST_INT32, ST_INT64, ST_FLOAT16, ST_BFLOAT16, ST_FLOAT32, ST_FLOAT64},
    {ST_UINT8, ST_UINT8, ST_INT16, ST_INT16, ST_INT32, ST_INT64, ST_FLOAT16, ST_BFLOAT16, ST_FLOAT32, ST_FLOAT64},
    {ST_INT8, ST_INT16, ST_INT8, ST_INT16, ST_INT32, ST_INT64, ST_FLOAT16, ST_BFLOAT16, ST_FLOAT32, ST_FLOAT64},
    {ST_INT16, ST_INT16, ST_INT16, ST_INT16, ST_INT32, ST_INT64, ST_FLOAT16, ST_BFLOAT16, ST_FLOAT32, ST_FLOAT64},
    {ST_INT32, ST_INT32, ST_INT32, ST_INT32, ST_INT32, ST_INT64, ST_FLOAT16, ST_BFLOAT16, ST_FLOAT32, ST_FLOAT64},
    {ST_INT64, ST_INT64, ST_INT64, ST_INT64, ST_INT64, ST_INT64, ST_FLOAT16, ST_BFLOAT16, ST_FLOAT32, ST_FLOAT64},
    {ST_FLOAT16, ST_FLOAT16, ST_FLOAT16, ST_FLOAT16, ST_FLOAT16, ST_FLOAT16, ST_FLOAT16, ST_FLOAT32, ST_FLOAT32, ST_FLOAT64},
    {ST_BFLOAT16, ST_BFLOAT16, ST_BFLOAT16, ST_BFLOAT16, ST_BFLOAT16, ST_BFLOAT16, ST_FLOAT32, ST_BFLOAT16, ST_FLOAT32, ST_FLOAT64},
    {ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, ST_FLOAT64},
    {ST_FLOAT64, ST_FLOAT64, ST_FLOAT64, ST_FLOAT64, ST_FLOAT64, ST_FLOAT64, ST_FLOAT64, ST_FLOAT64, ST_FLOAT64, ST_FLOAT64},
};
static const struct rt_case { char k0; st_dtype d0; char k1; st_dtype d1; st_dtype r; } rt_cases[] = {
    {'T', ST_BOOL, 'T', ST_BOOL, ST_BOOL},
    {'T', ST_BOOL, 'T', ST_INT32, ST_INT32},
    {'T', ST_BOOL, 'T', ST_INT64, ST_INT64},
    {'T', ST_BOOL, 'T', ST_FLOAT16, ST_FLOAT16},
    {'T', ST_BOOL, 'T', ST_BFLOAT16, ST_BFLOAT16},
    {'T', ST_BOOL, 'T', ST_FLOAT32, ST_FLOAT32},
    {'T', ST_BOOL, 'T', ST_FLOAT64, ST_FLOAT64},
    {'T', ST_BOOL, 'Z', ST_BOOL, ST_BOOL},
    {'T', ST_BOOL, 'Z', ST_INT32, ST_INT32},
    {'T', ST_BOOL, 'Z', ST_INT64, ST_INT64},
    {'T', ST_BOOL, 'Z', ST_FLOAT16, ST_FLOAT16},
    {'T', ST_BOOL, 'Z', ST_BFLOAT16, ST_BFLOAT16},
    {'T', ST_BOOL, 'Z', ST_FLOAT32, ST_FLOAT32},
    {'T', ST_BOOL, 'Z', ST_FLOAT64, ST_FLOAT64},
    {'T', ST_BOOL, 'S', ST_BOOL, ST_BOOL},
    {'T', ST_BOOL, 'S', ST_INT64, ST_INT64},
    {'T', ST_BOOL, 'S', ST_FLOAT64, ST_FLOAT32},
    {'T', ST_INT32, 'T', ST_BOOL, ST_INT32},
    {'T', ST_INT32, 'T', ST_INT32, ST_INT32},
    {'T', ST_INT32, 'T', ST_INT64, ST_INT64},
    {'T', ST_INT32, 'T', ST_FLOAT16, ST_FLOAT16},
    {'T', ST_INT32, 'T', ST_BFLOAT16, ST_BFLOAT16},
    {'T', ST_INT32, 'T', ST_FLOAT32, ST_FLOAT32},
    {'T', ST_INT32, 'T', ST_FLOAT64, ST_FLOAT64},
    {'T', ST_INT32, 'Z', ST_BOOL, ST_INT32},
    {'T', ST_INT32, 'Z', ST_INT32, ST_INT32},
    {'T', ST_INT32, 'Z', ST_INT64, ST_INT32},
    {'T', ST_INT32, 'Z', ST_FLOAT16, ST_FLOAT16},
    {'T', ST_INT32, 'Z', ST_BFLOAT16, ST_BFLOAT16},
    {'T', ST_INT32, 'Z', ST_FLOAT32, ST_FLOAT32},
    {'T', ST_INT32, 'Z', ST_FLOAT64, ST_FLOAT64},
    {'T', ST_INT32, 'S', ST_BOOL, ST_INT32},
    {'T', ST_INT32, 'S', ST_INT64, ST_INT32},
    {'T', ST_INT32, 'S', ST_FLOAT64, ST_FLOAT32},
    {'T', ST_INT64, 'T', ST_BOOL, ST_INT64},
    {'T', ST_INT64, 'T', ST_INT32, ST_INT64},
    {'T', ST_INT64, 'T', ST_INT64, ST_INT64},
    {'T', ST_INT64, 'T', ST_FLOAT16, ST_FLOAT16},
    {'T', ST_INT64, 'T', ST_BFLOAT16, ST_BFLOAT16},
    {'T', ST_INT64, 'T', ST_FLOAT32, ST_FLOAT32},
    {'T', ST_INT64, 'T', ST_FLOAT64, ST_FLOAT64},
    {'T', ST_INT64, 'Z', ST_BOOL, ST_INT64},
    {'T', ST_INT64, 'Z', ST_INT32, ST_INT64},
    {'T', ST_INT64, 'Z', ST_INT64, ST_INT64},
    {'T', ST_INT64, 'Z', ST_FLOAT16, ST_FLOAT16},
    {'T', ST_INT64, 'Z', ST_BFLOAT16, ST_BFLOAT16},
    {'T', ST_INT64, 'Z', ST_FLOAT32, ST_FLOAT32},
    {'T', ST_INT64, 'Z', ST_FLOAT64, ST_FLOAT64},
    {'T', ST_INT64, 'S', ST_BOOL, ST_INT64},
    {'T', ST_INT64, 'S', ST_INT64, ST_INT64},
    {'T', ST_INT64, 'S', ST_FLOAT64, ST_FLOAT32},
    {'T', ST_FLOAT16, 'T', ST_BOOL, ST_FLOAT16},
    {'T', ST_FLOAT16, 'T', ST_INT32, ST_FLOAT16},
    {'T', ST_FLOAT16, 'T', ST_INT64, ST_FLOAT16},
    {'T', ST_FLOAT16, 'T', ST_FLOAT16, ST_FLOAT16},
    {'T', ST_FLOAT16, 'T', ST_BFLOAT16, ST_FLOAT32},
    {'T', ST_FLOAT16, 'T', ST_FLOAT32, ST_FLOAT32},
    {'T', ST_FLOAT16, 'T', ST_FLOAT64, ST_FLOAT64},
    {'T', ST_FLOAT16, 'Z', ST_BOOL, ST_FLOAT16},
    {'T', ST_FLOAT16, 'Z', ST_INT32, ST_FLOAT16},
    {'T', ST_FLOAT16, 'Z', ST_INT64, ST_FLOAT16},
    {'T', ST_FLOAT16, 'Z', ST_FLOAT16, ST_FLOAT16},
    {'T', ST_FLOAT16, 'Z', ST_BFLOAT16, ST_FLOAT16},
    {'T', ST_FLOAT16, 'Z', ST_FLOAT32, ST_FLOAT16},
    {'T', ST_FLOAT16, 'Z', ST_FLOAT64, ST_FLOAT16},
    {'T', ST_FLOAT16, 'S', ST_BOOL, ST_FLOAT16},
    {'T', ST_FLOAT16, 'S', ST_INT64, ST_FLOAT16},
    {'T', ST_FLOAT16, 'S', ST_FLOAT64, ST_FLOAT16},
    {'T', ST_BFLOAT16, 'T', ST_BOOL, ST_BFLOAT16},
    {'T', ST_BFLOAT16, 'T', ST_INT32, ST_BFLOAT16},
    {'T', ST_BFLOAT16, 'T', ST_INT64, ST_BFLOAT16},
    {'T', ST_BFLOAT16, 'T', ST_FLOAT16, ST_FLOAT32},
    {'T', ST_BFLOAT16, 'T', ST_BFLOAT16, ST_BFLOAT16},
    {'T', ST_BFLOAT16, 'T', ST_FLOAT32, ST_FLOAT32},
    {'T', ST_BFLOAT16, 'T', ST_FLOAT64, ST_FLOAT64},
    {'T', ST_BFLOAT16, 'Z', ST_BOOL, ST_BFLOAT16},
    {'T', ST_BFLOAT16, 'Z', ST_INT32, ST_BFLOAT16},
    {'T', ST_BFLOAT16, 'Z', ST_INT64, ST_BFLOAT16},
    {'T', ST_BFLOAT16, 'Z', ST_FLOAT16, ST_BFLOAT16},
    {'T', ST_BFLOAT16, 'Z', ST_BFLOAT16, ST_BFLOAT16},
    {'T', ST_BFLOAT16, 'Z', ST_FLOAT32, ST_BFLOAT16},
    {'T', ST_BFLOAT16, 'Z', ST_FLOAT64, ST_BFLOAT16},
    {'T', ST_BFLOAT16, 'S', ST_BOOL, ST_BFLOAT16},
    {'T', ST_BFLOAT16, 'S', ST_INT64, ST_BFLOAT16},
    {'T', ST_BFLOAT16, 'S', ST_FLOAT64, ST_BFLOAT16},
    {'T', ST_FLOAT32, 'T', ST_BOOL, ST_FLOAT32},
    {'T', ST_FLOAT32, 'T', ST_INT32, ST_FLOAT32},
    {'T', ST_FLOAT32, 'T', ST_INT64, ST_FLOAT32},
    {'T', ST_FLOAT32, 'T', ST_FLOAT16, ST_FLOAT32},
    {'T', ST_FLOAT32, 'T', ST_BFLOAT16, ST_FLOAT32},
    {'T', ST_FLOAT32, 'T', ST_FLOAT32, ST_FLOAT32},
    {'T', ST_FLOAT32, 'T', ST_FLOAT64, ST_FLOAT64},
    {'T', ST_FLOAT32, 'Z', ST_BOOL, ST_FLOAT32},
    {'T', ST_FLOAT32, 'Z', ST_INT32, ST_FLOAT32},
    {'T', ST_FLOAT32, 'Z', ST_INT64, ST_FLOAT32},
    {'T', ST_FLOAT32, 'Z', ST_FLOAT16, ST_FLOAT32},
    {'T', ST_FLOAT32, 'Z', ST_BFLOAT16, ST_FLOAT32},
    {'T', ST_FLOAT32, 'Z', ST_FLOAT32, ST_FLOAT32},
    {'T', ST_FLOAT32, 'Z', ST_FLOAT64, ST_FLOAT32},
    {'T', ST_FLOAT32, 'S', ST_BOOL, ST_FLOAT32},
    {'T', ST_FLOAT32, 'S', ST_INT64, ST_FLOAT32},
    {'T', ST_FLOAT32, 'S', ST_FLOAT64, ST_FLOAT32},
    {'T', ST_FLOAT64, 'T', ST_BOOL, ST_FLOAT64},
    {'T', ST_FLOAT64, 'T', ST_INT32, ST_FLOAT64},
    {'T', ST_FLOAT64, 'T', ST_INT64, ST_FLOAT64},
    {'T', ST_FLOAT64, 'T', ST_FLOAT16, ST_FLOAT64},
    {'T', ST_FLOAT64, 'T', ST_BFLOAT16, ST_FLOAT64},
    {'T', ST_FLOAT64, 'T', ST_FLOAT32, ST_FLOAT64},
    {'T', ST_FLOAT64, 'T', ST_FLOAT64, ST_FLOAT64},
    {'T', ST_FLOAT64, 'Z', ST_BOOL, ST_FLOAT64},
    {'T', ST_FLOAT64, 'Z', ST_INT32, ST_FLOAT64},
    {'T', ST_FLOAT64, 'Z', ST_INT64, ST_FLOAT64},
    {'T', ST_FLOAT64, 'Z', ST_FLOAT16, ST_FLOAT64},
    {'T', ST_FLOAT64, 'Z', ST_BFLOAT16, ST_FLOAT64},
    {'T', ST_FLOAT64, 'Z', ST_FLOAT32, ST_FLOAT64},
    {'T', ST_FLOAT64, 'Z', ST_FLOAT64, ST_FLOAT64},
    {'T', ST_FLOAT64, 'S', ST_BOOL, ST_FLOAT64},
    {'T', ST_FLOAT64, 'S', ST_INT64, ST_FLOAT64},
    {'T', ST_FLOAT64, 'S', ST_FLOAT64, ST_FLOAT64},
    {'Z', ST_BOOL, 'T', ST_BOOL, ST_BOOL},
    {'Z', ST_BOOL, 'T', ST_INT32, ST_INT32},
    {'Z', ST_BOOL, 'T', ST_INT64, ST_INT64},
    {'Z', ST_BOOL, 'T', ST_FLOAT16, ST_FLOAT16},
    {'Z', ST_BOOL, 'T', ST_BFLOAT16, ST_BFLOAT16},
    {'Z', ST_BOOL, 'T', ST_FLOAT32, ST_FLOAT32},
    {'Z', ST_BOOL, 'T', ST_FLOAT64, ST_FLOAT64},
    {'Z', ST_BOOL, 'Z', ST_BOOL, ST_BOOL},
    {'Z', ST_BOOL, 'Z', ST_INT32, ST_INT32},
    {'Z', ST_BOOL, 'Z', ST_INT64, ST_INT64},
    {'Z', ST_BOOL, 'Z', ST_FLOAT16, ST_FLOAT16},
    {'Z', ST_BOOL, 'Z', ST_BFLOAT16, ST_BFLOAT16},
    {'Z', ST_BOOL, 'Z', ST_FLOAT32, ST_FLOAT32},
    {'Z', ST_BOOL, 'Z', ST_FLOAT64, ST_FLOAT64},
    {'Z', ST_BOOL, 'S', ST_BOOL, ST_BOOL},
    {'Z', ST_BOOL, 'S', ST_INT64, ST_INT64},
    {'Z', ST_BOOL, 'S', ST_FLOAT64, ST_FLOAT32},
    {'Z', ST_INT32, 'T', ST_BOOL, ST_INT32},
    {'Z', ST_INT32, 'T', ST_INT32, ST_INT32},
    {'Z', ST_INT32, 'T', ST_INT64, ST_INT64},
    {'Z', ST_INT32, 'T', ST_FLOAT16, ST_FLOAT16},
    {'Z', ST_INT32, 'T', ST_BFLOAT16, ST_BFLOAT16},
    {'Z', ST_INT32, 'T', ST_FLOAT32, ST_FLOAT32},
    {'Z', ST_INT32, 'T', ST_FLOAT64, ST_FLOAT64},
    {'Z', ST_INT32, 'Z', ST_BOOL, ST_INT32},
    {'Z', ST_INT32, 'Z', ST_INT32, ST_INT32},
    {'Z', ST_INT32, 'Z', ST_INT64, ST_INT64},
    {'Z', ST_INT32, 'Z', ST_FLOAT16, ST_FLOAT16},
    {'Z', ST_INT32, 'Z', ST_BFLOAT16, ST_BFLOAT16},
    {'Z', ST_INT32, 'Z', ST_FLOAT32, ST_FLOAT32},
    {'Z', ST_INT32, 'Z', ST_FLOAT64, ST_FLOAT64},
    {'Z', ST_INT32, 'S', ST_BOOL, ST_INT32},
    {'Z', ST_INT32, 'S', ST_INT64, ST_INT32},
    {'Z', ST_INT32, 'S', ST_FLOAT64, ST_FLOAT32},
    {'Z', ST_INT64, 'T', ST_BOOL, ST_INT64},
    {'Z', ST_INT64, 'T', ST_INT32, ST_INT32},
    {'Z', ST_INT64, 'T', ST_INT64, ST_INT64},
    {'Z', ST_INT64, 'T', ST_FLOAT16, ST_FLOAT16},
    {'Z', ST_INT64, 'T', ST_BFLOAT16, ST_BFLOAT16},
    {'Z', ST_INT64, 'T', ST_FLOAT32, ST_FLOAT32},
    {'Z', ST_INT64, 'T', ST_FLOAT64, ST_FLOAT64},
    {'Z', ST_INT64, 'Z', ST_BOOL, ST_INT64},
    {'Z', ST_INT64, 'Z', ST_INT32, ST_INT64},
    {'Z', ST_INT64, 'Z', ST_INT64, ST_INT64},
    {'Z', ST_INT64, 'Z', ST_FLOAT16, ST_FLOAT16},
    {'Z', ST_INT64, 'Z', ST_BFLOAT16, ST_BFLOAT16},
    {'Z', ST_INT64, 'Z', ST_FLOAT32, ST_FLOAT32},
    {'Z', ST_INT64, 'Z', ST_FLOAT64, ST_FLOAT64},
    {'Z', ST_INT64, 'S', ST_BOOL, ST_INT64},
    {'Z', ST_INT64, 'S', ST_INT64, ST_INT64},
    {'Z', ST_INT64, 'S', ST_FLOAT64, ST_FLOAT32},
    {'Z', ST_FLOAT16, 'T', ST_BOOL, ST_FLOAT16},
    {'Z', ST_FLOAT16, 'T', ST_INT32, ST_FLOAT16},
    {'Z', ST_FLOAT16, 'T', ST_INT64, ST_FLOAT16},
    {'Z', ST_FLOAT16, 'T', ST_FLOAT16, ST_FLOAT16},
    {'Z', ST_FLOAT16, 'T', ST_BFLOAT16, ST_BFLOAT16},
    {'Z', ST_FLOAT16, 'T', ST_FLOAT32, ST_FLOAT32},
    {'Z', ST_FLOAT16, 'T', ST_FLOAT64, ST_FLOAT64},
    {'Z', ST_FLOAT16, 'Z', ST_BOOL, ST_FLOAT16},
    {'Z', ST_FLOAT16, 'Z', ST_INT32, ST_FLOAT16},
    {'Z', ST_FLOAT16, 'Z', ST_INT64, ST_FLOAT16},
    {'Z', ST_FLOAT16, 'Z', ST_FLOAT16, ST_FLOAT16},
    {'Z', ST_FLOAT16, 'Z', ST_BFLOAT16, ST_FLOAT32},
    {'Z', ST_FLOAT16, 'Z', ST_FLOAT32, ST_FLOAT32},
    {'Z', ST_FLOAT16, 'Z', ST_FLOAT64, ST_FLOAT64},
    {'Z', ST_FLOAT16, 'S', ST_BOOL, ST_FLOAT16},
    {'Z', ST_FLOAT16, 'S', ST_INT64, ST_FLOAT16},
    {'Z', ST_FLOAT16, 'S', ST_FLOAT64, ST_FLOAT16},
    {'Z', ST_BFLOAT16, 'T', ST_BOOL, ST_BFLOAT16},
    {'Z', ST_BFLOAT16, 'T', ST_INT32, ST_BFLOAT16},
    {'Z', ST_BFLOAT16, 'T', ST_INT64, ST_BFLOAT16},
    {'Z', ST_BFLOAT16, 'T', ST_FLOAT16, ST_FLOAT16},
    {'Z', ST_BFLOAT16, 'T', ST_BFLOAT16, ST_BFLOAT16},
    {'Z', ST_BFLOAT16, 'T', ST_FLOAT32, ST_FLOAT32},
    {'Z', ST_BFLOAT16, 'T', ST_FLOAT64, ST_FLOAT64},
    {'Z', ST_BFLOAT16, 'Z', ST_BOOL, ST_BFLOAT16},
    {'Z', ST_BFLOAT16, 'Z', ST_INT32, ST_BFLOAT16},
    {'Z', ST_BFLOAT16, 'Z', ST_INT64, ST_BFLOAT16},
    {'Z', ST_BFLOAT16, 'Z', ST_FLOAT16, ST_FLOAT32},
    {'Z', ST_BFLOAT16, 'Z', ST_BFLOAT16, ST_BFLOAT16},
    {'Z', ST_BFLOAT16, 'Z', ST_FLOAT32, ST_FLOAT32},
    {'Z', ST_BFLOAT16, 'Z', ST_FLOAT64, ST_FLOAT64},
    {'Z', ST_BFLOAT16, 'S', ST_BOOL, ST_BFLOAT16},
    {'Z', ST_BFLOAT16, 'S', ST_INT64, ST_BFLOAT16},
    {'Z', ST_BFLOAT16, 'S', ST_FLOAT64, ST_BFLOAT16},
    {'Z', ST_FLOAT32, 'T', ST_BOOL, ST_FLOAT32},
    {'Z', ST_FLOAT32, 'T', ST_INT32, ST_FLOAT32},
    {'Z', ST_FLOAT32, 'T', ST_INT64, ST_FLOAT32},
    {'Z', ST_FLOAT32, 'T', ST_FLOAT16, ST_FLOAT16},
    {'Z', ST_FLOAT32, 'T', ST_BFLOAT16, ST_BFLOAT16},
    {'Z', ST_FLOAT32, 'T', ST_FLOAT32, ST_FLOAT32},
    {'Z', ST_FLOAT32, 'T', ST_FLOAT64, ST_FLOAT64},
    {'Z', ST_FLOAT32, 'Z', ST_BOOL, ST_FLOAT32},
    {'Z', ST_FLOAT32, 'Z', ST_INT32, ST_FLOAT32},
    {'Z', ST_FLOAT32, 'Z', ST_INT64, ST_FLOAT32},
    {'Z', ST_FLOAT32, 'Z', ST_FLOAT16, ST_FLOAT32},
    {'Z', ST_FLOAT32, 'Z', ST_BFLOAT16, ST_FLOAT32},
    {'Z', ST_FLOAT32, 'Z', ST_FLOAT32, ST_FLOAT32},
    {'Z', ST_FLOAT32, 'Z', ST_FLOAT64, ST_FLOAT64},
    {'Z', ST_FLOAT32, 'S', ST_BOOL, ST_FLOAT32},
    {'Z', ST_FLOAT32, 'S', ST_INT64, ST_FLOAT32},
    {'Z', ST_FLOAT32, 'S', ST_FLOAT64, ST_FLOAT32},
    {'Z', ST_FLOAT64, 'T', ST_BOOL, ST_FLOAT64},
    {'Z', ST_FLOAT64, 'T', ST_INT32, ST_FLOAT64},
    {'Z', ST_FLOAT64, 'T', ST_INT64, ST_FLOAT64},
    {'Z', ST_FLOAT64, 'T', ST_FLOAT16, ST_FLOAT16},
    {'Z', ST_FLOAT64, 'T', ST_BFLOAT16, ST_BFLOAT16},
    {'Z', ST_FLOAT64, 'T', ST_FLOAT32, ST_FLOAT32},
    {'Z', ST_FLOAT64, 'T', ST_FLOAT64, ST_FLOAT64},
    {'Z', ST_FLOAT64, 'Z', ST_BOOL, ST_FLOAT64},
    {'Z', ST_FLOAT64, 'Z', ST_INT32, ST_FLOAT64},
    {'Z', ST_FLOAT64, 'Z', ST_INT64, ST_FLOAT64},
    {'Z', ST_FLOAT64, 'Z', ST_FLOAT16, ST_FLOAT64},
    {'Z', ST_FLOAT64, 'Z', ST_BFLOAT16, ST_FLOAT64},
    {'Z', ST_FLOAT64, 'Z', ST_FLOAT32, ST_FLOAT64},
    {'Z', ST_FLOAT64, 'Z', ST_FLOAT64, ST_FLOAT64},
    {'Z', ST_FLOAT64, 'S', ST_BOOL, ST_FLOAT64},
    {'Z', ST_FLOAT64, 'S', ST_INT64, ST_FLOAT64},
    {'Z', ST_FLOAT64, 'S', ST_FLOAT64, ST_FLOAT64},
    {'S', ST_BOOL, 'T', ST_BOOL, ST_BOOL},
    {'S', ST_BOOL, 'T', ST_INT32, ST_INT32},
    {'S', ST_BOOL, 'T', ST_INT64, ST_INT64},
    {'S', ST_BOOL, 'T', ST_FLOAT16, ST_FLOAT16},
    {'S', ST_BOOL, 'T', ST_BFLOAT16, ST_BFLOAT16},
    {'S', ST_BOOL, 'T', ST_FLOAT32, ST_FLOAT32},
    {'S', ST_BOOL, 'T', ST_FLOAT64, ST_FLOAT64},
    {'S', ST_BOOL, 'Z', ST_BOOL, ST_BOOL},
    {'S', ST_BOOL, 'Z', ST_INT32, ST_INT32},
    {'S', ST_BOOL, 'Z', ST_INT64, ST_INT64},
    {'S', ST_BOOL, 'Z', ST_FLOAT16, ST_FLOAT16},
    {'S', ST_BOOL, 'Z', ST_BFLOAT16, ST_BFLOAT16},
    {'S', ST_BOOL, 'Z', ST_FLOAT32, ST_FLOAT32},
    {'S', ST_BOOL, 'Z', ST_FLOAT64, ST_FLOAT64},
    {'S', ST_INT64, 'T', ST_BOOL, ST_INT64},
    {'S', ST_INT64, 'T', ST_INT32, ST_INT32},
    {'S', ST_INT64, 'T', ST_INT64, ST_INT64},
    {'S', ST_INT64, 'T', ST_FLOAT16, ST_FLOAT16},
    {'S', ST_INT64, 'T', ST_BFLOAT16, ST_BFLOAT16},
    {'S', ST_INT64, 'T', ST_FLOAT32, ST_FLOAT32},
    {'S', ST_INT64, 'T', ST_FLOAT64, ST_FLOAT64},
    {'S', ST_INT64, 'Z', ST_BOOL, ST_INT64},
    {'S', ST_INT64, 'Z', ST_INT32, ST_INT32},
    {'S', ST_INT64, 'Z', ST_INT64, ST_INT64},
    {'S', ST_INT64, 'Z', ST_FLOAT16, ST_FLOAT16},
    {'S', ST_INT64, 'Z', ST_BFLOAT16, ST_BFLOAT16},
    {'S', ST_INT64, 'Z', ST_FLOAT32, ST_FLOAT32},
    {'S', ST_INT64, 'Z', ST_FLOAT64, ST_FLOAT64},
    {'S', ST_FLOAT64, 'T', ST_BOOL, ST_FLOAT32},
    {'S', ST_FLOAT64, 'T', ST_INT32, ST_FLOAT32},
    {'S', ST_FLOAT64, 'T', ST_INT64, ST_FLOAT32},
    {'S', ST_FLOAT64, 'T', ST_FLOAT16, ST_FLOAT16},
    {'S', ST_FLOAT64, 'T', ST_BFLOAT16, ST_BFLOAT16},
    {'S', ST_FLOAT64, 'T', ST_FLOAT32, ST_FLOAT32},
    {'S', ST_FLOAT64, 'T', ST_FLOAT64, ST_FLOAT64},
    {'S', ST_FLOAT64, 'Z', ST_BOOL, ST_FLOAT32},
    {'S', ST_FLOAT64, 'Z', ST_INT32, ST_FLOAT32},
    {'S', ST_FLOAT64, 'Z', ST_INT64, ST_FLOAT32},
    {'S', ST_FLOAT64, 'Z', ST_FLOAT16, ST_FLOAT16},
    {'S', ST_FLOAT64, 'Z', ST_BFLOAT16, ST_BFLOAT16},
    {'S', ST_FLOAT64, 'Z', ST_FLOAT32, ST_FLOAT32},
    {'S', ST_FLOAT64, 'Z', ST_FLOAT64, ST_FLOAT64},
};
static const struct half_case { float f; uint16_t h, b; float hf, bf; } half_cases[] = {
    {0.0, 0x0000, 0x0000, 0.0, 0.0},
    {-0.0, 0x8000, 0x8000, -0.0, -0.0},
    {1.0, 0x3c00, 0x3f80, 1.0, 1.0},
    {-2.5, 0xc100, 0xc020, -2.5, -2.5},
    {65504.0, 0x7bff, 0x4780, 65504.0, 65536.0},
    {65519.0, 0x7bff, 0x4780, 65504.0, 65536.0},
    {65520.0, 0x7c00, 0x4780, INFINITY, 65536.0},
    {10000000000.0, 0x7c00, 0x5015, INFINITY, 9999220736.0},
    {-10000000000.0, 0xfc00, 0xd015, -INFINITY, -9999220736.0},
    {INFINITY, 0x7c00, 0x7f80, INFINITY, INFINITY},
    {-INFINITY, 0xfc00, 0xff80, -INFINITY, -INFINITY},
    {5.960000137861243e-08, 0x0001, 0x3380, 5.960464477539063e-08, 5.960464477539063e-08},
    {2.9800000689306216e-08, 0x0000, 0x3300, 0.0, 2.9802322387695312e-08},
    {2.9900000697580253e-08, 0x0001, 0x3300, 5.960464477539063e-08, 2.9802322387695312e-08},
    {6.0999998822808266e-05, 0x03ff, 0x3880, 6.097555160522461e-05, 6.103515625e-05},
    {6.097000004956499e-05, 0x03ff, 0x3880, 6.097555160522461e-05, 6.103515625e-05},
    {1.0000000116860974e-07, 0x0002, 0x33d7, 1.1920928955078125e-07, 1.0011717677116394e-07},
    {1.0009765625, 0x3c01, 0x3f80, 1.0009765625, 1.0},
    {1.00048828125, 0x3c00, 0x3f80, 1.0, 1.0},
    {1.00146484375, 0x3c02, 0x3f80, 1.001953125, 1.0},
    {0.10000000149011612, 0x2e66, 0x3dcd, 0.0999755859375, 0.10009765625},
    {3.141590118408203, 0x4248, 0x4049, 3.140625, 3.140625},
    {1.401298464324817e-45, 0x0000, 0x0000, 0.0, 0.0},
    {3.0000000054977558e+38, 0x7c00, 0x7f62, INFINITY, 3.00405527047391e+38},
    {3.38949995151665e+38, 0x7c00, 0x7f7f, INFINITY, 3.3895313892515355e+38},
    {3.3999999521443642e+38, 0x7c00, 0x7f80, INFINITY, INFINITY},
    {-1.1754943508222875e-38, 0x8000, 0x8080, -0.0, -1.1754943508222875e-38},
    {1.00390625, 0x3c04, 0x3f80, 1.00390625, 1.0},
    {1.001953125, 0x3c02, 0x3f80, 1.001953125, 1.0},
    {1.005859375, 0x3c06, 0x3f81, 1.005859375, 1.0078125},
};

/* ---- meta builders ---- */
static st_meta mk(st_meta_kind kind, st_dtype dt, int nd, const int64_t *s)
{
    st_meta m;
    memset(&m, 0, sizeof m);
    m.kind = kind;
    m.dtype = dt;
    m.ndim = nd;
    for (int d = 0; d < nd && d < ST_MAX_DIMS; d++)
        m.shape[d] = s[d];
    return m;
}

#define SH(...) ((const int64_t[]){__VA_ARGS__})
#define NSH(...) ((int)(sizeof(SH(__VA_ARGS__)) / sizeof(int64_t)))
/* T(dtype, sizes...): a tensor meta; T0(dtype): a 0-d tensor; SC: scalar */
#define T(dt, ...) mk(ST_META_TENSOR, dt, NSH(__VA_ARGS__), SH(__VA_ARGS__))
#define T0(dt) mk(ST_META_TENSOR, dt, 0, NULL)
#define SC(dt) mk(ST_META_SCALAR, dt, 0, NULL)
#define INS(...) ((const st_meta[]){__VA_ARGS__}),                            \
    ((int)(sizeof((const st_meta[]){__VA_ARGS__}) / sizeof(st_meta)))
#define AT(...) (&(const st_attrs){__VA_ARGS__})
#define NOAT AT(.ndims = 0)

static const char *mstr(const st_meta *m, char *buf, size_t n)
{
    char s[128];
    snprintf(buf, n, "%s%s", st_dtype_name(m->dtype),
             st_shape_str(m->shape, m->ndim, s, sizeof s));
    return buf;
}

static void ok_(int line, st_op_id op, const st_meta *in, int nin,
                const st_attrs *a, st_meta exp)
{
    st_meta out[ST_MAX_OUT];
    memset(out, 0, sizeof out);
    int nout = -1;
    st_err_clear();
    st_status s = st_infer(op, in, nin, a, out, &nout);
    char e[160], g[160];
    st_test_checks++;
    bool good = s == ST_OK && nout == 1 && out[0].dtype == exp.dtype &&
                out[0].ndim == exp.ndim && out[0].kind == ST_META_TENSOR;
    for (int d = 0; good && d < exp.ndim; d++)
        good = out[0].shape[d] == exp.shape[d];
    if (!good) {
        st_test_fail_at(__FILE__, line, "infer %s: expected %s, got %s (status %d, nout %d, "
                        "msg '%s')", st_op(op)->name, mstr(&exp, e, sizeof e),
                        s == ST_OK ? mstr(&out[0], g, sizeof g) : "error", (int)s, nout,
                        st_err_msg());
    }
}

static void err_(int line, st_op_id op, const st_meta *in, int nin,
                 const st_attrs *a, st_status kind, const char *sub)
{
    st_meta out[ST_MAX_OUT];
    int nout = -1;
    st_err_clear();
    st_status s = st_infer(op, in, nin, a, out, &nout);
    const char *msg = st_err_msg();
    const char *name = st_op(op)->name;
    st_test_checks++;
    bool good = s == kind && st_err_kind() == kind &&
                strncmp(msg, name, strlen(name)) == 0 &&
                msg[strlen(name)] == ':' && (!sub || strstr(msg, sub)) &&
                strstr(msg, "operands");
    if (!good) {
        st_test_fail_at(__FILE__, line, "infer %s: expected error %d containing '%s', got "
                        "status %d msg '%s'", name, (int)kind, sub ? sub : "", (int)s, msg);
    }
}

#define OK(op, attrs, exp, ...) ok_(__LINE__, op, INS(__VA_ARGS__), attrs, exp)
#define ERR(op, attrs, kind, sub, ...)                                        \
    err_(__LINE__, op, INS(__VA_ARGS__), attrs, kind, sub)

/* ------------------------------------------------------------------ */

static void test_dtypes(void)
{
    CHECK(st_dtype_size(ST_BOOL) == 1 && st_dtype_size(ST_INT32) == 4 &&
          st_dtype_size(ST_INT64) == 8 && st_dtype_size(ST_FLOAT16) == 2 &&
          st_dtype_size(ST_BFLOAT16) == 2 && st_dtype_size(ST_FLOAT32) == 4 &&
          st_dtype_size(ST_FLOAT64) == 8, "dtype sizes");
    CHECK(strcmp(st_dtype_name(ST_BFLOAT16), "bfloat16") == 0 &&
          strcmp(st_dtype_name(ST_FLOAT32), "float32") == 0, "dtype names");
    CHECK(st_dtype_is_float(ST_FLOAT16) && !st_dtype_is_float(ST_INT64) &&
          st_dtype_is_int(ST_INT32) && !st_dtype_is_int(ST_BOOL),
          "dtype categories");
    CHECK(st_dtype_size((st_dtype)99) == 0 && !st_dtype_is_float((st_dtype)-1),
          "invalid dtype is harmless");
    for (int a = 0; a < ST_NDTYPES; a++)
        for (int b = 0; b < ST_NDTYPES; b++)
            CHECK(st_promote(a, b) == promote_expect[a][b],
                  "promote(%s, %s) = %s, torch says %s", st_dtype_name(a),
                  st_dtype_name(b), st_dtype_name(st_promote(a, b)),
                  st_dtype_name(promote_expect[a][b]));
    for (size_t k = 0; k < sizeof rt_cases / sizeof rt_cases[0]; k++) {
        const struct rt_case *c = &rt_cases[k];
        st_meta m[2];
        char ks[2] = {c->k0, c->k1};
        st_dtype ds[2] = {c->d0, c->d1};
        for (int j = 0; j < 2; j++)
            m[j] = ks[j] == 'T' ? T(ds[j], 2) : ks[j] == 'Z' ? T0(ds[j])
                                                            : SC(ds[j]);
        st_dtype r = st_result_type(m, 2);
        CHECK(r == c->r, "result_type(%c %s, %c %s) = %s, torch says %s",
              c->k0, st_dtype_name(c->d0), c->k1, st_dtype_name(c->d1),
              st_dtype_name(r), st_dtype_name(c->r));
    }
    /* the brief's examples, three-operand mixes */
    {
        st_meta m[3] = {T(ST_INT32, 3), SC(ST_FLOAT64), T0(ST_INT64)};
        CHECK(st_result_type(m, 2) == ST_FLOAT32, "int32 tensor + 2.5");
        CHECK(st_result_type(m + 1, 2) == ST_FLOAT32, "0-d int64 + 2.5");
        st_meta m2[3] = {T(ST_INT32, 3), T0(ST_INT64), SC(ST_INT64)};
        CHECK(st_result_type(m2, 3) == ST_INT32, "int32[3] + int64 0-d + 7");
        st_meta m3[3] = {T(ST_BOOL, 3), T0(ST_INT32), SC(ST_FLOAT64)};
        CHECK(st_result_type(m3, 3) == ST_FLOAT32, "bool[3] + int32 0-d + 2.5");
    }
}

static void test_half(void)
{
    for (size_t k = 0; k < sizeof half_cases / sizeof half_cases[0]; k++) {
        const struct half_case *c = &half_cases[k];
        uint16_t h = st_float_to_half(c->f), b = st_float_to_bf16(c->f);
        CHECK(h == c->h, "float_to_half(%.9g) = 0x%04x, torch 0x%04x", c->f, h,
              c->h);
        CHECK(b == c->b, "float_to_bf16(%.9g) = 0x%04x, torch 0x%04x", c->f, b,
              c->b);
        float hf = st_half_to_float(c->h), bf = st_bf16_to_float(c->b);
        CHECK(hf == c->hf && signbit(hf) == signbit(c->hf),
              "half_to_float(0x%04x) = %.9g, torch %.9g", c->h, hf, c->hf);
        CHECK(bf == c->bf && signbit(bf) == signbit(c->bf),
              "bf16_to_float(0x%04x) = %.9g, torch %.9g", c->b, bf, c->bf);
    }
    uint16_t hn = st_float_to_half(NAN), bn = st_float_to_bf16(NAN);
    CHECK((hn & 0x7c00) == 0x7c00 && (hn & 0x3ff) != 0, "half NaN");
    CHECK((bn & 0x7f80) == 0x7f80 && (bn & 0x7f) != 0, "bf16 NaN");
    CHECK(isnan(st_half_to_float(0x7e00)) && isnan(st_bf16_to_float(0x7fc0)),
          "NaN back to float");
    /* every finite half round-trips through float */
    int bad = 0;
    for (uint32_t u = 0; u < 0x10000; u++) {
        if ((u & 0x7c00) == 0x7c00)
            continue;
        if (st_float_to_half(st_half_to_float((uint16_t)u)) != u)
            bad++;
    }
    CHECK(bad == 0, "half round trip (%d bad)", bad);
}

static void test_broadcast_wrap(void)
{
    st_meta m[3] = {T(ST_FLOAT32, 2, 1, 3), T(ST_FLOAT32, 4, 1), T0(ST_INT32)};
    int nd = -1;
    int64_t s[ST_MAX_DIMS];
    st_err_clear();
    CHECK(st_broadcast("add", m, 3, &nd, s) == ST_OK && nd == 3 &&
          s[0] == 2 && s[1] == 4 && s[2] == 3, "broadcast [2,1,3] [4,1] []");
    st_meta z[2] = {T(ST_FLOAT32, 0, 1), T(ST_FLOAT32, 5)};
    CHECK(st_broadcast("add", z, 2, &nd, s) == ST_OK && nd == 2 &&
          s[0] == 0 && s[1] == 5, "broadcast with zero size");
    st_meta b[2] = {T(ST_FLOAT32, 2, 3), T(ST_FLOAT32, 4)};
    CHECK(st_broadcast("add", b, 2, &nd, s) == ST_ERR_RUNTIME &&
          st_err_kind() == ST_ERR_RUNTIME &&
          strcmp(st_err_msg(), "add: the size of tensor a (3) must match the "
                 "size of tensor b (4) at non-singleton dimension 1; shapes "
                 "[2, 3] and [4]") == 0, "broadcast error text: '%s'",
          st_err_msg());
    st_err_clear();
    CHECK(st_err_kind() == ST_OK && st_err_msg()[0] == '\0', "err_clear");
    int64_t d = -1;
    CHECK(st_wrap_dim("sum", &d, 2) == ST_OK && d == 1, "wrap -1");
    d = 0;
    CHECK(st_wrap_dim("sum", &d, 0) == ST_OK && d == 0, "wrap 0-d 0");
    d = -1;
    CHECK(st_wrap_dim("sum", &d, 0) == ST_OK && d == 0, "wrap 0-d -1");
    d = 5;
    CHECK(st_wrap_dim("sum", &d, 2) == ST_ERR_INDEX &&
          strcmp(st_err_msg(), "sum: dimension out of range (expected to be in "
                 "range of [-2, 1], but got 5)") == 0, "wrap error text: '%s'",
          st_err_msg());
    st_meta mm = T(ST_FLOAT32, 2, 3, 4);
    CHECK(st_meta_numel(&mm) == 24, "numel");
    char buf[64];
    CHECK(strcmp(st_shape_str(mm.shape, 3, buf, sizeof buf), "[2, 3, 4]") == 0 &&
          strcmp(st_shape_str(NULL, 0, buf, sizeof buf), "[]") == 0, "shape_str");
    /* a long message is truncated, not overflowed */
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    st_err(ST_ERR_VALUE, "%s", big);
    CHECK(strlen(st_err_msg()) == 1023, "error buffer is 1 KiB");
}

static void test_unary_binary(void)
{
    const st_meta f = T(ST_FLOAT32, 2, 3), i = T(ST_INT32, 2, 3),
                  b = T(ST_BOOL, 2, 3), h = T(ST_FLOAT16, 2, 3);
    static const st_op_id to_float[] = {ST_OP_EXP, ST_OP_LOG, ST_OP_SQRT,
        ST_OP_RSQRT, ST_OP_TANH, ST_OP_SIGMOID, ST_OP_ERF, ST_OP_SIN,
        ST_OP_COS, ST_OP_RECIPROCAL};
    for (size_t k = 0; k < sizeof to_float / sizeof to_float[0]; k++) {
        OK(to_float[k], NOAT, T(ST_FLOAT32, 2, 3), i);
        OK(to_float[k], NOAT, T(ST_FLOAT32, 2, 3), b);
        OK(to_float[k], NOAT, T(ST_FLOAT16, 2, 3), h);
        ERR(to_float[k], NOAT, ST_ERR_TYPE, "expected 1 operand", f, f);
    }
    static const st_op_id keep[] = {ST_OP_ABS, ST_OP_RELU, ST_OP_SIGN,
        ST_OP_FLOOR, ST_OP_CEIL, ST_OP_ROUND, ST_OP_NEG};
    for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++) {
        OK(keep[k], NOAT, T(ST_INT32, 2, 3), i);
        OK(keep[k], NOAT, T(ST_FLOAT16, 2, 3), h);
    }
    OK(ST_OP_SIGN, NOAT, T(ST_BOOL, 2, 3), b);
    ERR(ST_OP_NEG, NOAT, ST_ERR_RUNTIME,
        "Negation, the `-` operator, on a bool tensor is not supported", b);
    ERR(ST_OP_RELU, NOAT, ST_ERR_RUNTIME, "Boolean inputs not supported", b);
    ERR(ST_OP_ABS, NOAT, ST_ERR_NOTIMPL, "not implemented for 'Bool'", b);
    OK(ST_OP_LOGICAL_NOT, NOAT, T(ST_BOOL, 2, 3), f);
    ERR(ST_OP_LOGICAL_NOT, NOAT, ST_ERR_TYPE, NULL);
    OK(ST_OP_CAST, AT(.dtype = ST_BFLOAT16), T(ST_BFLOAT16, 2, 3), i);
    ERR(ST_OP_CAST, AT(.dtype = (st_dtype)42), ST_ERR_TYPE, "dtype", i);
    /* bad operand metas never crash */
    {
        st_meta bad = f;
        bad.ndim = 12;
        ERR(ST_OP_EXP, NOAT, ST_ERR_VALUE, "rank", bad);
        bad = f;
        bad.shape[1] = -3;
        ERR(ST_OP_EXP, NOAT, ST_ERR_VALUE, "negative", bad);
        bad = f;
        bad.dtype = (st_dtype)77;
        ERR(ST_OP_EXP, NOAT, ST_ERR_TYPE, "dtype", bad);
    }

    static const st_op_id arith[] = {ST_OP_ADD, ST_OP_SUB, ST_OP_MUL,
        ST_OP_MAXIMUM, ST_OP_MINIMUM, ST_OP_FLOOR_DIVIDE, ST_OP_REMAINDER,
        ST_OP_POW};
    for (size_t k = 0; k < sizeof arith / sizeof arith[0]; k++) {
        OK(arith[k], NOAT, T(ST_FLOAT32, 4, 2, 3), T(ST_INT32, 4, 1, 3), f);
        OK(arith[k], NOAT, T(ST_INT32, 2, 3), i, SC(ST_INT64));
        OK(arith[k], NOAT, T(ST_FLOAT32, 2, 3), i, SC(ST_FLOAT64));
        OK(arith[k], NOAT, T(ST_FLOAT16, 2, 3), h, SC(ST_FLOAT64));
        OK(arith[k], NOAT, T(ST_INT32, 2, 3), i, T0(ST_INT64));
        ERR(arith[k], NOAT, ST_ERR_RUNTIME,
            "the size of tensor a (3) must match the size of tensor b (4)",
            f, T(ST_FLOAT32, 4));
        ERR(arith[k], NOAT, ST_ERR_TYPE, "expected 2 operands", f);
    }
    OK(ST_OP_ADD, NOAT, T(ST_INT64, 2, 3), b, SC(ST_INT64));
    OK(ST_OP_ADD, NOAT, T(ST_FLOAT32, 2, 3), T(ST_FLOAT16, 2, 3),
       T(ST_BFLOAT16, 3));
    OK(ST_OP_ADD, NOAT, T(ST_BOOL, 2, 3), b, b);
    OK(ST_OP_ADD, NOAT, T0(ST_FLOAT32), SC(ST_FLOAT64), SC(ST_FLOAT64));
    ERR(ST_OP_SUB, NOAT, ST_ERR_RUNTIME, "with two bool tensors", b, b);
    ERR(ST_OP_SUB, NOAT, ST_ERR_RUNTIME, "with a bool tensor", f, SC(ST_BOOL));
    ERR(ST_OP_FLOOR_DIVIDE, NOAT, ST_ERR_NOTIMPL, "not implemented", b, b);
    ERR(ST_OP_POW, NOAT, ST_ERR_NOTIMPL, "not implemented", b, b);
    OK(ST_OP_POW, NOAT, T(ST_BOOL, 2, 3), b, SC(ST_BOOL));
    OK(ST_OP_DIV, NOAT, T(ST_FLOAT32, 2, 3), i, i);
    OK(ST_OP_DIV, NOAT, T(ST_FLOAT32, 2, 3), b, b);
    OK(ST_OP_DIV, NOAT, T(ST_FLOAT16, 2, 3), h, SC(ST_INT64));
    OK(ST_OP_DIV, NOAT, T(ST_FLOAT64, 2, 3), i, T0(ST_FLOAT64));
    ERR(ST_OP_DIV, NOAT, ST_ERR_RUNTIME, "non-singleton", f, T(ST_FLOAT32, 2));
    static const st_op_id cmp[] = {ST_OP_EQ, ST_OP_NE, ST_OP_LT, ST_OP_LE,
        ST_OP_GT, ST_OP_GE, ST_OP_LOGICAL_AND, ST_OP_LOGICAL_OR};
    for (size_t k = 0; k < sizeof cmp / sizeof cmp[0]; k++) {
        OK(cmp[k], NOAT, T(ST_BOOL, 2, 3), i, SC(ST_FLOAT64));
        OK(cmp[k], NOAT, T(ST_BOOL, 5, 2, 3), T(ST_FLOAT64, 5, 1, 1), h);
        ERR(cmp[k], NOAT, ST_ERR_RUNTIME, "non-singleton dimension 0",
            T(ST_FLOAT32, 2), T(ST_FLOAT32, 3));
    }
    /* where */
    OK(ST_OP_WHERE, NOAT, T(ST_FLOAT32, 3, 3), T(ST_BOOL, 3, 1), T(ST_INT32, 3),
       SC(ST_FLOAT64));
    OK(ST_OP_WHERE, NOAT, T(ST_INT64, 3), T(ST_BOOL, 3), SC(ST_INT64),
       SC(ST_INT64));
    OK(ST_OP_WHERE, NOAT, T(ST_FLOAT64, 3), T(ST_BOOL, 3), T(ST_INT32, 3),
       T0(ST_FLOAT64));
    ERR(ST_OP_WHERE, NOAT, ST_ERR_RUNTIME,
        "where expected condition to be a boolean tensor, but got a tensor "
        "with dtype Float", T(ST_FLOAT32, 3), f, f);
    ERR(ST_OP_WHERE, NOAT, ST_ERR_RUNTIME, "size of tensor a (2)",
        T(ST_BOOL, 2), T(ST_FLOAT32, 3), T(ST_FLOAT32, 4));
}

static void test_reduce(void)
{
    const st_meta f = T(ST_FLOAT32, 2, 3, 4);
    OK(ST_OP_SUM, NOAT, T0(ST_FLOAT32), f);
    OK(ST_OP_SUM, AT(.dims = {1, -1}, .ndims = 2), T(ST_FLOAT32, 2), f);
    OK(ST_OP_SUM, AT(.dims = {1}, .ndims = 1, .flags = ST_ATTR_KEEPDIM),
       T(ST_FLOAT32, 2, 1, 4), f);
    OK(ST_OP_SUM, AT(.flags = ST_ATTR_KEEPDIM), T(ST_FLOAT32, 1, 1, 1), f);
    OK(ST_OP_SUM, NOAT, T0(ST_INT64), T(ST_INT32, 3));
    OK(ST_OP_PROD, NOAT, T0(ST_INT64), T(ST_BOOL, 3));
    OK(ST_OP_SUM, NOAT, T0(ST_FLOAT16), T(ST_FLOAT16, 3));
    OK(ST_OP_SUM, AT(.dims = {-1}, .ndims = 1), T0(ST_FLOAT32), T0(ST_FLOAT32));
    ERR(ST_OP_SUM, AT(.dims = {1, -2}, .ndims = 2), ST_ERR_RUNTIME,
        "dim 1 appears multiple times in the list of dims", f);
    ERR(ST_OP_SUM, AT(.dims = {3}, .ndims = 1), ST_ERR_INDEX,
        "dimension out of range (expected to be in range of [-3, 2], but got 3)",
        f);
    ERR(ST_OP_SUM, AT(.ndims = 9), ST_ERR_VALUE, "ndims", f);
    ERR(ST_OP_SUM, AT(.ndims = -4), ST_ERR_VALUE, "ndims", f);
    OK(ST_OP_MEAN, AT(.dims = {0}, .ndims = 1), T(ST_FLOAT16, 3, 4),
       T(ST_FLOAT16, 2, 3, 4));
    ERR(ST_OP_MEAN, NOAT, ST_ERR_RUNTIME,
        "mean(): could not infer output dtype. Input dtype must be either a "
        "floating point or complex dtype. Got: Int", T(ST_INT32, 3));
    OK(ST_OP_AMAX, AT(.dims = {2}, .ndims = 1), T(ST_FLOAT32, 2, 3), f);
    OK(ST_OP_AMIN, AT(.dims = {1}, .ndims = 1), T(ST_BOOL, 0), T(ST_BOOL, 0, 3));
    ERR(ST_OP_AMAX, AT(.dims = {0}, .ndims = 1), ST_ERR_INDEX,
        "amax(): Expected reduction dim 0 to have non-zero size.",
        T(ST_FLOAT32, 0, 3));
    ERR(ST_OP_AMIN, NOAT, ST_ERR_RUNTIME,
        "Expected reduction dim to be specified for input.numel() == 0",
        T(ST_FLOAT32, 0, 3));
    OK(ST_OP_ARGMAX, AT(.dims = {1}, .ndims = 1), T(ST_INT64, 2, 4), f);
    OK(ST_OP_ARGMIN, NOAT, T0(ST_INT64), f);
    OK(ST_OP_ARGMAX, AT(.flags = ST_ATTR_KEEPDIM), T(ST_INT64, 1, 1, 1), f);
    ERR(ST_OP_ARGMAX, AT(.dims = {0, 1}, .ndims = 2), ST_ERR_TYPE, "must be int",
        f);
    ERR(ST_OP_ARGMIN, AT(.dims = {0}, .ndims = 1), ST_ERR_INDEX,
        "argmin(): Expected reduction dim 0 to have non-zero size.",
        T(ST_FLOAT32, 0, 3));
    ERR(ST_OP_ARGMAX, NOAT, ST_ERR_INDEX, "input.numel() == 0",
        T(ST_FLOAT32, 0, 3));
    ERR(ST_OP_ARGMAX, NOAT, ST_ERR_RUNTIME, "does not support bool",
        T(ST_BOOL, 3));
}

static void test_matmul(void)
{
    const st_op_id M = ST_OP_MATMUL;
    OK(M, NOAT, T0(ST_FLOAT32), T(ST_FLOAT32, 3), T(ST_FLOAT32, 3));
    OK(M, NOAT, T(ST_FLOAT32, 2), T(ST_FLOAT32, 2, 3), T(ST_FLOAT32, 3));
    OK(M, NOAT, T(ST_FLOAT32, 5), T(ST_FLOAT32, 3), T(ST_FLOAT32, 3, 5));
    OK(M, NOAT, T(ST_FLOAT32, 2, 5), T(ST_FLOAT32, 2, 3), T(ST_FLOAT32, 3, 5));
    OK(M, NOAT, T(ST_FLOAT32, 7, 2, 5), T(ST_FLOAT32, 7, 2, 3),
       T(ST_FLOAT32, 3, 5));
    OK(M, NOAT, T(ST_FLOAT32, 2, 5, 2, 4), T(ST_FLOAT32, 2, 1, 2, 3),
       T(ST_FLOAT32, 5, 3, 4));
    OK(M, NOAT, T(ST_FLOAT32, 7, 5), T(ST_FLOAT32, 3), T(ST_FLOAT32, 7, 3, 5));
    OK(M, NOAT, T(ST_FLOAT32, 7, 2), T(ST_FLOAT32, 7, 2, 3), T(ST_FLOAT32, 3));
    OK(M, NOAT, T(ST_INT32, 2), T(ST_INT32, 2, 3), T(ST_INT32, 3));
    OK(M, NOAT, T(ST_FLOAT32, 2, 5), T(ST_FLOAT32, 2, 0), T(ST_FLOAT32, 0, 5));
    ERR(M, NOAT, ST_ERR_RUNTIME,
        "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
        T(ST_FLOAT32, 2, 3), T(ST_FLOAT32, 4, 5));
    ERR(M, NOAT, ST_ERR_RUNTIME,
        "mat1 and mat2 shapes cannot be multiplied (14x3 and 4x5)",
        T(ST_FLOAT32, 7, 2, 3), T(ST_FLOAT32, 4, 5));
    ERR(M, NOAT, ST_ERR_RUNTIME,
        "expected m1 and m2 to have the same dtype, but got: float != double",
        T(ST_FLOAT32, 2, 3), T(ST_FLOAT64, 3, 5));
    ERR(M, NOAT, ST_ERR_RUNTIME, "inconsistent tensor size", T(ST_FLOAT32, 3),
        T(ST_FLOAT32, 4));
    ERR(M, NOAT, ST_ERR_RUNTIME, "size mismatch, got input (2), mat (2x3), "
        "vec (4)", T(ST_FLOAT32, 2, 3), T(ST_FLOAT32, 4));
    ERR(M, NOAT, ST_ERR_RUNTIME, "Expected size for first two dimensions of "
        "batch2 tensor to be: [7, 3] but got: [7, 4].", T(ST_FLOAT32, 7, 2, 3),
        T(ST_FLOAT32, 7, 4, 5));
    ERR(M, NOAT, ST_ERR_RUNTIME, "size of tensor a (7) must match the size of "
        "tensor b (6) at non-singleton dimension 0", T(ST_FLOAT32, 7, 2, 3),
        T(ST_FLOAT32, 6, 3, 5));
    ERR(M, NOAT, ST_ERR_RUNTIME, "need to be at least 1D, but they are 0D and 1D",
        T0(ST_FLOAT32), T(ST_FLOAT32, 3));
    ERR(M, NOAT, ST_ERR_NOTIMPL, "not implemented for 'Bool'",
        T(ST_BOOL, 2, 3), T(ST_BOOL, 3, 2));
}

static void test_index_create_view(void)
{
    /* gather */
    OK(ST_OP_GATHER, AT(.i = {1}), T(ST_FLOAT32, 2, 6), T(ST_FLOAT32, 3, 4),
       T(ST_INT64, 2, 6));
    OK(ST_OP_GATHER, AT(.i = {-1}), T(ST_FLOAT32, 2, 2), T(ST_FLOAT32, 3, 4),
       T(ST_INT32, 2, 2));
    ERR(ST_OP_GATHER, AT(.i = {1}), ST_ERR_RUNTIME, "Size does not match at "
        "dimension 0 expected index [4, 2] to be no larger than self [3, 4] "
        "apart from dimension 1", T(ST_FLOAT32, 3, 4), T(ST_INT64, 4, 2));
    ERR(ST_OP_GATHER, AT(.i = {1}), ST_ERR_RUNTIME, "same number of dimensions",
        T(ST_FLOAT32, 3, 4), T(ST_INT64, 2));
    ERR(ST_OP_GATHER, AT(.i = {1}), ST_ERR_RUNTIME, "Expected dtype int32/int64",
        T(ST_FLOAT32, 3, 4), T(ST_FLOAT32, 2, 2));
    ERR(ST_OP_GATHER, AT(.i = {2}), ST_ERR_INDEX, "dimension out of range",
        T(ST_FLOAT32, 3, 4), T(ST_INT64, 2, 2));
    /* index_select */
    OK(ST_OP_INDEX_SELECT, AT(.i = {1}), T(ST_FLOAT32, 3, 5),
       T(ST_FLOAT32, 3, 4), T(ST_INT64, 5));
    OK(ST_OP_INDEX_SELECT, AT(.i = {1}), T(ST_FLOAT32, 3, 1),
       T(ST_FLOAT32, 3, 4), T0(ST_INT32));
    ERR(ST_OP_INDEX_SELECT, AT(.i = {1}), ST_ERR_INDEX,
        "Index is supposed to be a vector", T(ST_FLOAT32, 3, 4),
        T(ST_INT64, 2, 2));
    ERR(ST_OP_INDEX_SELECT, AT(.i = {0}), ST_ERR_RUNTIME,
        "Expected dtype int32 or int64 for index", T(ST_FLOAT32, 3, 4),
        T(ST_FLOAT32, 2));
    /* scatter_add */
    OK(ST_OP_SCATTER_ADD, AT(.i = {0}), T(ST_FLOAT32, 5, 3),
       T(ST_FLOAT32, 5, 3), T(ST_INT64, 7, 2), T(ST_FLOAT32, 7, 3));
    OK(ST_OP_SCATTER_ADD, AT(.i = {-1}), T(ST_FLOAT64, 2, 4),
       T(ST_FLOAT64, 2, 4), T(ST_INT64, 2, 6), T(ST_FLOAT64, 2, 6));
    OK(ST_OP_SCATTER_ADD, AT(.i = {0}), T0(ST_FLOAT32), T0(ST_FLOAT32),
       T0(ST_INT64), T0(ST_FLOAT32));
    ERR(ST_OP_SCATTER_ADD, AT(.i = {0}), ST_ERR_RUNTIME,
        "scatter_add(): Expected dtype int64 for index", T(ST_FLOAT32, 5, 3),
        T(ST_INT32, 2, 3), T(ST_FLOAT32, 2, 3));
    ERR(ST_OP_SCATTER_ADD, AT(.i = {0}), ST_ERR_RUNTIME,
        "Expected self.dtype to be equal to src.dtype", T(ST_FLOAT32, 5, 3),
        T(ST_INT64, 2, 3), T(ST_FLOAT64, 2, 3));
    ERR(ST_OP_SCATTER_ADD, AT(.i = {0}), ST_ERR_RUNTIME,
        "same number of dimensions as self tensor", T(ST_FLOAT32, 5, 3),
        T(ST_INT64, 2), T(ST_FLOAT32, 2));
    ERR(ST_OP_SCATTER_ADD, AT(.i = {0}), ST_ERR_RUNTIME,
        "same number of dimensions as src tensor", T(ST_FLOAT32, 5, 3),
        T(ST_INT64, 2, 3), T(ST_FLOAT32, 6));
    ERR(ST_OP_SCATTER_ADD, AT(.i = {0}), ST_ERR_RUNTIME,
        "scatter_add: Expected index [2, 4] to be smaller than self [5, 3] "
        "apart from dimension 0 and to be smaller size than src [2, 4]",
        T(ST_FLOAT32, 5, 3), T(ST_INT64, 2, 4), T(ST_FLOAT32, 2, 4));
    ERR(ST_OP_SCATTER_ADD, AT(.i = {0}), ST_ERR_RUNTIME,
        "to be smaller size than src [1, 3]", T(ST_FLOAT32, 5, 3),
        T(ST_INT64, 2, 3), T(ST_FLOAT32, 1, 3));
    ERR(ST_OP_SCATTER_ADD, AT(.i = {2}), ST_ERR_INDEX, "dimension out of range",
        T(ST_FLOAT32, 5, 3), T(ST_INT64, 2, 3), T(ST_FLOAT32, 2, 3));
    /* scatter: scatter_add's rules, its own name in the messages */
    OK(ST_OP_SCATTER, AT(.i = {1}), T(ST_INT32, 5, 3), T(ST_INT32, 5, 3),
       T(ST_INT64, 5, 2), T(ST_INT32, 5, 2));
    ERR(ST_OP_SCATTER, AT(.i = {0}), ST_ERR_RUNTIME,
        "scatter(): Expected dtype int64 for index", T(ST_FLOAT32, 5, 3),
        T(ST_INT32, 2, 3), T(ST_FLOAT32, 2, 3));
    ERR(ST_OP_SCATTER, AT(.i = {0}), ST_ERR_RUNTIME,
        "scatter(): Expected self.dtype to be equal to src.dtype",
        T(ST_FLOAT32, 5, 3), T(ST_INT64, 2, 3), T(ST_FLOAT64, 2, 3));
    ERR(ST_OP_SCATTER, AT(.i = {0}), ST_ERR_RUNTIME,
        "to be smaller size than src [1, 3]", T(ST_FLOAT32, 5, 3),
        T(ST_INT64, 2, 3), T(ST_FLOAT32, 1, 3));
    /* embedding */
    OK(ST_OP_EMBEDDING, AT(.i = {-1}), T(ST_FLOAT32, 2, 3, 4),
       T(ST_FLOAT32, 10, 4), T(ST_INT64, 2, 3));
    OK(ST_OP_EMBEDDING, AT(.i = {-1}), T(ST_FLOAT32, 4), T(ST_FLOAT32, 10, 4),
       T0(ST_INT32));
    ERR(ST_OP_EMBEDDING, AT(.i = {-1}), ST_ERR_RUNTIME, "'weight' must be 2-D",
        T(ST_FLOAT32, 10), T(ST_INT64, 2));
    ERR(ST_OP_EMBEDDING, AT(.i = {-1}), ST_ERR_RUNTIME, "'indices'",
        T(ST_FLOAT32, 10, 4), T(ST_FLOAT32, 2));
    ERR(ST_OP_EMBEDDING, AT(.i = {-1}), ST_ERR_VALUE, "more than 8 dims",
        T(ST_FLOAT32, 10, 4), T(ST_INT64, 1, 1, 1, 1, 1, 1, 1, 1));
    /* creation */
    OK(ST_OP_FULL, AT(.dims = {2, 3}, .ndims = 2, .dtype = ST_FLOAT16,
                      .f = {1.5}), T(ST_FLOAT16, 2, 3));
    OK(ST_OP_FULL, AT(.dtype = ST_INT64), T0(ST_INT64));
    OK(ST_OP_FULL, AT(.dtype = ST_INT32), T(ST_INT32, 4, 5),
       T(ST_FLOAT32, 4, 5));
    ERR(ST_OP_FULL, AT(.dims = {2, -1}, .ndims = 2, .dtype = ST_FLOAT32),
        ST_ERR_RUNTIME, "negative dimension -1", );
    ERR(ST_OP_FULL, AT(.ndims = 100, .dtype = ST_FLOAT32), ST_ERR_VALUE,
        "ndims", );
    OK(ST_OP_ARANGE, AT(.dims = {5}, .ndims = 1, .dtype = ST_INT64,
                        .f = {0, 1}), T(ST_INT64, 5));
    ERR(ST_OP_ARANGE, AT(.dims = {5}, .ndims = 1, .dtype = ST_INT64),
        ST_ERR_TYPE, "expected 0 operands", T(ST_FLOAT32, 5));
    ERR(ST_OP_ARANGE, AT(.dims = {2, 2}, .ndims = 2, .dtype = ST_INT64),
        ST_ERR_VALUE, "1-D", );
    OK(ST_OP_RAND, AT(.dims = {3}, .ndims = 1, .dtype = ST_FLOAT32,
                      .f = {0, 1}), T(ST_FLOAT32, 3));
    OK(ST_OP_RANDN, AT(.dtype = ST_BFLOAT16), T(ST_BFLOAT16, 2, 2),
       T(ST_INT64, 2, 2));
    ERR(ST_OP_RANDN, AT(.dims = {3}, .ndims = 1, .dtype = ST_INT64),
        ST_ERR_NOTIMPL, "not implemented for 'Long'", );
    ERR(ST_OP_RAND, AT(.dims = {3}, .ndims = 1, .dtype = ST_INT32),
        ST_ERR_NOTIMPL, "not implemented for 'Int'", );
    OK(ST_OP_RANDINT, AT(.dims = {3}, .ndims = 1, .dtype = ST_INT64,
                         .i = {0, 10}), T(ST_INT64, 3));
    ERR(ST_OP_RANDINT, AT(.dtype = (st_dtype)-3), ST_ERR_TYPE, "dtype", );
    ERR(ST_OP_RANDINT, AT(.dtype = ST_INT64), ST_ERR_TYPE, "operands",
        T(ST_FLOAT32, 1), T(ST_FLOAT32, 1));
    OK(ST_OP_COPY, NOAT, T(ST_INT32, 4, 1), T(ST_INT32, 4, 1));
    ERR(ST_OP_COPY, NOAT, ST_ERR_TYPE, "expected 1 operand", );
    /* views */
    const st_meta x = T(ST_FLOAT32, 2, 3);
    OK(ST_OP_RESHAPE, AT(.dims = {3, -1}, .ndims = 2), T(ST_FLOAT32, 3, 2), x);
    OK(ST_OP_RESHAPE, AT(.ndims = 0), T0(ST_FLOAT32), T(ST_FLOAT32, 1, 1));
    OK(ST_OP_RESHAPE, AT(.dims = {0, 5}, .ndims = 2), T(ST_FLOAT32, 0, 5),
       T(ST_FLOAT32, 0, 3));
    ERR(ST_OP_RESHAPE, AT(.dims = {2, 5}, .ndims = 2), ST_ERR_RUNTIME,
        "shape '[2, 5]' is invalid for input of size 6", x);
    ERR(ST_OP_RESHAPE, AT(.dims = {-1, 4}, .ndims = 2), ST_ERR_RUNTIME,
        "shape '[-1, 4]' is invalid for input of size 6", x);
    ERR(ST_OP_RESHAPE, AT(.dims = {-1, -1}, .ndims = 2), ST_ERR_RUNTIME,
        "only one dimension can be inferred", x);
    ERR(ST_OP_RESHAPE, AT(.dims = {-2, 3}, .ndims = 2), ST_ERR_RUNTIME,
        "invalid shape dimension -2", x);
    ERR(ST_OP_RESHAPE, AT(.dims = {0, -1}, .ndims = 2), ST_ERR_RUNTIME,
        "ambiguous", T(ST_FLOAT32, 0, 3));
    ERR(ST_OP_RESHAPE, AT(.dims = {INT64_MAX, INT64_MAX}, .ndims = 2),
        ST_ERR_RUNTIME, "invalid for input", x);
    OK(ST_OP_PERMUTE, AT(.dims = {-1, 0}, .ndims = 2), T(ST_FLOAT32, 3, 2), x);
    ERR(ST_OP_PERMUTE, AT(.dims = {0, 0}, .ndims = 2), ST_ERR_RUNTIME,
        "duplicate dims", x);
    ERR(ST_OP_PERMUTE, AT(.dims = {0}, .ndims = 1), ST_ERR_RUNTIME,
        "input.dim() = 2 is not equal to len(dims) = 1", x);
    ERR(ST_OP_PERMUTE, AT(.dims = {2, 0}, .ndims = 2), ST_ERR_INDEX,
        "out of range", x);
    OK(ST_OP_EXPAND, AT(.dims = {4, 2, -1}, .ndims = 3), T(ST_FLOAT32, 4, 2, 3),
       x);
    OK(ST_OP_EXPAND, AT(.dims = {0, 3}, .ndims = 2), T(ST_FLOAT32, 0, 3),
       T(ST_FLOAT32, 1, 3));
    ERR(ST_OP_EXPAND, AT(.dims = {2, 4}, .ndims = 2), ST_ERR_RUNTIME,
        "The expanded size of the tensor (4) must match the existing size (3) "
        "at non-singleton dimension 1.  Target sizes: [2, 4].  Tensor sizes: "
        "[2, 3]", x);
    ERR(ST_OP_EXPAND, AT(.dims = {3}, .ndims = 1), ST_ERR_RUNTIME,
        "must be greater or equal to the number of dimensions", x);
    ERR(ST_OP_EXPAND, AT(.dims = {-1, 2, 3}, .ndims = 3), ST_ERR_RUNTIME,
        "leading, non-existing dimension 0", x);
    OK(ST_OP_SLICE, AT(.i = {0, 2, 100, 3}), T(ST_FLOAT32, 3), T(ST_FLOAT32, 10));
    OK(ST_OP_SLICE, AT(.i = {0, -3, -1, 1}), T(ST_FLOAT32, 2), T(ST_FLOAT32, 10));
    OK(ST_OP_SLICE, AT(.i = {-1, 5, 2, 1}), T(ST_FLOAT32, 4, 0),
       T(ST_FLOAT32, 4, 10));
    OK(ST_OP_SLICE, AT(.i = {0, INT64_MIN, INT64_MAX, INT64_MAX}),
       T(ST_FLOAT32, 1), T(ST_FLOAT32, 10));
    ERR(ST_OP_SLICE, AT(.i = {0, 0, 5, 0}), ST_ERR_RUNTIME,
        "slice step must be positive", T(ST_FLOAT32, 10));
    ERR(ST_OP_SLICE, AT(.i = {0, 0, 1, 1}), ST_ERR_INDEX, "0-dim",
        T0(ST_FLOAT32));
    OK(ST_OP_SQUEEZE, NOAT, T(ST_FLOAT32, 3), T(ST_FLOAT32, 1, 3, 1));
    OK(ST_OP_SQUEEZE, AT(.dims = {0, 1}, .ndims = 2), T(ST_FLOAT32, 3, 1),
       T(ST_FLOAT32, 1, 3, 1));
    ERR(ST_OP_SQUEEZE, AT(.dims = {0, 0}, .ndims = 2), ST_ERR_RUNTIME,
        "appears multiple times", T(ST_FLOAT32, 1, 3));
    OK(ST_OP_UNSQUEEZE, AT(.i = {-1}), T(ST_FLOAT32, 2, 3, 1), x);
    OK(ST_OP_UNSQUEEZE, AT(.i = {0}), T(ST_FLOAT32, 1), T0(ST_FLOAT32));
    ERR(ST_OP_UNSQUEEZE, AT(.i = {3}), ST_ERR_INDEX,
        "expected to be in range of [-3, 2], but got 3", x);
    ERR(ST_OP_UNSQUEEZE, AT(.i = {0}), ST_ERR_VALUE, "more than 8",
        T(ST_FLOAT32, 1, 1, 1, 1, 1, 1, 1, 1));
}

static void test_composite(void)
{
    const st_meta x = T(ST_FLOAT32, 2, 3);
    OK(ST_OP_SOFTMAX, AT(.i = {-1}), T(ST_FLOAT32, 2, 3), x);
    OK(ST_OP_LOG_SOFTMAX, AT(.i = {0}), T(ST_FLOAT16, 2, 3), T(ST_FLOAT16, 2, 3));
    ERR(ST_OP_SOFTMAX, AT(.i = {0}), ST_ERR_NOTIMPL, "not implemented for 'Int'",
        T(ST_INT32, 3));
    ERR(ST_OP_LOG_SOFTMAX, AT(.i = {2}), ST_ERR_INDEX, "out of range", x);
    /* layer_norm */
    int wb = ST_ATTR_HAS_WEIGHT | ST_ATTR_HAS_BIAS;
    OK(ST_OP_LAYER_NORM, AT(.ndims = 1, .f = {1e-5}, .flags = wb),
       T(ST_FLOAT32, 4, 2, 3), T(ST_FLOAT32, 4, 2, 3), T(ST_FLOAT32, 3),
       T(ST_FLOAT32, 3));
    OK(ST_OP_LAYER_NORM, AT(.ndims = 2, .flags = ST_ATTR_HAS_BIAS),
       T(ST_FLOAT32, 2, 3), x, T(ST_FLOAT32, 2, 3));
    OK(ST_OP_LAYER_NORM, AT(.ndims = 2), T(ST_FLOAT32, 2, 3), x);
    ERR(ST_OP_LAYER_NORM, AT(.ndims = 1, .flags = wb), ST_ERR_RUNTIME,
        "Expected weight to be of same shape as normalized_shape, but got "
        "weight of shape [4] and normalized_shape = [3]", x, T(ST_FLOAT32, 4),
        T(ST_FLOAT32, 3));
    ERR(ST_OP_LAYER_NORM, AT(.ndims = 1, .flags = wb), ST_ERR_TYPE,
        "expected 3 operands", x, T(ST_FLOAT32, 3));
    ERR(ST_OP_LAYER_NORM, AT(.ndims = 3), ST_ERR_RUNTIME, "at least 3 dims", x);
    ERR(ST_OP_LAYER_NORM, AT(.ndims = 0), ST_ERR_RUNTIME,
        "at least 1-dimensional", x);
    ERR(ST_OP_LAYER_NORM, AT(.ndims = 1), ST_ERR_NOTIMPL,
        "not implemented for 'Int'", T(ST_INT32, 2, 3));
    ERR(ST_OP_LAYER_NORM, AT(.ndims = 1, .flags = ST_ATTR_HAS_WEIGHT),
        ST_ERR_RUNTIME, "mixed dtype", x, T(ST_FLOAT64, 3));
    /* gelu, dropout */
    OK(ST_OP_GELU, AT(.flags = ST_ATTR_TANH), T(ST_BFLOAT16, 5),
       T(ST_BFLOAT16, 5));
    ERR(ST_OP_GELU, NOAT, ST_ERR_NOTIMPL, "GeluKernelImpl", T(ST_INT64, 5));
    OK(ST_OP_DROPOUT, AT(.f = {0.5}), T(ST_FLOAT32, 2, 3), x);
    ERR(ST_OP_DROPOUT, AT(.f = {0.5}), ST_ERR_RUNTIME, "can't be cast",
        T(ST_INT32, 3));
    /* cross_entropy */
    OK(ST_OP_CROSS_ENTROPY, AT(.i = {-100, 1}), T0(ST_FLOAT32), x,
       T(ST_INT64, 2));
    OK(ST_OP_CROSS_ENTROPY, AT(.i = {-100, 2}), T0(ST_FLOAT16),
       T(ST_FLOAT16, 2, 3), T(ST_INT64, 2));
    OK(ST_OP_CROSS_ENTROPY, AT(.i = {-100, 0}), T(ST_FLOAT32, 2), x,
       T(ST_INT64, 2));
    OK(ST_OP_CROSS_ENTROPY, AT(.i = {-100, 0}), T(ST_FLOAT32, 2, 4),
       T(ST_FLOAT32, 2, 3, 4), T(ST_INT64, 2, 4));
    ERR(ST_OP_CROSS_ENTROPY, AT(.i = {-100, 1}), ST_ERR_VALUE,
        "Expected input batch_size (2) to match target batch_size (3).", x,
        T(ST_INT64, 3));
    ERR(ST_OP_CROSS_ENTROPY, AT(.i = {-100, 1}), ST_ERR_RUNTIME,
        "expected target dtype to be Long or Byte, but got Int", x,
        T(ST_INT32, 2));
    ERR(ST_OP_CROSS_ENTROPY, AT(.i = {-100, 1}), ST_ERR_NOTIMPL,
        "not implemented for 'Long'", T(ST_INT64, 2, 3), T(ST_INT64, 2));
    ERR(ST_OP_CROSS_ENTROPY, AT(.i = {-100, 7}), ST_ERR_VALUE, "reduction", x,
        T(ST_INT64, 2));
    ERR(ST_OP_CROSS_ENTROPY, AT(.i = {-100, 1}), ST_ERR_RUNTIME,
        "Expected target size [2, 4], got [2, 5]", T(ST_FLOAT32, 2, 3, 4),
        T(ST_INT64, 2, 5));
    /* linear */
    OK(ST_OP_LINEAR, NOAT, T(ST_FLOAT32, 2, 4), x, T(ST_FLOAT32, 4, 3));
    OK(ST_OP_LINEAR, AT(.flags = ST_ATTR_HAS_BIAS), T(ST_FLOAT32, 5, 2, 4),
       T(ST_FLOAT32, 5, 2, 3), T(ST_FLOAT32, 4, 3), T(ST_FLOAT32, 4));
    OK(ST_OP_LINEAR, NOAT, T(ST_FLOAT32, 4), T(ST_FLOAT32, 3),
       T(ST_FLOAT32, 4, 3));
    ERR(ST_OP_LINEAR, NOAT, ST_ERR_RUNTIME,
        "mat1 and mat2 shapes cannot be multiplied (2x3 and 5x4)", x,
        T(ST_FLOAT32, 4, 5));
    ERR(ST_OP_LINEAR, AT(.flags = ST_ATTR_HAS_BIAS), ST_ERR_RUNTIME,
        "The expanded size of the tensor (4) must match the existing size (5)",
        x, T(ST_FLOAT32, 4, 3), T(ST_FLOAT32, 5));
    ERR(ST_OP_LINEAR, AT(.flags = ST_ATTR_HAS_BIAS), ST_ERR_TYPE,
        "expected 3 operands", x, T(ST_FLOAT32, 4, 3));
    ERR(ST_OP_LINEAR, NOAT, ST_ERR_RUNTIME, "float != double", x,
        T(ST_FLOAT64, 4, 3));
    ERR(ST_OP_LINEAR, NOAT, ST_ERR_RUNTIME, "at least 1D", T0(ST_FLOAT32),
        T(ST_FLOAT32, 4, 3));
    /* clamp */
    OK(ST_OP_CLAMP, AT(.f = {0.5}, .flags = ST_ATTR_HAS_MIN), T(ST_FLOAT32, 3),
       T(ST_INT32, 3));
    OK(ST_OP_CLAMP, AT(.i = {1, 2}, .flags = ST_ATTR_HAS_MIN | ST_ATTR_HAS_MAX |
                       ST_ATTR_INT_VALUE), T(ST_INT32, 3), T(ST_INT32, 3));
    OK(ST_OP_CLAMP, AT(.i = {0}, .flags = ST_ATTR_HAS_MIN | ST_ATTR_INT_VALUE),
       T(ST_INT64, 3), T(ST_BOOL, 3));
    OK(ST_OP_CLAMP, AT(.f = {0, 1}, .flags = ST_ATTR_HAS_MAX),
       T(ST_FLOAT16, 3), T(ST_FLOAT16, 3));
    ERR(ST_OP_CLAMP, NOAT, ST_ERR_RUNTIME, "At least one of 'min' or 'max'",
        T(ST_INT32, 3));
    /* masked_fill */
    OK(ST_OP_MASKED_FILL, AT(.f = {1.0}), T(ST_FLOAT32, 2, 3), x, T(ST_BOOL, 3));
    OK(ST_OP_MASKED_FILL, AT(.f = {1.5}), T(ST_INT32, 3), T(ST_INT32, 3),
       T(ST_BOOL, 3));
    ERR(ST_OP_MASKED_FILL, AT(.f = {1.0}), ST_ERR_RUNTIME,
        "masked_fill_ only supports boolean masks, but got mask with dtype "
        "float", x, T(ST_FLOAT32, 3));
    ERR(ST_OP_MASKED_FILL, AT(.f = {1.0}), ST_ERR_RUNTIME, "non-singleton", x,
        T(ST_BOOL, 2));
}

/* Every op: no crash on hostile attrs/operands, never more than one output,
 * names present, registry fields sane. */
static void test_registry_fuzz(void)
{
    for (int op = 0; op < ST_NOPS; op++) {
        const st_op_def *d = st_op(op);
        CHECK(d && d->name && d->name[0] && d->infer && d->print_attrs &&
              d->min_in >= 0 && d->min_in <= d->max_in && d->max_in <= ST_MAX_IN,
              "registry entry %d", op);
        if (!d)
            continue;
        CHECK(d->vjp == NULL, "vjp slot of %s starts empty", d->name);
    }
    CHECK(st_op((st_op_id)ST_NOPS) == NULL && st_op((st_op_id)-1) == NULL,
          "st_op out of range");
    CHECK(strcmp(st_op(ST_OP_ADD)->name, "add") == 0 &&
          strcmp(st_op(ST_OP_LAYER_NORM)->name, "layer_norm") == 0 &&
          strcmp(st_op(ST_OP_CAST)->name, "cast") == 0 &&
          strcmp(st_op(ST_OP_AMAX)->name, "amax") == 0, "op names");
    st_meta outs[ST_MAX_OUT];
    int nout;
    CHECK(st_infer((st_op_id)ST_NOPS, NULL, 0, NULL, outs, &nout) ==
          ST_ERR_VALUE, "infer with bad op id");
    CHECK(st_infer(ST_OP_ADD, NULL, 2, NULL, outs, &nout) != ST_OK,
          "infer with NULL operands");
    CHECK(st_infer(ST_OP_ADD, NULL, 0, NULL, NULL, NULL) != ST_OK,
          "infer with NULL outputs");
    /* hostile attrs against every op and operand count */
    static const int64_t evil[] = {0, 1, -1, 7, -9, 100, INT64_MAX, INT64_MIN};
    const st_meta pool[4] = {T(ST_FLOAT32, 2, 1, 3), T(ST_BOOL, 3),
                             T0(ST_INT64), T(ST_INT32, 0, 2)};
    unsigned seed = 12345;
    int crashes_avoided = 0;
    for (int op = 0; op < ST_NOPS; op++) {
        for (int trial = 0; trial < 300; trial++) {
            st_attrs a;
            memset(&a, 0, sizeof a);
            seed = seed * 1103515245u + 12345u;
            for (int k = 0; k < 4; k++)
                a.i[k] = evil[(seed >> (k * 3)) % 8];
            for (int k = 0; k < ST_MAX_DIMS; k++)
                a.dims[k] = evil[(seed >> (k + 5)) % 8];
            int ndims_choice[] = {0, 1, 2, 3, 8, 9, -1, 1000};
            a.ndims = ndims_choice[(seed >> 20) % 8];
            a.flags = (int)(seed >> 9);
            a.dtype = (st_dtype)((int)((seed >> 13) % 10) - 1);
            a.f[0] = (double)(seed % 7) - 3;
            int nin = (int)((seed >> 24) % 5);
            st_meta in[ST_MAX_IN];
            for (int k = 0; k < nin; k++)
                in[k] = pool[(seed >> (k * 2 + 1)) % 4];
            st_err_clear();
            st_status s = st_infer((st_op_id)op, in, nin, &a, outs, &nout);
            if (s == ST_OK) {
                CHECK(nout == 1 && outs[0].ndim >= 0 &&
                      outs[0].ndim <= ST_MAX_DIMS &&
                      (unsigned)outs[0].dtype < ST_NDTYPES,
                      "fuzz %s: sane output", st_op(op)->name);
                for (int dd = 0; dd < outs[0].ndim; dd++)
                    CHECK(outs[0].shape[dd] >= 0, "fuzz %s: size >= 0",
                          st_op(op)->name);
            } else {
                CHECK(st_err_kind() == s && st_err_msg()[0], "fuzz %s: error "
                      "set", st_op(op)->name);
                crashes_avoided++;
            }
        }
    }
    CHECK(crashes_avoided > 0, "fuzz produced errors");
}

/* ---- graphs ---- */
static st_graph *small_graph(st_dtype dt, int64_t n, int64_t k, int red_dim,
                             st_op_id last)
{
    st_graph *g = st_ir_graph_new();
    st_meta x = T(dt, 2, 3), y = T(dt, 2, 1), w = T(dt, 3, 4);
    x.shape[0] = n;
    y.shape[0] = n;
    w.shape[1] = k;
    int v0 = st_ir_add_input(g, &x, false);
    int v1 = st_ir_add_input(g, &y, false);
    int p0 = st_ir_add_input(g, &w, true);
    int out[ST_MAX_OUT];
    int ins[2] = {v0, p0};
    st_ir_add_stmt(g, ST_OP_MATMUL, ins, 2, NULL, out);
    int mm = out[0];
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.dims[0] = red_dim;
    a.ndims = 1;
    a.flags = ST_ATTR_KEEPDIM;
    st_ir_add_stmt(g, ST_OP_SUM, &mm, 1, &a, out);
    int s = out[0];
    int c = st_ir_add_const(g, ST_FLOAT64, 2.0, 0);
    ins[0] = s;
    ins[1] = c;
    st_ir_add_stmt(g, ST_OP_ADD, ins, 2, NULL, out);
    ins[0] = out[0];
    ins[1] = v1;
    st_ir_add_stmt(g, last, ins, 2, NULL, out);
    st_ir_mark_output(g, out[0]);
    return g;
}

static void test_graph(void)
{
    st_graph *g = small_graph(ST_FLOAT32, 2, 4, 1, ST_OP_MUL);
    CHECK(g && g->nstmts == 4 && g->ninputs == 3 && g->noutputs == 1,
          "graph built (%s)", st_err_msg());
    CHECK(st_ir_verify(g) == ST_OK, "verify ok: %s", st_err_msg());
    const st_meta *o = &g->values[g->outputs[0]].meta;
    CHECK(o->dtype == ST_FLOAT32 && o->ndim == 2 && o->shape[0] == 2 &&
          o->shape[1] == 1, "output meta");
    char buf[32];
    CHECK(strcmp(st_ir_value_name(g, 2, buf, sizeof buf), "param_0") == 0,
          "value name param_0");
    /* printer: exact text */
    char *txt = st_ir_print(g);
    char expect[1024];
    snprintf(expect, sizeof expect,
             "StatementIR: SIR_%d\n"
             "  inputs: [var_0, var_1, param_0]\n"
             "  outputs: [var_5]\n"
             "  statements:\n"
             "    var_2 = matmul(var_0, param_0)\n"
             "    var_3 = sum(var_2, dims=[1], keepdim=True)\n"
             "    var_4 = add(var_3, 2.0)\n"
             "    var_5 = mul(var_4, var_1)\n", g->id);
    CHECK(txt && strcmp(txt, expect) == 0, "print text:\n%s\nexpected:\n%s",
          txt ? txt : "(null)", expect);
    free(txt);

    /* add_stmt errors leave the graph unchanged */
    int nv = g->nvalues, ns = g->nstmts;
    int bad[2] = {0, 1};
    st_err_clear();
    CHECK(st_ir_add_stmt(g, ST_OP_MATMUL, bad, 2, NULL, NULL) == -1 &&
          st_err_kind() == ST_ERR_RUNTIME && g->nvalues == nv &&
          g->nstmts == ns, "failing add_stmt leaves graph unchanged (%s)",
          st_err_msg());
    int undef[2] = {0, 999};
    CHECK(st_ir_add_stmt(g, ST_OP_ADD, undef, 2, NULL, NULL) == -1 &&
          st_err_kind() == ST_ERR_VALUE && g->nvalues == nv, "undefined operand");
    CHECK(st_ir_add_stmt(g, (st_op_id)999, bad, 2, NULL, NULL) == -1,
          "bad op id");
    CHECK(st_ir_add_stmt(g, ST_OP_ADD, bad, 9, NULL, NULL) == -1, "nin > max");
    st_meta huge = T(ST_FLOAT32, 2);
    huge.ndim = 20;
    CHECK(st_ir_add_input(g, &huge, false) == -1 &&
          st_err_kind() == ST_ERR_VALUE, "add_input validates meta");
    CHECK(st_ir_add_const(g, (st_dtype)50, 0, 0) == -1, "const bad dtype");

    /* reinfer after input sizes change */
    g->values[0].meta.shape[0] = 7; /* var_0: [7, 3] */
    g->values[1].meta.shape[0] = 7; /* var_1: [7, 1] */
    g->values[2].meta.shape[1] = 9; /* param_0: [3, 9] */
    CHECK(st_ir_verify(g) != ST_OK, "verify notices stale metas");
    CHECK(st_ir_reinfer(g) == ST_OK, "reinfer ok: %s", st_err_msg());
    o = &g->values[g->outputs[0]].meta;
    CHECK(o->ndim == 2 && o->shape[0] == 7 && o->shape[1] == 1 &&
          g->values[3].meta.shape[1] == 9, "reinferred shapes");
    CHECK(st_ir_verify(g) == ST_OK, "verify after reinfer: %s", st_err_msg());
    g->values[1].meta.shape[0] = 5; /* var_1 no longer broadcasts */
    st_err_clear();
    CHECK(st_ir_reinfer(g) == ST_ERR_RUNTIME &&
          strstr(st_err_msg(), "mul: the size of tensor a (7)"),
          "reinfer error propagates: %s", st_err_msg());
    g->values[1].meta.shape[0] = 7;
    CHECK(st_ir_reinfer(g) == ST_OK, "reinfer recovers");

    /* verify catches corrupt wiring */
    int saved = g->stmts[1].in[0];
    g->stmts[1].in[0] = g->stmts[2].out[0]; /* use before definition */
    CHECK(st_ir_verify(g) == ST_ERR_VALUE, "verify: use before def");
    g->stmts[1].in[0] = 12345;
    CHECK(st_ir_verify(g) == ST_ERR_VALUE, "verify: undefined operand");
    g->stmts[1].in[0] = saved;
    g->stmts[1].nin = 3;
    CHECK(st_ir_verify(g) == ST_ERR_VALUE, "verify: operand count");
    g->stmts[1].nin = 1;
    g->values[g->stmts[1].out[0]].meta.dtype = ST_FLOAT64;
    CHECK(st_ir_verify(g) == ST_ERR_VALUE, "verify: stored meta mismatch");
    g->values[g->stmts[1].out[0]].meta.dtype = ST_FLOAT32;
    CHECK(st_ir_verify(g) == ST_OK, "verify restored");
    st_ir_graph_free(g);

    /* multiple results and consts of every kind print inline */
    g = st_ir_graph_new();
    st_meta m = T(ST_INT32, 3);
    int v = st_ir_add_input(g, &m, false);
    int cb = st_ir_add_const(g, ST_BOOL, 0, 1);
    int ci = st_ir_add_const(g, ST_INT64, 0, -7);
    int cf = st_ir_add_const(g, ST_FLOAT64, 1e-5, 0);
    CHECK(g->values[cf].meta.kind == ST_META_SCALAR &&
          g->values[cf].meta.ndim == 0 && g->values[cf].kind == ST_VAL_CONST,
          "const value meta");
    int ins[3] = {v, ci, 0};
    int r[ST_MAX_OUT];
    st_ir_add_stmt(g, ST_OP_ADD, ins, 2, NULL, r);
    ins[0] = r[0];
    ins[1] = cf;
    st_ir_add_stmt(g, ST_OP_MUL, ins, 2, NULL, r);
    CHECK(g->values[r[0]].meta.dtype == ST_FLOAT32, "int32 * 1e-05 -> float32");
    ins[0] = r[0];
    ins[1] = cb;
    st_ir_add_stmt(g, ST_OP_EQ, ins, 2, NULL, r);
    st_attrs ca;
    memset(&ca, 0, sizeof ca);
    ca.dtype = ST_FLOAT16;
    st_ir_add_stmt(g, ST_OP_CAST, &v, 1, &ca, r);
    st_ir_mark_output(g, r[0]);
    txt = st_ir_print(g);
    snprintf(expect, sizeof expect,
             "StatementIR: SIR_%d\n"
             "  inputs: [var_0]\n"
             "  outputs: [var_4]\n"
             "  statements:\n"
             "    var_1 = add(var_0, -7)\n"
             "    var_2 = mul(var_1, 1e-05)\n"
             "    var_3 = eq(var_2, True)\n"
             "    var_4 = cast(var_0, dtype=float16)\n", g->id);
    CHECK(txt && strcmp(txt, expect) == 0, "print consts:\n%s\nexpected:\n%s",
          txt ? txt : "(null)", expect);
    free(txt);
    /* a statement with several results prints "a, b = op(...)" */
    if (g->nstmts > 0) {
        st_stmt *s = &g->stmts[g->nstmts - 1];
        int extra = g->nvalues;
        st_value copy = g->values[s->out[0]];
        g->values = realloc(g->values, sizeof(st_value) * (size_t)(extra + 1));
        g->cap_values = extra + 1;
        g->values[extra] = copy;
        g->values[extra].name_index = g->next_var++;
        g->nvalues++;
        s->out[1] = extra;
        s->nout = 2;
        txt = st_ir_print(g);
        CHECK(txt && strstr(txt, "    var_4, var_5 = cast(var_0, dtype=float16)\n"),
              "multi-result print: %s", txt ? txt : "(null)");
        free(txt);
    }
    st_ir_graph_free(g);

    char b[64];
    extern char *st_ir_fmt_double(double, char *, size_t);
    static const struct { double v; const char *s; } fd[] = {
        {2.0, "2.0"}, {0.1, "0.1"}, {1e-5, "1e-05"}, {1e16, "1e+16"},
        {1234567.0, "1234567.0"}, {-0.5, "-0.5"}, {1.0 / 3, "0.3333333333333333"},
        {0.0001, "0.0001"}, {123.456, "123.456"}, {1e22, "1e+22"},
        {-0.0, "-0.0"}, {INFINITY, "inf"}, {1.5e-7, "1.5e-07"}};
    for (size_t k = 0; k < sizeof fd / sizeof fd[0]; k++)
        CHECK(strcmp(st_ir_fmt_double(fd[k].v, b, sizeof b), fd[k].s) == 0,
              "repr(%g) = %s, want %s", fd[k].v, b, fd[k].s);
    CHECK(g != NULL, "graph ids");
    st_graph *g1 = st_ir_graph_new(), *g2 = st_ir_graph_new();
    CHECK(g2->id == g1->id + 1, "SIR ids count up");
    st_ir_graph_free(g1);
    st_ir_graph_free(g2);
}

static void test_hash(void)
{
    st_graph *a = small_graph(ST_FLOAT32, 2, 4, 1, ST_OP_MUL);
    st_graph *b = small_graph(ST_FLOAT32, 2, 4, 1, ST_OP_MUL);
    st_graph *sz = small_graph(ST_FLOAT32, 8, 16, 1, ST_OP_MUL);
    st_graph *op = small_graph(ST_FLOAT32, 2, 4, 1, ST_OP_ADD);
    st_graph *at = small_graph(ST_FLOAT32, 2, 4, 0, ST_OP_MUL);
    st_graph *dt = small_graph(ST_FLOAT64, 2, 4, 1, ST_OP_MUL);
    uint64_t ha = st_ir_hash(a, true), ha0 = st_ir_hash(a, false);
    CHECK(ha == st_ir_hash(b, true) && ha0 == st_ir_hash(b, false),
          "equal graphs hash equal (ids differ: %d vs %d)", a->id, b->id);
    CHECK(ha0 == st_ir_hash(sz, false), "sizes ignored without with_sizes");
    CHECK(ha != st_ir_hash(sz, true), "sizes count with with_sizes");
    CHECK(ha != st_ir_hash(op, true) && ha0 != st_ir_hash(op, false),
          "op change changes hash");
    CHECK(ha0 != st_ir_hash(at, false), "attr change changes hash");
    CHECK(ha0 != st_ir_hash(dt, false), "dtype change changes hash");
    /* const value */
    a->values[5].fconst = 3.0; /* the 2.0 constant */
    CHECK(a->values[5].kind == ST_VAL_CONST && ha0 != st_ir_hash(a, false),
          "const value changes hash");
    a->values[5].fconst = 2.0;
    CHECK(ha0 == st_ir_hash(a, false), "hash restored");
    /* rank changes even without sizes */
    st_graph *r = st_ir_graph_new(), *r2 = st_ir_graph_new();
    st_meta m1 = T(ST_FLOAT32, 4), m2 = T(ST_FLOAT32, 4, 1);
    int v = st_ir_add_input(r, &m1, false);
    st_ir_add_stmt(r, ST_OP_EXP, &v, 1, NULL, NULL);
    v = st_ir_add_input(r2, &m2, false);
    st_ir_add_stmt(r2, ST_OP_EXP, &v, 1, NULL, NULL);
    CHECK(st_ir_hash(r, false) != st_ir_hash(r2, false), "rank in hash");
    st_ir_graph_free(r);
    st_ir_graph_free(r2);
    st_ir_graph_free(a);
    st_ir_graph_free(b);
    st_ir_graph_free(sz);
    st_ir_graph_free(op);
    st_ir_graph_free(at);
    st_ir_graph_free(dt);
}

int main(void)
{
    RUN_TEST(test_dtypes());
    RUN_TEST(test_half());
    RUN_TEST(test_broadcast_wrap());
    RUN_TEST(test_unary_binary());
    RUN_TEST(test_reduce());
    RUN_TEST(test_matmul());
    RUN_TEST(test_index_create_view());
    RUN_TEST(test_composite());
    RUN_TEST(test_registry_fuzz());
    RUN_TEST(test_graph());
    RUN_TEST(test_hash());
    return st_test_exit_code("test_ir");
}
