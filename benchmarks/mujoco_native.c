/* Native MuJoCo peer for the jaxgjk benchmarks: mj_geomDistance over a list of geom pairs in a
 * tight single-threaded C loop, timed with clock_gettime.
 *
 * Built and run by benchmarks/peers.py (run_mujoco_native), which writes the two input files and
 * reads the output file:
 *
 *   mujoco_native MODEL.mjb INPUT.bin OUTPUT.bin
 *
 * MODEL.mjb   a compiled MuJoCo model (mj_saveModel) holding the geoms.
 * INPUT.bin   native-endian, packed in this order:
 *               int64  header[6] = {MAGIC, ngeom, npair, warmup, repeats, want_fromto}
 *               double distmax
 *               double geom_xpos[ngeom][3]   world positions of the geoms
 *               double geom_xmat[ngeom][9]   world rotation matrices, row-major (MuJoCo's layout)
 *               int32  geom1[npair], geom2[npair]
 * OUTPUT.bin  double dist[npair]                     of the last pass
 *             double fromto[npair][6]                only if want_fromto
 *             double wall_seconds[repeats]           CLOCK_MONOTONIC, one full pass over the pairs
 *             double cpu_seconds[repeats]            CLOCK_PROCESS_CPUTIME_ID, same passes
 *
 * A pass calls mj_geomDistance(m, d, geom1[i], geom2[i], distmax, fromto_i) for i = 0..npair-1
 * and stores the result; `warmup` untimed passes come first, then `repeats` timed ones.  The poses
 * are copied into mjData once, before any pass (mj_kinematics is not called: it would overwrite
 * them), exactly as the Python-loop runner does.  Exit status 0 on success, 2 on bad input.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mujoco/mujoco.h>

#define MAGIC 0x6a67626e6174766eLL /* "jgbnatvn" */

_Static_assert(sizeof(mjtNum) == sizeof(double), "MuJoCo built with single precision");

static int fail(const char* msg) {
  fprintf(stderr, "mujoco_native: %s\n", msg);
  return 2;
}

static double seconds(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int read_exact(FILE* f, void* buf, size_t size, size_t count) {
  return fread(buf, size, count, f) == count;
}

/* One pass over the pairs; fromto may be NULL. */
static void pass(const mjModel* m, mjData* d, int64_t npair, const int32_t* geom1,
                 const int32_t* geom2, mjtNum distmax, double* dist, double* fromto) {
  if (fromto) {
    for (int64_t i = 0; i < npair; i++) {
      dist[i] = mj_geomDistance(m, d, geom1[i], geom2[i], distmax, fromto + 6 * i);
    }
  } else {
    for (int64_t i = 0; i < npair; i++) {
      dist[i] = mj_geomDistance(m, d, geom1[i], geom2[i], distmax, NULL);
    }
  }
}

int main(int argc, char** argv) {
  if (argc != 4) {
    return fail("usage: mujoco_native MODEL.mjb INPUT.bin OUTPUT.bin");
  }
  if (mj_version() != mjVERSION_HEADER) {
    return fail("libmujoco version differs from the headers it was compiled with");
  }
  mjModel* m = mj_loadModel(argv[1], NULL);
  if (!m) {
    return fail("could not load the model");
  }
  FILE* in = fopen(argv[2], "rb");
  if (!in) {
    return fail("could not open the input file");
  }
  int64_t header[6];
  double distmax;
  if (!read_exact(in, header, sizeof(int64_t), 6) || !read_exact(in, &distmax, sizeof(double), 1)) {
    return fail("input file too short (header)");
  }
  int64_t ngeom = header[1], npair = header[2], warmup = header[3], repeats = header[4];
  int want_fromto = header[5] != 0;
  if (header[0] != MAGIC || ngeom != (int64_t)m->ngeom || npair < 1 || warmup < 0 || repeats < 1) {
    return fail("bad header (magic, ngeom != model's, npair < 1, warmup < 0 or repeats < 1)");
  }

  mjData* d = mj_makeData(m);
  if (!d) {
    return fail("could not allocate mjData");
  }
  int32_t* geom1 = malloc(sizeof(int32_t) * npair);
  int32_t* geom2 = malloc(sizeof(int32_t) * npair);
  double* dist = malloc(sizeof(double) * npair);
  double* fromto = want_fromto ? malloc(sizeof(double) * 6 * npair) : NULL;
  double* wall = malloc(sizeof(double) * repeats);
  double* cpu = malloc(sizeof(double) * repeats);
  if (!geom1 || !geom2 || !dist || (want_fromto && !fromto) || !wall || !cpu) {
    return fail("out of memory");
  }
  if (!read_exact(in, d->geom_xpos, sizeof(mjtNum), 3 * ngeom)
      || !read_exact(in, d->geom_xmat, sizeof(mjtNum), 9 * ngeom)
      || !read_exact(in, geom1, sizeof(int32_t), npair)
      || !read_exact(in, geom2, sizeof(int32_t), npair)) {
    return fail("input file too short (poses or pairs)");
  }
  fclose(in);
  for (int64_t i = 0; i < npair; i++) {
    if (geom1[i] < 0 || geom1[i] >= ngeom || geom2[i] < 0 || geom2[i] >= ngeom) {
      return fail("geom index out of range");
    }
  }

  for (int64_t r = 0; r < warmup; r++) {
    pass(m, d, npair, geom1, geom2, distmax, dist, fromto);
  }
  for (int64_t r = 0; r < repeats; r++) {
    double c0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
    double t0 = seconds(CLOCK_MONOTONIC);
    pass(m, d, npair, geom1, geom2, distmax, dist, fromto);
    wall[r] = seconds(CLOCK_MONOTONIC) - t0;
    cpu[r] = seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
  }

  FILE* out = fopen(argv[3], "wb");
  if (!out) {
    return fail("could not open the output file");
  }
  int ok = fwrite(dist, sizeof(double), npair, out) == (size_t)npair;
  if (want_fromto) {
    ok = ok && fwrite(fromto, sizeof(double), 6 * npair, out) == (size_t)(6 * npair);
  }
  ok = ok && fwrite(wall, sizeof(double), repeats, out) == (size_t)repeats;
  ok = ok && fwrite(cpu, sizeof(double), repeats, out) == (size_t)repeats;
  if (fclose(out) != 0 || !ok) {
    return fail("could not write the output file");
  }
  free(geom1);
  free(geom2);
  free(dist);
  free(fromto);
  free(wall);
  free(cpu);
  mj_deleteData(d);
  mj_deleteModel(m);
  return 0;
}
