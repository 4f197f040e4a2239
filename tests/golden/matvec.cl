// offload 0
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

#define COMMON __global long* restrict heap, __global const long* restrict bases, \
    __global const int* restrict caps, __global int* restrict aps, __global int* restrict err, \
    __global long* restrict slots

/* Bump allocation in region r (Fig. 3): an atomic add on its allocation pointer. A region that
   fills up sets err bit 1: regions cannot grow on the GPU (NoExpandWE, Fig. 9). */
inline long hp_alloc(__global const long* bases, __global const int* caps, __global int* aps,
                     __global int* err, int r, int words) {
    int offset = atomic_add(&aps[r], words);
    if (offset + words > caps[r]) { atomic_or(err, 1); return bases[r]; }
    return bases[r] + offset;
}
#define ALLOC(r, words) hp_alloc(bases, caps, aps, err, (r), (words))

__kernel void map1(COMMON, const long n, const long out) {
    long i = get_global_id(0);
    if (i == 0) { heap[out] = n; slots[2] = out; }
    if (i >= n) return;
    long x = heap[slots[0] + 1 + i];
    long t2 = ALLOC(0, 1);
    heap[t2] = 0L;
    long t3 = ALLOC(0, 1);
    heap[t3] = 6L;
    long t4 = heap[t3];
    long t5 = ALLOC(0, (int)(t4 + 1));
    heap[t5] = t4;
    for (long t6 = 0; t6 < t4; t6++) {
        long cell = ALLOC(0, 1); heap[cell] = t6; heap[t5 + 1 + t6] = cell;
    }
    long t7 = heap[t5];
    long t8 = ALLOC(0, (int)(t7 + 1));
    heap[t8] = t7;
    for (long t9 = 0; t9 < t7; t9++) {
        long t10 = heap[t5 + 1 + t9];
        long t11 = heap[t10];
        if (t11 < 0 || t11 >= heap[x]) { atomic_or(err, 4); t11 = 0; }
        long t12 = heap[x + 1 + t11];
        long t13 = slots[1];
        long t14 = heap[t10];
        if (t14 < 0 || t14 >= heap[t13]) { atomic_or(err, 4); t14 = 0; }
        long t15 = heap[t13 + 1 + t14];
        long t16 = heap[t12];
        long t17 = heap[t15];
        long t18 = ALLOC(0, 1);
        heap[t18] = t16 * t17;
        heap[t8 + 1 + t9] = t18;
    }
    long t19 = t2;
    long t20 = t8; long t21 = heap[t8];
    if (t21 > 0) {
        while (t21 > 1) {
            long t22 = t21 / 2;
            long t23 = ALLOC(0, (int)((t21 + 1) / 2 + 1));
            heap[t23] = (t21 + 1) / 2;
            for (long t24 = 0; t24 < t22; t24++) {
                long t25 = ALLOC(0, 2);
                heap[t25] = heap[t20 + 1 + 2 * t24]; heap[t25 + 1] = heap[t20 + 2 + 2 * t24];
                long t26 = heap[t25];
                long t27 = heap[t25 + 1];
                long t28 = heap[t26];
                long t29 = heap[t27];
                long t30 = ALLOC(0, 1);
                heap[t30] = t28 + t29;
                heap[t23 + 1 + t24] = t30;
            }
            if (t21 % 2) heap[t23 + 1 + t22] = heap[t20 + t21];
            t20 = t23; t21 = (t21 + 1) / 2;
        }
        t19 = heap[t20 + 1];
    }
    heap[out + 1 + i] = t19;
}
