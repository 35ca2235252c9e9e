/*
 * The smallest bytecode interpreter that still looks like QuickJS's: a value stack, locals,
 * one byte per opcode, and a dispatch per opcode. It runs `for (i = 0; i < n; i++) s += i`
 * (9 opcodes per iteration) in three dispatch shapes, so that the cost of the dispatch alone
 * can be measured natively and under wasmtime:
 *
 *   -DGOTO    computed goto (`goto *table[op]`): what QuickJS does natively;
 *   -DSWITCH  one `switch` in a loop: what wasm gets (clang turns it into one `br_table`);
 *   -DTAIL    one function per opcode, each tail-calling the next (`musttail`; in wasm,
 *             `return_call_indirect` through the function table).
 *
 * Native:  cc -O2 -DMAIN -DGOTO vm.c -o vm && ./vm
 * Wasm:    clang-16 --target=wasm32 -mtail-call -O2 -nostdlib -Wl,--no-entry -DSWITCH \
 *              vm.c -o switch.wasm
 *          clang-16 --target=wasm32 -mtail-call -O2 -nostdlib -Wl,--no-entry -DTAIL \
 *              vm.c -o tail.wasm
 *          cargo run --release -p codemode-runtime --example dispatch -- switch.wasm tail.wasm
 *
 * README.md beside this file has the toolchain and the modules' checksums; docs/PERFORMANCE.md
 * ("The engine's floor") has the figures.
 */
#include <stdint.h>

#ifdef __wasm__
#define EXPORT __attribute__((export_name("run")))
/* `Frame f = {0}` becomes a memset call; there is no libc in this module. */
void *memset(void *dst, int c, unsigned long n) {
    unsigned char *p = dst;
    while (n--)
        *p++ = (unsigned char)c;
    return dst;
}
#else
#define EXPORT
#endif

typedef int64_t V;
enum {
    OP_GETLOC, OP_PUTLOC, OP_PUSHI, OP_ADD, OP_LT, OP_IFFALSE, OP_GOTO, OP_INCLOC, OP_RET,
    OP_SUB, OP_DUP, OP_DROP, NOPS
};
typedef struct {
    V loc[8];
    V stack[64];
} Frame;

#define OFFSET16(pc) ((int16_t)((pc)[1] | (pc)[2] << 8))

#ifdef TAIL
typedef V (*Handler)(const uint8_t *pc, V *sp, Frame *f);
extern const Handler handlers[NOPS];
#define NEXT() __attribute__((musttail)) return handlers[*pc](pc, sp, f)
#define HANDLER(name) static V name(const uint8_t *pc, V *sp, Frame *f)
HANDLER(h_getloc) { *sp++ = f->loc[pc[1]]; pc += 2; NEXT(); }
HANDLER(h_putloc) { f->loc[pc[1]] = *--sp; pc += 2; NEXT(); }
HANDLER(h_pushi) { *sp++ = (int8_t)pc[1]; pc += 2; NEXT(); }
HANDLER(h_add) { V b = *--sp; sp[-1] += b; pc++; NEXT(); }
HANDLER(h_sub) { V b = *--sp; sp[-1] -= b; pc++; NEXT(); }
HANDLER(h_lt) { V b = *--sp; sp[-1] = sp[-1] < b; pc++; NEXT(); }
HANDLER(h_iffalse) { V c = *--sp; pc += c ? 3 : OFFSET16(pc); NEXT(); }
HANDLER(h_goto) { pc += OFFSET16(pc); NEXT(); }
HANDLER(h_incloc) { f->loc[pc[1]]++; pc += 2; NEXT(); }
HANDLER(h_dup) { sp[0] = sp[-1]; sp++; pc++; NEXT(); }
HANDLER(h_drop) { sp--; pc++; NEXT(); }
HANDLER(h_ret) { (void)pc; (void)f; return sp[-1]; }
const Handler handlers[NOPS] = {
    h_getloc, h_putloc, h_pushi, h_add, h_lt, h_iffalse, h_goto, h_incloc, h_ret,
    h_sub, h_dup, h_drop,
};
static V interpret(const uint8_t *pc, Frame *f) { return handlers[*pc](pc, f->stack, f); }
#else
static V interpret(const uint8_t *pc, Frame *f) {
    V *sp = f->stack;
#ifdef GOTO
    static const void *const dispatch[NOPS] = {
        &&L_GETLOC, &&L_PUTLOC, &&L_PUSHI, &&L_ADD, &&L_LT, &&L_IFFALSE, &&L_GOTO,
        &&L_INCLOC, &&L_RET, &&L_SUB, &&L_DUP, &&L_DROP,
    };
#define DISPATCH goto *dispatch[*pc];
#define CASE(x) L_##x
#define BREAK DISPATCH
#else
#define DISPATCH switch (*pc)
#define CASE(x) case OP_##x
#define BREAK break
#endif
    for (;;) {
        DISPATCH {
        CASE(GETLOC): *sp++ = f->loc[pc[1]]; pc += 2; BREAK;
        CASE(PUTLOC): f->loc[pc[1]] = *--sp; pc += 2; BREAK;
        CASE(PUSHI): *sp++ = (int8_t)pc[1]; pc += 2; BREAK;
        CASE(ADD): { V b = *--sp; sp[-1] += b; pc++; BREAK; }
        CASE(SUB): { V b = *--sp; sp[-1] -= b; pc++; BREAK; }
        CASE(LT): { V b = *--sp; sp[-1] = sp[-1] < b; pc++; BREAK; }
        CASE(IFFALSE): { V c = *--sp; pc += c ? 3 : OFFSET16(pc); BREAK; }
        CASE(GOTO): pc += OFFSET16(pc); BREAK;
        CASE(INCLOC): f->loc[pc[1]]++; pc += 2; BREAK;
        CASE(DUP): sp[0] = sp[-1]; sp++; pc++; BREAK;
        CASE(DROP): sp--; pc++; BREAK;
        CASE(RET): return sp[-1];
        }
    }
}
#endif

/* s = loc0, i = loc1, n = loc2:
 *  0: if (!(i < n)) goto 20;  8: s = s + i;  15: i++;  17: goto 0;  20: return s */
static const uint8_t code[] = {
    OP_GETLOC, 1, OP_GETLOC, 2, OP_LT, OP_IFFALSE, 15, 0,
    OP_GETLOC, 0, OP_GETLOC, 1, OP_ADD, OP_PUTLOC, 0,
    OP_INCLOC, 1, OP_GOTO, 0xef, 0xff,
    OP_GETLOC, 0, OP_RET,
};

EXPORT int64_t run(int64_t n) {
    Frame f = {0};
    f.loc[2] = n;
    return interpret(code, &f);
}

#ifdef MAIN
#include <stdio.h>
#include <time.h>
int main(void) {
    for (int round = 0; round < 3; round++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        V r = run(100000000);
        clock_gettime(CLOCK_MONOTONIC, &b);
        printf("%lld in %.1f ms\n", (long long)r,
               (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
    }
    return 0;
}
#endif
