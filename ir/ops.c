/* ir/ops.c - (to be written) */
