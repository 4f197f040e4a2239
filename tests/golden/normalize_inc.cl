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
    if (i == 0) { heap[out] = n; slots[1] = out; }
    if (i >= n) return;
    long x = heap[slots[0] + 1 + i];
    long t2 = ALLOC(0, 1);
    heap[t2] = as_long((0x1.0000000000000p+0));
    double t3 = as_double(heap[x]);
    double t4 = as_double(heap[t2]);
    long t5 = ALLOC(0, 1);
    heap[t5] = as_long(t3 + t4);
    heap[out + 1 + i] = t5;
}

__kernel void serial6(COMMON) {
    if (get_global_id(0) != 0) return;
    long t7 = ALLOC(0, 1);
    heap[t7] = as_long((0x0.0p+0));
    slots[2] = t7;
}

__kernel void level8(COMMON, const long len, const long cur, const long out, const int last) {
    long i = get_global_id(0);
    long m = len / 2;
    if (i == 0) { heap[out] = (len + 1) / 2; if (len % 2) heap[out + 1 + m] = heap[cur + len]; }
    if (i >= m) return;
    long p = ALLOC(0, 2);
    heap[p] = heap[cur + 1 + 2 * i]; heap[p + 1] = heap[cur + 2 + 2 * i];
    long t9 = heap[p];
    long t10 = heap[p + 1];
    double t11 = as_double(heap[t9]);
    double t12 = as_double(heap[t10]);
    long t13 = ALLOC(0, 1);
    heap[t13] = as_long(t11 + t12);
    heap[out + 1 + i] = t13;
    if (last) slots[3] = t13;
}

__kernel void map14(COMMON, const long n, const long out) {
    long i = get_global_id(0);
    if (i == 0) { heap[out] = n; slots[4] = out; }
    if (i >= n) return;
    long x = heap[slots[1] + 1 + i];
    long t15 = slots[3];
    double t16 = as_double(heap[x]);
    double t17 = as_double(heap[t15]);
    long t18 = ALLOC(0, 1);
    heap[t18] = as_long(t16 / t17);
    heap[out + 1 + i] = t18;
}
