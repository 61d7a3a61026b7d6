/* fusion/decompose.c - (to be written) */
