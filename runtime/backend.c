/* runtime/backend.c - (to be written) */
