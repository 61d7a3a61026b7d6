/* fusion/lower.c - (to be written) */
