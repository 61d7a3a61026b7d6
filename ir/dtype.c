/* ir/dtype.c - (to be written) */
