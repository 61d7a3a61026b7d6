/* runtime/view.c - (to be written) */
