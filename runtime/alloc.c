/* runtime/alloc.c - (to be written) */
