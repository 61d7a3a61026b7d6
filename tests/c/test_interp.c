/* test_interp */
int main(void) { return 0; }
