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
#define LD0(a) (((a) - lb0) < ls0 && ((a) - lb0) >= 0 ? L0[(a) - lb0] : heap[a])

__kernel void serial1(COMMON) {
    if (get_global_id(0) != 0) return;
    long t2 = ALLOC(0, 1);
    heap[t2] = 40L;
    slots[1] = t2;
}

__kernel void iota3(COMMON, const long n, const long out) {
    long i = get_global_id(0);
    if (i == 0) { heap[out] = n; slots[2] = out; }
    if (i >= n) return;
    long cell = ALLOC(0, 1);
    heap[cell] = i;
    heap[out + 1 + i] = cell;
}

__kernel void map4(COMMON, const long n, const long out) {
    long i = get_global_id(0);
    if (i == 0) { heap[out] = n; slots[3] = out; }
    __local long L0[4096];
    long lb0 = bases[0];
    int ls0 = min(aps[0], 4096);
    for (int w = get_local_id(0); w < ls0; w += get_local_size(0)) L0[w] = heap[lb0 + w];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i >= n) return;
    long x = LD0(slots[2] + 1 + i);
    long t5 = slots[0];
    long t6 = ALLOC(0, 1);
    heap[t6] = 3L;
    long t7 = LD0(x);
    long t8 = LD0(t6);
    long t9 = ALLOC(0, 1);
    heap[t9] = t7 * t8;
    long t10 = LD0(t9);
    if (t10 < 0 || t10 >= LD0(t5)) { atomic_or(err, 4); t10 = 0; }
    long t11 = LD0(t5 + 1 + t10);
    long t12 = ALLOC(1, 1);
    heap[t12] = 1L;
    long t13 = LD0(t11);
    long t14 = heap[t12];
    long t15 = ALLOC(1, 1);
    heap[t15] = t13 + t14;
    heap[out + 1 + i] = t15;
}
