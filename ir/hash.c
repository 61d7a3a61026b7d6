/* ir/hash.c - (to be written) */
