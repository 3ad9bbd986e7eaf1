/*
 * seeds.c — writes the fuzzers' seed inputs into DIR: every bad input of
 * tests/test_bad_input.c (without its '@' position marker), each a file. scripts/fuzz
 * adds the examples. Built by scripts/fuzz against the test's own table, so a new bad
 * case becomes a seed without being written twice.
 */
#define main bad_input_main
#include "../test_bad_input.c"
#undef main

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: seeds DIR\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int line, col;
        char *text = strip_marker(cases[i].src, strlen(cases[i].src), &line, &col), path[4096];
        snprintf(path, sizeof path, "%s/bad_%03zu.tile", argv[1], i);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(text, 1, strlen(text), f) != strlen(text) || fclose(f) != 0) {
            fprintf(stderr, "seeds: cannot write %s\n", path);
            return 1;
        }
        free(text);
    }
    return 0;
}
