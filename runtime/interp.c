/* runtime/interp.c - (to be written) */
