/* frontend/tensor_type.c - (to be written) */
