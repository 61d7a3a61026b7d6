/* fusion/kernel.c - (to be written) */
