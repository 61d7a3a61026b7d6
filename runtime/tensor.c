/* runtime/tensor.c - (to be written) */
