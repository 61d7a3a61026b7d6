/* ir/error.c - (to be written) */
