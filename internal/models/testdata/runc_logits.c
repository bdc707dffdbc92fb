// runc_logits.c: llama2.c's run.c (included, without its main) as a
// greedy decoder that writes each step's token and logits:
//
//	runc_logits checkpoint steps out
//
// feeds BOS (1) at position 0 and then each step's argmax, as run.c's
// generate does at temperature 0, and writes to out, per step, the input
// token (int32) and the vocab_size float32 logits of that forward pass.
// Used by TestChunkedLlamaMatchesRunC (llama_chunk_test.go).
#define TESTING
#include "run.c"

int main(int argc, char *argv[]) {
    if (argc != 4) {
        fprintf(stderr, "usage: runc_logits checkpoint steps out\n");
        return 1;
    }
    Transformer t;
    build_transformer(&t, argv[1]);
    int steps = atoi(argv[2]);
    FILE *out = fopen(argv[3], "wb");
    if (!out) {
        fprintf(stderr, "cannot open %s\n", argv[3]);
        return 1;
    }
    int vocab = t.config.vocab_size;
    int token = 1;
    for (int pos = 0; pos < steps; pos++) {
        float *logits = forward(&t, token, pos);
        fwrite(&token, sizeof(int), 1, out);
        fwrite(logits, sizeof(float), vocab, out);
        token = sample_argmax(logits, vocab);
    }
    fclose(out);
    free_transformer(&t);
    return 0;
}
