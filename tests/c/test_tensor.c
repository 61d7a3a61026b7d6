/* test_tensor */
int main(void) { return 0; }
