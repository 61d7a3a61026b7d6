/* frontend/module.c - (to be written) */
