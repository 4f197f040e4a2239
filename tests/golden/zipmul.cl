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
    long t2 = heap[x];
    long t3 = heap[x + 1];
    long t4 = heap[t2];
    long t5 = heap[t3];
    long t6 = ALLOC(0, 1);
    heap[t6] = t4 * t5;
    heap[out + 1 + i] = t6;
}
