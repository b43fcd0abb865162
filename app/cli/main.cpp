// plab: the headless command-line front end of Precision Lab.
int main() { return 0; }
