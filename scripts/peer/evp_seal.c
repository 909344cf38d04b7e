/* The peer of opcost's AEAD rows in scripts/peer-crypto.sh: OpenSSL's EVP
 * sealing one record after another, each under a fresh nonce with its tag
 * taken, as a TLS record is (and as opcost's rows seal). `openssl speed
 * -evp` streams the data through one context instead, without a nonce or a
 * tag per record, which for small records is not the same operation.
 *
 *   evp_seal CIPHER SIZE SECONDS      e.g. evp_seal ChaCha20-Poly1305 64 1
 *
 * Prints the bytes sealed per second (best of five equal slices of
 * SECONDS, as opcost reads the fast end of a rate). */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s CIPHER SIZE SECONDS\n", argv[0]);
        return 2;
    }
    size_t size = strtoull(argv[2], 0, 10);
    double secs = atof(argv[3]);
    EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, argv[1], NULL);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    unsigned char key[32] = {0x5c}, nonce[12] = {0}, tag[16], tail[32];
    unsigned char *buf = calloc(1, size + 64);
    if (!c || !ctx || !buf || !EVP_CipherInit_ex(ctx, c, NULL, key, nonce, 1)) {
        fprintf(stderr, "%s: cannot set up %s\n", argv[0], argv[1]);
        return 1;
    }
    double best = 0;
    unsigned long long n = 0;
    for (int slice = 0; slice < 5; slice++) {
        unsigned long long records = 0;
        double t0 = now(), t;
        do {
            for (int i = 0; i < 64; i++, n++, records++) {
                int outl;
                memcpy(nonce, &n, sizeof n);
                if (!EVP_CipherInit_ex(ctx, NULL, NULL, NULL, nonce, -1) ||
                    !EVP_CipherUpdate(ctx, buf, &outl, buf, (int)size) ||
                    !EVP_CipherFinal_ex(ctx, tail, &outl) ||
                    !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag)) {
                    fprintf(stderr, "%s: sealing failed\n", argv[0]);
                    return 1;
                }
            }
            t = now();
        } while (t - t0 < secs / 5);
        double rate = records * (double)size / (t - t0);
        if (rate > best) best = rate;
    }
    printf("%.0f\n", best);
    return 0;
}
