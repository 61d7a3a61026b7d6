/* runtime/eager.c - (to be written) */
