/* test_eager */
int main(void) { return 0; }
