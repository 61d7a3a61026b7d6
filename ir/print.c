/* ir/print.c - (to be written) */
