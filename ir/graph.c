/* ir/graph.c - (to be written) */
