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

__kernel void serial1(COMMON) {
    if (get_global_id(0) != 0) return;
    long t2 = ALLOC(0, 1);
    heap[t2] = 37L;
    slots[2] = t2;
}

__kernel void iota3(COMMON, const long n, const long out) {
    long i = get_global_id(0);
    if (i == 0) { heap[out] = n; slots[3] = out; }
    if (i >= n) return;
    long cell = ALLOC(0, 1);
    heap[cell] = i;
    heap[out + 1 + i] = cell;
}

__kernel void map4(COMMON, const long n, const long out) {
    long i = get_global_id(0);
    if (i == 0) { heap[out] = n; slots[4] = out; }
    if (i >= n) return;
    long x = heap[slots[3] + 1 + i];
    long t5 = slots[0];
    long t6 = heap[x];
    if (t6 < 0 || t6 >= heap[t5]) { atomic_or(err, 4); t6 = 0; }
    long t7 = heap[t5 + 1 + t6];
    long t8 = slots[1];
    long t9 = heap[x];
    if (t9 < 0 || t9 >= heap[t8]) { atomic_or(err, 4); t9 = 0; }
    long t10 = heap[t8 + 1 + t9];
    long t11 = heap[t7];
    long t12 = heap[t10];
    long t13 = ALLOC(0, 1);
    heap[t13] = t11 * t12;
    heap[out + 1 + i] = t13;
}

__kernel void serial14(COMMON) {
    if (get_global_id(0) != 0) return;
    long t15 = ALLOC(0, 1);
    heap[t15] = 0L;
    slots[5] = t15;
}

__kernel void level16(COMMON, const long len, const long cur, const long out, const int last) {
    long i = get_global_id(0);
    long m = len / 2;
    if (i == 0) { heap[out] = (len + 1) / 2; if (len % 2) heap[out + 1 + m] = heap[cur + len]; }
    if (i >= m) return;
    long p = ALLOC(0, 2);
    heap[p] = heap[cur + 1 + 2 * i]; heap[p + 1] = heap[cur + 2 + 2 * i];
    long t17 = heap[p];
    long t18 = heap[p + 1];
    long t19 = heap[t17];
    long t20 = heap[t18];
    long t21 = ALLOC(0, 1);
    heap[t21] = t19 + t20;
    heap[out + 1 + i] = t21;
    if (last) slots[6] = t21;
}
