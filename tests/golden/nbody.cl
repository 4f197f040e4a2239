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
    heap[t2] = 9L;
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
    long t5 = slots[1];
    long t6 = heap[x];
    if (t6 < 0 || t6 >= heap[t5]) { atomic_or(err, 4); t6 = 0; }
    long t7 = heap[t5 + 1 + t6];
    long t8 = ALLOC(0, 1);
    heap[t8] = as_long((0x0.0p+0));
    long t9 = ALLOC(0, 1);
    heap[t9] = 9L;
    long t10 = heap[t9];
    long t11 = ALLOC(0, (int)(t10 + 1));
    heap[t11] = t10;
    for (long t12 = 0; t12 < t10; t12++) {
        long cell = ALLOC(0, 1); heap[cell] = t12; heap[t11 + 1 + t12] = cell;
    }
    long t13 = heap[t11];
    long t14 = ALLOC(0, (int)(t13 + 1));
    heap[t14] = t13;
    for (long t15 = 0; t15 < t13; t15++) {
        long t16 = heap[t11 + 1 + t15];
        long t17 = slots[1];
        long t18 = heap[t16];
        if (t18 < 0 || t18 >= heap[t17]) { atomic_or(err, 4); t18 = 0; }
        long t19 = heap[t17 + 1 + t18];
        double t20 = as_double(heap[t19]);
        double t21 = as_double(heap[t7]);
        long t22 = ALLOC(0, 1);
        heap[t22] = as_long(t20 - t21);
        double t23 = as_double(heap[t22]);
        double t24 = as_double(heap[t22]);
        long t25 = ALLOC(0, 1);
        heap[t25] = as_long(t23 * t24);
        long t26 = slots[0];
        double t27 = as_double(heap[t25]);
        double t28 = as_double(heap[t26]);
        long t29 = ALLOC(0, 1);
        heap[t29] = as_long(t27 + t28);
        double t30 = as_double(heap[t22]);
        double t31 = as_double(heap[t29]);
        long t32 = ALLOC(0, 1);
        heap[t32] = as_long(t30 / t31);
        heap[t14 + 1 + t15] = t32;
    }
    long t33 = t8;
    long t34 = t14; long t35 = heap[t14];
    if (t35 > 0) {
        while (t35 > 1) {
            long t36 = t35 / 2;
            long t37 = ALLOC(0, (int)((t35 + 1) / 2 + 1));
            heap[t37] = (t35 + 1) / 2;
            for (long t38 = 0; t38 < t36; t38++) {
                long t39 = ALLOC(0, 2);
                heap[t39] = heap[t34 + 1 + 2 * t38]; heap[t39 + 1] = heap[t34 + 2 + 2 * t38];
                long t40 = heap[t39];
                long t41 = heap[t39 + 1];
                double t42 = as_double(heap[t40]);
                double t43 = as_double(heap[t41]);
                long t44 = ALLOC(0, 1);
                heap[t44] = as_long(t42 + t43);
                heap[t37 + 1 + t38] = t44;
            }
            if (t35 % 2) heap[t37 + 1 + t36] = heap[t34 + t35];
            t34 = t37; t35 = (t35 + 1) / 2;
        }
        t33 = heap[t34 + 1];
    }
    heap[out + 1 + i] = t33;
}
