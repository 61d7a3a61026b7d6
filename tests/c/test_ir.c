/* test_ir */
int main(void) { return 0; }
