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
    heap[t2] = 6L;
    slots[0] = t2;
}

__kernel void iota3(COMMON, const long n, const long out) {
    long i = get_global_id(0);
    if (i == 0) { heap[out] = n; slots[1] = out; }
    if (i >= n) return;
    long cell = ALLOC(0, 1);
    heap[cell] = i;
    heap[out + 1 + i] = cell;
}

__kernel void map4(COMMON, const long n, const long out) {
    long i = get_global_id(0);
    if (i == 0) { heap[out] = n; slots[2] = out; }
    if (i >= n) return;
    long x = heap[slots[1] + 1 + i];
    long t5 = ALLOC(0, 1);
    heap[t5] = 1L;
    long t6 = heap[x];
    long t7 = heap[t5];
    long t8 = ALLOC(0, 1);
    heap[t8] = t6 + t7;
    long t9 = ALLOC(0, 1);
    heap[t9] = 0L;
    long t10 = ALLOC(0, 2);
    heap[t10] = t8; heap[t10 + 1] = t9;
    long t11 = t10;
    long t12;
    for (;;) {
        long t13 = heap[t11];
        long t14 = ALLOC(0, 1);
        heap[t14] = 1L;
        long t15 = heap[t13];
        long t16 = heap[t14];
        long t17 = (t15 <= t16) ? 1L : 0L;
        if (t17) {
            long t18 = heap[t11 + 1];
            t12 = t18;
            break;
        } else {
            long t19 = ALLOC(0, 1);
            heap[t19] = 2L;
            long t20 = heap[t13];
            long t21 = heap[t19];
            if (t21 == 0) { atomic_or(err, 2); t21 = 1; }
            long t22 = ALLOC(0, 1);
            heap[t22] = t20 / t21;
            long t23 = ALLOC(0, 1);
            heap[t23] = 2L;
            long t24 = heap[t22];
            long t25 = heap[t23];
            long t26 = ALLOC(0, 1);
            heap[t26] = t24 * t25;
            long t27 = heap[t13];
            long t28 = heap[t26];
            long t29 = ALLOC(0, 1);
            heap[t29] = t27 - t28;
            long t30 = ALLOC(0, 1);
            heap[t30] = 0L;
            long t31 = heap[t29];
            long t32 = heap[t30];
            long t33 = (t31 == t32) ? 1L : 0L;
            if (t33) {
                long t34 = ALLOC(0, 1);
                heap[t34] = 2L;
                long t35 = heap[t13];
                long t36 = heap[t34];
                if (t36 == 0) { atomic_or(err, 2); t36 = 1; }
                long t37 = ALLOC(0, 1);
                heap[t37] = t35 / t36;
                long t38 = heap[t11 + 1];
                long t39 = ALLOC(0, 1);
                heap[t39] = 1L;
                long t40 = heap[t38];
                long t41 = heap[t39];
                long t42 = ALLOC(0, 1);
                heap[t42] = t40 + t41;
                long t43 = ALLOC(0, 2);
                heap[t43] = t37; heap[t43 + 1] = t42;
                t11 = t43;
                continue;
            } else {
                long t44 = ALLOC(0, 1);
                heap[t44] = 3L;
                long t45 = heap[t44];
                long t46 = heap[t13];
                long t47 = ALLOC(0, 1);
                heap[t47] = t45 * t46;
                long t48 = ALLOC(0, 1);
                heap[t48] = 1L;
                long t49 = heap[t47];
                long t50 = heap[t48];
                long t51 = ALLOC(0, 1);
                heap[t51] = t49 + t50;
                long t52 = heap[t11 + 1];
                long t53 = ALLOC(0, 1);
                heap[t53] = 1L;
                long t54 = heap[t52];
                long t55 = heap[t53];
                long t56 = ALLOC(0, 1);
                heap[t56] = t54 + t55;
                long t57 = ALLOC(0, 2);
                heap[t57] = t51; heap[t57 + 1] = t56;
                t11 = t57;
                continue;
            }
        }
    }
    heap[out + 1 + i] = t12;
}

__kernel void serial58(COMMON) {
    if (get_global_id(0) != 0) return;
    long t59 = ALLOC(0, 1);
    heap[t59] = 27L;
    long t60 = ALLOC(0, 1);
    heap[t60] = 0L;
    long t61 = ALLOC(0, 2);
    heap[t61] = t59; heap[t61 + 1] = t60;
    long t62 = t61;
    long t63;
    for (;;) {
        long t64 = heap[t62];
        long t65 = ALLOC(0, 1);
        heap[t65] = 1L;
        long t66 = heap[t64];
        long t67 = heap[t65];
        long t68 = (t66 <= t67) ? 1L : 0L;
        if (t68) {
            long t69 = heap[t62 + 1];
            t63 = t69;
            break;
        } else {
            long t70 = ALLOC(0, 1);
            heap[t70] = 2L;
            long t71 = heap[t64];
            long t72 = heap[t70];
            if (t72 == 0) { atomic_or(err, 2); t72 = 1; }
            long t73 = ALLOC(0, 1);
            heap[t73] = t71 / t72;
            long t74 = ALLOC(0, 1);
            heap[t74] = 2L;
            long t75 = heap[t73];
            long t76 = heap[t74];
            long t77 = ALLOC(0, 1);
            heap[t77] = t75 * t76;
            long t78 = heap[t64];
            long t79 = heap[t77];
            long t80 = ALLOC(0, 1);
            heap[t80] = t78 - t79;
            long t81 = ALLOC(0, 1);
            heap[t81] = 0L;
            long t82 = heap[t80];
            long t83 = heap[t81];
            long t84 = (t82 == t83) ? 1L : 0L;
            if (t84) {
                long t85 = ALLOC(0, 1);
                heap[t85] = 2L;
                long t86 = heap[t64];
                long t87 = heap[t85];
                if (t87 == 0) { atomic_or(err, 2); t87 = 1; }
                long t88 = ALLOC(0, 1);
                heap[t88] = t86 / t87;
                long t89 = heap[t62 + 1];
                long t90 = ALLOC(0, 1);
                heap[t90] = 1L;
                long t91 = heap[t89];
                long t92 = heap[t90];
                long t93 = ALLOC(0, 1);
                heap[t93] = t91 + t92;
                long t94 = ALLOC(0, 2);
                heap[t94] = t88; heap[t94 + 1] = t93;
                t62 = t94;
                continue;
            } else {
                long t95 = ALLOC(0, 1);
                heap[t95] = 3L;
                long t96 = heap[t95];
                long t97 = heap[t64];
                long t98 = ALLOC(0, 1);
                heap[t98] = t96 * t97;
                long t99 = ALLOC(0, 1);
                heap[t99] = 1L;
                long t100 = heap[t98];
                long t101 = heap[t99];
                long t102 = ALLOC(0, 1);
                heap[t102] = t100 + t101;
                long t103 = heap[t62 + 1];
                long t104 = ALLOC(0, 1);
                heap[t104] = 1L;
                long t105 = heap[t103];
                long t106 = heap[t104];
                long t107 = ALLOC(0, 1);
                heap[t107] = t105 + t106;
                long t108 = ALLOC(0, 2);
                heap[t108] = t102; heap[t108 + 1] = t107;
                t62 = t108;
                continue;
            }
        }
    }
    long t109 = slots[2];
    long t110 = ALLOC(0, 2);
    heap[t110] = t63; heap[t110 + 1] = t109;
    slots[3] = t110;
}
