/* frontend/dtype_type.c - (to be written) */
