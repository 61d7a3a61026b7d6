/* runtime/exec.c - (to be written) */
