/* runtime/device_cpu.c - (to be written) */
