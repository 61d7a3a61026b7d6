/* test_alloc */
int main(void) { return 0; }
