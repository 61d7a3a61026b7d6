/* frontend/convert.c - (to be written) */
