/* llvm_info.c - what the LLVM backend knows of its LLVM (version); the
 * kernel IR -> LLVM IR -> ORC JIT backend itself lands with the fusion issue. */
#include <llvm-c/Core.h>
#include <stdio.h>

const char *st_llvm_version(void);

__attribute__((visibility("default"))) const char *st_llvm_version(void) {
    static char buf[32];
    unsigned maj = 0, min = 0, pat = 0;
    LLVMGetVersion(&maj, &min, &pat);
    snprintf(buf, sizeof buf, "%u.%u.%u", maj, min, pat);
    return buf;
}
