/* frontend/indexing.c - (to be written) */
