/* runtime/random.c - (to be written) */
