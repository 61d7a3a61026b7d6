/* frontend/ops_bind.c - (to be written) */
