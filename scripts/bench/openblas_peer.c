/* OpenBLAS peer for `ragen bench`: best-of GFLOP/s of cblas_sgemm (row-major,
 * C = A·B, fp32) for each shape given as M,N,K arguments, on `threads`
 * OpenBLAS threads, repeating each shape for at least `secs` seconds.
 * Built by the bench with: gcc -O2 openblas_peer.c -lopenblas
 * Output: one line per shape, "M N K GFLOPS". */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void openblas_set_num_threads(int);

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: %s THREADS SECS M,N,K...\n", argv[0]);
		return 2;
	}
	openblas_set_num_threads(atoi(argv[1]));
	double secs = atof(argv[2]);
	for (int i = 3; i < argc; i++) {
		int m, n, k;
		if (sscanf(argv[i], "%d,%d,%d", &m, &n, &k) != 3 || m < 1 || n < 1 || k < 1) {
			fprintf(stderr, "bad shape %s (want M,N,K)\n", argv[i]);
			return 2;
		}
		float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n), *c = malloc(sizeof(float) * m * n);
		for (long j = 0; j < (long)m * k; j++) a[j] = (float)(j % 7) * 0.1f - 0.3f;
		for (long j = 0; j < (long)k * n; j++) b[j] = (float)(j % 5) * 0.1f - 0.2f;
		double best = 1e30, start = now();
		do {
			double t0 = now();
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1, a, k, b, n, 0, c, n);
			double dt = now() - t0;
			if (dt < best) best = dt;
		} while (now() - start < secs);
		printf("%d %d %d %.2f\n", m, n, k, 2.0 * m * n * k / best / 1e9);
		fflush(stdout);
		free(a);
		free(b);
		free(c);
	}
	return 0;
}
