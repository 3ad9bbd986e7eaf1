/*
 * test_bad_input.c — every kind of bad `.tile` input, each with the exact message and the
 * exact position of its first error ('@' in a source marks that position). None may crash
 * or leak; the ASan/UBSan run of ./test.sh checks that.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "support.h"

typedef struct bad_case {
    const char *name;
    const char *src;
    const char *message; /* the first diagnostic's message, exactly */
    tilec_status status;
} bad_case;

/* A kernel head and a body with shared copies of A, for cases about statements. */
#define HEAD "kernel k(A: f32[4, 8] global, B: f32[4] global) threads=32 {\n"
#define TILES HEAD "  shared As: f32[4, 8]\n  shared Bs: f32[4]\n  cta.copy(As, A)\n  cta.sync()\n"
#define HEAD128 "kernel k(A: f32[4, 16, 32] global, B: f32[4, 16] global) threads=128 {\n"
#define TILES128 HEAD128 "  shared As: f32[4, 16, 32]\n  shared Bs: f32[4, 16]\n  cta.copy(As, A)\n  cta.sync()\n"
#define MAPK "kernel k(S: f32[4, 8] global, m: f32[4, 1] global, P: f32[4, 8] global, t: i32[4, 8] global) threads=32 {\n"
#define P TILEC_ERR_PARSE
#define V TILEC_ERR_VERIFY

static const bad_case cases[] = {
    /* ---- the file as a whole ---- */
    {"empty file", "@", "empty program: expected 'kernel' or 'func'", P},
    {"only comments", "# nothing here\n@", "empty program: expected 'kernel' or 'func'", P},
    {"binary garbage", "@\x01\x02\xff kernel", "expected 'kernel' or 'func', found byte 0x01", P},
    {"control byte in a comment", "# a note@\x01 that goes on\nkernel", "expected 'kernel' or 'func', found byte 0x01", P},
    {"control byte in a comment in a kernel", HEAD "  # note@\x02\n}", "expected a statement or '}', found byte 0x02", P},
    {"unknown top keyword", "@kernal k(A: f32[4] global) threads=32 {}",
     "unknown keyword 'kernal'; did you mean 'kernel'?", P},
    {"unrelated top word", "@program k", "unknown keyword 'program'; expected 'kernel' or 'func'", P},
    {"unterminated block", HEAD "  shared As: f32[4, 8]\n@",
     "expected '}' to close kernel 'k' opened at line 1, found end of file", P},
    {"missing threads", "kernel k(A: f32[4] global) @{ }", "expected 'threads=', found '{'", P},
    {"number glued to a name", "kernel k(A: f32[@12abc] global) threads=32 {}",
     "expected an integer, found '12abc'", P},
    {"missing comma", TILES "  cta.copy(B, Bs)\n  cta.copy(Bs @B)\n}", "expected ',', found 'B'", P},
    {"empty parameter list", "kernel k(@) threads=32 {}", "expected a parameter name, found ')'", P},
    /* ---- names ---- */
    {"64-character name",
     "kernel k(@aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa: f32[4] global) threads=32 {}",
     "name 'aaaaaaaaaaaaaaaaaaaa...' is 64 characters long; names have at most 63", P},
    {"duplicate buffer name", HEAD "  shared @A: f32[4]\n}",
     "duplicate name 'A': already declared at line 1", P},
    {"duplicate parameter name", "kernel k(A: f32[4] global, @A: f32[4] global) threads=32 {}",
     "duplicate name 'A': already declared at line 1", P},
    {"duplicate kernel name", "kernel k(A: f32[4] global) threads=32 {}\nkernel @k(A: f32[4] global) threads=32 {}",
     "duplicate name 'k': already declared at line 1", P},
    {"unknown buffer", HEAD "  cta.copy(B, @C)\n}",
     "unknown buffer 'C'; declare it as a parameter or with shared/local before this line", P},
    {"misspelt buffer", TILES "  cta.copy(B, @Bss)\n}", "unknown buffer 'Bss'; did you mean 'Bs'?", P},
    {"buffer used before its declaration", HEAD "  cta.copy(@Cs, A)\n  shared Cs: f32[4, 8]\n}",
     "unknown buffer 'Cs'; declare it as a parameter or with shared/local before this line", P},
    {"near miss of a buffer name", HEAD "  cta.copy(@As, A)\n}", "unknown buffer 'As'; did you mean 'A'?", P},
    /* ---- types, spaces, shapes ---- */
    {"unknown dtype", "kernel k(A: @f31[4] global) threads=32 {}", "unknown dtype 'f31'; did you mean 'f32'?", P},
    {"unrelated dtype", "kernel k(A: @float[4] global) threads=32 {}",
     "unknown dtype 'float'; expected f16, bf16, f32, f64, i32, u32 or i64", P},
    {"unknown space", "kernel k(A: f32[4] @globl) threads=32 {}",
     "unknown memory space 'globl'; did you mean 'global'?", P},
    {"zero extent", "kernel k(A: f32[@0, 4] global) threads=32 {}",
     "extent 0 of dimension 0 of 'A' must be at least 1", P},
    {"negative extent", "kernel k(A: f32[4, @-2] global) threads=32 {}",
     "extent -2 of dimension 1 of 'A' must be at least 1", P},
    {"rank 9", "kernel k(A: f32[1, 1, 1, 1, 1, 1, 1, 1, @1] global) threads=32 {}",
     "'A' has more than 8 dimensions; a buffer has at most 8", P},
    {"extent product overflow", "kernel k(A: f32[4294967296, @4294967296] global) threads=32 {}",
     "the shape of 'A' has more than 2^63-1 elements", P},
    {"more than 2^48 elements", "kernel k(@A: f32[65536, 65536, 65537] global) threads=32 {}",
     "'A' has 281479271677952 elements; a buffer has at most 2^48", P},
    {"integer beyond 64 bits", "kernel k(A: f32[@99999999999999999999] global) threads=32 {}",
     "integer 99999999999999999999 is out of range (beyond 64 bits)", P},
    {"global allocation", HEAD "  @global G: f32[4]\n}",
     "global buffers are kernel parameters; allocate only shared or local buffers", P},
    {"strides count", HEAD "  shared As: f32[4, 8] @strides=(8)\n}", "'As' has 2 dimensions but 1 stride", P},
    {"overlapping strides", HEAD "  shared As: f32[4, 8] @strides=(4, 1)\n}",
     "the strides of 'As' make different indices reach the same element: its 32 indices reach only 20 distinct "
     "elements", P},
    {"strides that meet", HEAD "  shared As: f32[3, 4] @strides=(2, 4)\n}",
     "the strides of 'As' make different indices reach the same element: its 12 indices reach only 9 distinct "
     "elements", P},
    {"strides beyond the exact check", HEAD "  shared As: f32[3, 4, 100000, 1000] @strides=(5, 3, 1000, 100000000)\n}",
     "the strides of 'As' are not ordered so that each is larger than the reach of the smaller ones, and the "
     "buffer spans more than 2^26 elements, past what tilec checks element by element; order them so (any GPU's "
     "shared memory is far smaller)", P},
    {"zero stride", HEAD "  shared As: f32[4, 8] @strides=(0, 1)\n}",
     "stride 0 of dimension 0 of 'As' must be at least 1", P},
    {"shared kernel parameter", "kernel k(@A: f32[4] shared) threads=32 {}",
     "kernel parameter 'A' is shared; kernel parameters are global (a func takes shared or local "
     "operands)", V},
    /* ---- threads, grid, scopes ---- */
    {"threads = 0", "kernel k(A: f32[4] global) threads=@0 {}", "threads 0 is out of range (1 to 1024)", P},
    {"threads above 1024", "kernel k(A: f32[4] global) threads=@1025 {}",
     "threads 1025 is out of range (1 to 1024)", P},
    {"grid = 0", "kernel k(A: f32[4] global) threads=32 grid=@0 {}",
     "grid 0 is out of range (1 to 2147483647)", P},
    {"func with a grid", "func f(A: f32[4] shared) threads=32 @grid=2 {}",
     "a func has no grid; the kernel that calls it sets the grid", P},
    {"unknown math", "kernel k(A: f32[4] global) threads=32 math=@fast {}",
     "unknown math 'fast': write math=exact (the same bits everywhere, the default) or math=approx (the GPU's "
     "hardware exponential)", P},
    {"math of a number", "kernel k(A: f32[4] global) threads=32 grid=2 math=@1 {}",
     "expected exact or approx after 'math=', found '1'", P},
    {"math of nothing", "kernel k(A: f32[4] global) threads=32 math=@{}", "expected exact or approx after 'math=', found '{'", P},
    {"math before the grid", "kernel k(A: f32[4] global) threads=32 math=approx @grid=2 {}",
     "grid= goes before math=: threads=N grid=G math=approx", P},
    {"unknown statement", HEAD "  @block.sync()\n}",
     "unknown statement 'block'; expected shared, local, or a scope (cta, warpgroup, warp, thread, grid, cluster)", P},
    {"numpy's nanmax", HEAD "  cta.@nanmax(B, A)\n}", "unknown operation 'nanmax'; to skip NaNs, write cta.max(..., nan=ignore)", P},
    {"numpy's nanargmin", HEAD "  warp[0].@nanargmin(B, A)\n}",
     "unknown operation 'nanargmin'; to skip NaNs, write warp.argmin(..., nan=ignore)", P},
    {"a nan op that does not compare", HEAD "  cta.@nansum(B, A)\n}",
     "unknown operation 'nansum'; expected copy, fill, sync, map, sum, max, min, prod, sumsq, norm2, mean, argmax, argmin, aminmax, logsumexp, var or std", P},
    {"a CTA's slice without its index",
     "kernel k(A: f32[8, 4, 8] global, B: f32[8, 4] global) threads=32 grid=8 {\n  shared As: f32[4, 8]\n"
     "  cta.copy(@As, A)\n}",
     "copy: destination 'As' has 32 elements but source 'A' has 256; in a kernel of grid=8 each CTA copies its own slice: "
     "A[cta_id]", V},
    {"a whole size mismatch in one CTA", TILES "  cta.copy(@Bs, A)\n}",
     "copy: destination 'Bs' has 4 elements but source 'A' has 32", V},
    {"unknown operation", HEAD "  cta.@avg(B, A)\n}",
     "unknown operation 'avg'; expected copy, fill, sync, map, sum, max, min, prod, sumsq, norm2, mean, argmax, argmin, aminmax, logsumexp, var or std", P},
    {"misspelt operation", HEAD "  cta.@summ(B, A)\n}", "unknown operation 'summ'; did you mean 'sum'?", P},
    {"instance that does not exist", HEAD128 "  @warp[5].sync()\n}",
     "warp[5] does not exist: threads=128 gives 4 warps (warp size 32)", V},
    {"partial warpgroup", "kernel k(A: f32[4] global) threads=96 {\n  @warpgroup.sync()\n}",
     "warpgroup scope needs a multiple of 128 threads, but 'k' has threads=96", V},
    {"local buffer at cta scope", HEAD "  local L: f32[8]\n  cta.fill(@L, 0)\n}",
     "'L' is local (private to each thread) and cannot be used at cta scope; use it at thread or "
     "warp scope", V},
    /* ---- regions ---- */
    {"empty brackets", TILES "  cta.copy(B, Bs[@])\n}", "expected an index, found ']'", P},
    {"too many indices", TILES "  cta.copy(B, As[0, 1, @2])\n}", "too many indices: 'As' has 2 dimensions", P},
    {"index out of range", TILES "  cta.copy(B, As[@4])\n}",
     "index 4 is out of range for dimension 0 of 'As' (extent 4)", V},
    {"negative index out of range", TILES "  cta.copy(B, As[@-5, 0:4])\n}",
     "index -5 is out of range for dimension 0 of 'As' (extent 4)", V},
    {"slice out of range", TILES "  cta.copy(B, As[0, @0:9])\n}",
     "slice 0:9 is out of range for dimension 1 of 'As' (extent 8)", V},
    {"empty slice", TILES "  cta.copy(B, As[0, @3:3])\n}", "slice 3:3 of dimension 1 of 'As' is empty", V},
    {"unknown id", TILES "  cta.copy(B, As[@block_id])\n}",
     "unknown index 'block_id'; expected an integer, a slice a:b, cta_id, warpgroup_id, warp_id, thread_id, cluster_id or "
     "cta_in_cluster", P},
    {"a cluster of three dimensions", "kernel k(A: f32[4] global) threads=32 grid=4 cluster=(4@, 1, 1) {}",
     "a cluster is one-dimensional here: write cluster=(4), 4 CTAs", P},
    {"cluster before the grid", "kernel k(A: f32[4] global) threads=32 cluster=(2) @grid=2 {}",
     "grid= goes before cluster=: threads=N grid=G cluster=(2)", P},
    {"math before the cluster", "kernel k(A: f32[4] global) threads=32 grid=2 math=approx @cluster=(2) {}",
     "cluster= goes before math=: threads=N grid=G cluster=(C) math=approx", P},
    {"id on a later dimension", TILES "  warp.copy(Bs, As[0:4, @warp_id])\n}",
     "warp_id indexes dimension 1 of 'As'; ids may only index the first dimension", V},
    {"cta_id on shared", TILES "  cta.copy(Bs, As[@cta_id])\n}",
     "cta_id indexes 'As', which is shared; cta_id only indexes global buffers (each CTA has its "
     "own shared memory)", V},
    {"id narrower than the scope", HEAD128 "  shared As: f32[4, 16, 32]\n  cta.copy(As[@thread_id], A)\n}",
     "thread_id differs between the threads of one cta instance; a cta-scope statement can use ids "
     "of its own scope or wider", V},
    {"id beyond the extent", HEAD128 "  shared S: f32[2, 16]\n  warp.fill(S[@warp_id], 0)\n}",
     "warp_id reaches 3 but dimension 0 of 'S' has extent 2", V},
    {"id on a local buffer", HEAD128 "  local L: f32[4, 4]\n  warp.fill(L[@warp_id], 0)\n}",
     "'L' is local (private to each thread); index it without warp_id", V},
    /* ---- reductions ---- */
    {"axis out of range", TILES "  cta.sum(Bs, As, axes=@(2))\n}",
     "axis 2 is out of range: the source region 'As' has 2 dimensions (axes -2 to 1)", V},
    {"axis out of range after indexing", TILES "  cta.sum(Bs[0], As[0], axes=@(1))\n}",
     "axis 1 is out of range: the source region 'As' has 1 dimension (axes -1 to 0)", V},
    {"duplicate axis", TILES "  cta.sum(Bs[0], As, axes=@(1, -1, 0))\n}", "axis 1 is given twice (as -1)", V},
    {"empty axes", TILES "  cta.sum(Bs, As, axes=(@))\n}", "axes=() is empty; give at least one value", P},
    {"axes given twice", TILES "  cta.sum(Bs, As, axes=(1), @axes=(1))\n}", "axes is given twice", P},
    {"unknown keyword argument", TILES "  cta.sum(Bs, As, @axis=(1))\n}",
     "unknown keyword argument 'axis'; did you mean 'axes'?", P},
    {"accum not a boolean", TILES "  cta.sum(Bs, As, accum=@yes)\n}", "expected true or false, found 'yes'", P},
    {"nan policy unknown", TILES "  cta.max(Bs, As, nan=@skip)\n}", "expected propagate or ignore, found 'skip'", P},
    {"dst size mismatch", HEAD "  shared As: f32[4, 8]\n  shared Bs: f32[5]\n  cta.copy(As, A)\n  cta.sync()\n  cta.sum(@Bs, As)\n}",
     "sum: destination 'Bs' has 5 elements but the source keeps 4 after reducing its axes", V},
    {"dtype mismatch", HEAD "  shared As: f32[4, 8]\n  shared Bi: i32[4]\n  cta.copy(As, A)\n  cta.sync()\n  cta.max(@Bi, As)\n}",
     "max: destination 'Bi' is i32 but source 'As' is f32; make it f32, or f64 (the wider result)", V},
    {"argmax without its index", TILES "  cta.argmax(Bs, As, @axes=(1))\n}",
     "argmax takes two destinations (its results) and a source, then keyword arguments; found 'axes' where the source goes", P},
    {"sum with two destinations", TILES "  shared Cs: f32[4]\n  cta.sum(Bs, Cs, @As, axes=(1))\n}",
     "sum takes one destination and a source; 'As' is one region too many (argmax, argmin and aminmax take two destinations)", P},
    {"argmax index of f32", TILES "  shared Cs: f32[4]\n  cta.argmax(Bs, @Cs, As)\n}",
     "argmax: the index destination 'Cs' is f32; make it i64 (or i32)", V},
    {"aminmax of f64 into an i64 maximum", "kernel k(A: f64[4, 8] global, B: f64[4] global, I: i64[4] global) threads=32 {\n"
     "  cta.aminmax(B, @I, A)\n}",
     "aminmax: the maximum's destination 'I' is i64 but the minimum's 'B' is f64; they must match", V},
    {"argmax of registers across a warp", HEAD "  local L: f32[8]\n  local M: f32[1]\n  local J: i64[1]\n"
     "  thread.copy(L, A[0])\n  warp.argmax(M, J, @L)\n}",
     "argmax of local 'L' at warp scope: every lane holds its own, so an element has no index in one reduced space; copy "
     "it to shared memory first, or reduce at thread scope", V},
    {"aminmax of two dtypes", TILES "  shared Ci: i32[4]\n  cta.aminmax(Bs, @Ci, As)\n}",
     "aminmax: the maximum's destination 'Ci' is i32 but the minimum's 'Bs' is f32; they must match", V},
    {"aminmax's destinations overlap", TILES "  shared Cs: f32[8]\n  cta.aminmax(Cs[0:4], @Cs[2:6], As)\n}",
     "aminmax: the maximum's destination overlaps the first destination in 'Cs'; give it a buffer of its own", V},
    {"nan=ignore on a sum", TILES "  cta.sum(Bs, As, nan=@ignore)\n}",
     "nan=ignore applies to the ops that compare (max, min, argmax, argmin, aminmax); a sum with a NaN is NaN", V},
    {"mean of integers", HEAD "  shared I: i32[4, 8]\n  shared J: i32[4]\n  cta.fill(I, 1)\n  cta.sync()\n  cta.@mean(J, I)\n}",
     "mean is defined for float dtypes; source 'I' is i32 (sum and sumsq take integers)", V},
    {"accum on a norm", TILES "  cta.@norm2(Bs, As, accum=true)\n}",
     "accum=true does not apply to norm2: its result does not combine with the destination's (reduce into another "
     "buffer and add)", V},
    {"nan=ignore on integers", HEAD "  shared I: i32[4, 8]\n  shared J: i32[4]\n  cta.fill(I, 1)\n  cta.sync()\n  cta.max(J, I, nan=@ignore)\n}",
     "nan=ignore has no effect on i32, which has no NaN", V},
    {"source and destination overlap", TILES "  cta.sum(@As[0:4, 0], As[0:4, 0:8])\n}",
     "sum: destination and source overlap in 'As'; reduce into another buffer", V},
    {"warp.sum writing one place from every warp", TILES128 "  warp.sum(@Bs, As[warp_id])\n}",
     "all 4 warps write the same part of 'Bs'; index it by warp_id (Bs[warp_id]) or select one "
     "instance (warp[0].sum)", V},
    {"every CTA writing one place", "kernel k(A: f32[4, 8] global, B: f32[8] global) threads=32 grid=4 {\n  cta.copy(@B, A[cta_id])\n}",
     "all 4 CTAs of the grid write the same part of 'B'; index it by cta_id (B[cta_id])", V},
    /* ---- copy and fill ---- */
    {"copy count mismatch", HEAD "  shared As: f32[4, 4]\n  cta.copy(@As, A)\n}",
     "copy: destination 'As' has 16 elements but source 'A' has 32", V},
    {"copy dtype mismatch", HEAD "  shared As: f64[4, 8]\n  cta.copy(@As, A)\n}",
     "copy: destination 'As' is f64 but source 'A' is f32; they must match", V},
    {"fill with a fraction into integers", HEAD "  shared I: i32[4]\n  cta.fill(I, @0.5)\n}",
     "fill value of 'I' must be an integer, since it is i32", V},
    {"fill beyond u32", HEAD "  shared I: u32[4]\n  cta.fill(I, @-1)\n}",
     "fill value -1 is out of range for u32 (0 to 4294967295)", V},
    {"fill overflowing f16", HEAD "  shared H: f16[4]\n  cta.fill(H, @1e6)\n}",
     "fill value 1e+06 overflows f16; write inf or -inf for infinity", V},
    {"-nan", HEAD "  shared As: f32[4]\n  cta.fill(As, @-nan)\n}", "'-nan' is not a number; write nan", P},
    {"fill needs a number", HEAD "  shared As: f32[4]\n  cta.fill(As, @B)\n}",
     "expected a number (an integer, a decimal, inf, -inf or nan), found 'B'", P},
    /* ---- map statements: syntax ---- */
    {"misspelt elementwise op", MAPK "  cta.map(P, @exq(S))\n}", "unknown operator 'exq'; did you mean 'exp'?", P},
    {"misspelt cast", MAPK "  cta.map(P, @f33(S))\n}", "unknown operator 'f33'; did you mean 'f32'?", P},
    {"unknown call", MAPK "  cta.map(P, @softmax(S))\n}",
     "unknown operator 'softmax'; expected an elementwise operator (add, exp, where...), a dtype (a cast: f32(x)) or index", P},
    {"a buffer called", MAPK "  cta.map(P, @S(1))\n}", "'S' is a buffer, not an operator; index a region with [ ] (S[0, :])", P},
    {"an operator not called", MAPK "  cta.map(P, @exp + S)\n}", "'exp' is an operator; call it: exp(...)", P},
    {"too few operands", MAPK "  cta.map(P, @max(S))\n}", "max takes 2 operands; found 1", P},
    {"too many operands", MAPK "  cta.map(P, exp(S, @m))\n}", "exp takes 1 operand; found more (remove this one)", P},
    {"empty call", MAPK "  cta.map(P, exp(@))\n}", "exp() has no operand; exp takes 1 operand", P},
    {"trailing comma in a call", MAPK "  cta.map(P, max(S, m,@))\n}",
     "expected an operand after ','; max takes 2 operands (remove the trailing ',' or give the missing operand)", P},
    {"cast of two", MAPK "  cta.map(P, f32(S, @m))\n}", "a cast to f32 takes 1 operand; found more (remove this one)", P},
    {"empty index", MAPK "  cta.map(P, index(@))\n}",
     "index() has no dimension; write index(d), d a dimension of the destination (negative counts from the end)", P},
    {"index of a buffer", MAPK "  cta.map(P, index(@S))\n}", "expected an integer, found 'S'", P},
    {"unknown buffer in an expression", MAPK "  cta.map(P, S + @Q)\n}",
     "unknown buffer 'Q'; declare it as a parameter or with shared/local before this line", P},
    {"misspelt buffer in an expression", MAPK "  cta.map(P, exp(@SS))\n}", "unknown buffer 'SS'; did you mean 'S'?", P},
    {"missing operand", MAPK "  cta.map(P, S + @)\n}",
     "expected an operand (a buffer, a number, an operator such as exp(x), or '('), found ')'", P},
    {"two operands side by side", MAPK "  cta.map(P, S @m)\n}", "expected an operator (+ - * /), ',' or ')', found 'm'", P},
    {"no expression", MAPK "  cta.map(P, @)\n}", "expected an expression (the value of each element), found ')'", P},
    {"unclosed parenthesis", MAPK "  cta.map(P, (S + m\n@}", "expected ')', found '}'", P},
    {"map with a second operand", MAPK "  cta.map(P, S, @m)\n}",
     "map takes a destination and one expression; 'm' is one operand too many (combine the operands in the expression: add(a, b))", P},
    {"map keyword", MAPK "  cta.map(P, S, @axes=1)\n}", "unknown keyword argument 'axes'; expected variant= (map takes no other)", P},
    {"-nan in an expression", MAPK "  cta.map(P, S * @-nan)\n}", "'-nan' is not a number; write nan", P},
    {"number too large in an expression", MAPK "  cta.map(P, S * @-1e999)\n}", "number -1e999 is too large; write inf for infinity", P},
    {"misspelt map", MAPK "  cta.@mapp(P, S)\n}", "unknown operation 'mapp'; did you mean 'map'?", P},
    /* ---- map statements: meaning ---- */
    {"map mixing a float and an integer", MAPK "  cta.map(P, S @+ t)\n}",
     "'+' mixes f32 'S' and i32 't'; cast the integer to compute in f32: f32(t)", V},
    {"map mixing integer types", MAPK "  cta.map(t, @max(t, index(0)))\n}",
     "max mixes i32 't' and i64 'index(0)'; cast one to the other's type: i64(t)", V},
    {"map: exp of an integer", MAPK "  cta.map(P, @exp(t))\n}", "exp of i32 't': cast it, exp(f32(t))", V},
    {"map: division of integers", MAPK "  cta.map(t, t @/ (t + 1))\n}",
     "'/' of i32 't' and 't + 1': cast them, f32(t) / f32(t + 1)", V},
    {"map: a fraction meets integers", MAPK "  cta.map(t, t * @0.5)\n}",
     "number 0.5 is not an integer, but it computes in i32 (the type it meets); write an integer, or compute in a float: f32(...)", V},
    {"map: an integer that does not fit", MAPK "  cta.map(t, t + @-2147483649)\n}",
     "number -2147483649 does not fit i32 (-2147483648 to 2147483647)", V},
    {"map: an integer past 64 bits meets integers", MAPK "  cta.map(t, i64(t) + @99999999999999999999)\n}",
     "number 99999999999999999999 does not fit i64 (-9223372036854775808 to 9223372036854775807)", V},
    {"map: a number overflowing f32", MAPK "  cta.map(P, S * @1e39)\n}", "number 1e+39 overflows f32; write inf or -inf for infinity", V},
    {"map: numbers only, into integers", MAPK "  cta.map(t, @inf)\n}",
     "number inf is not an integer, but it computes in i32 (the type it meets); write an integer, or compute in a float: f32(...)", V},
    {"map: a row statistic without its trailing axis",
     "kernel k(S: f32[4, 8] global, r: f32[4] global, P: f32[4, 8] global) threads=32 {\n  cta.map(P, S - @r)\n}",
     "operand 'r' is [4] and does not broadcast to the destination 'P', [4, 8]: aligned at the right, its dimension 0 (4) "
     "meets 8; each must equal the destination's or be 1; a row statistic needs a trailing axis of extent 1: declare "
     "r: f32[4, 1]; a reduction over axes=(-1) writes it", V},
    {"map: an operand of higher rank", MAPK "  cta.map(P[0], @S + 1)\n}",
     "operand 'S' is [4, 8] but the destination 'P' is [8]; an operand broadcasts to the destination's shape, so it has at "
     "most 1 dimension", V},
    {"map: mismatched extents", MAPK "  cta.map(P, @S[:, 0:4])\n}",
     "operand 'S[:, 0:4]' is [4, 4] and does not broadcast to the destination 'P', [4, 8]: aligned at the right, its "
     "dimension 1 (4) meets 8; each must equal the destination's or be 1", V},
    {"map: index out of range", MAPK "  cta.map(P, S * f32(@index(-3)))\n}",
     "index(-3) is out of range: the destination 'P' has 2 dimensions (index(-2) to index(1))", V},
    {"map at grid scope", MAPK "  @grid.map(P, S)\n}",
     "a map runs inside a CTA; for an elementwise pass over a whole tensor, give the kernel grid= and index its global "
     "buffers by cta_id: cta.map(Y[cta_id], ...)", V},
    {"map: an operand overlapping the destination", MAPK "  cta.map(P[0:2], @P[1:3] + 1)\n}",
     "operand 'P[1:3]' overlaps the destination 'P[0:2]'; an operand may be the destination only as the identical region "
     "(in place): read a copy, or write another buffer", V},
    {"map: a gather of the destination itself", MAPK "  cta.map(P, @gather(P, 1, index(0)))\n}",
     "gather reads 'P', which this map writes: the element it picks may be one another thread (or this one, earlier) "
     "has already overwritten; gather from a copy, or write another buffer", V},
    {"map: a gather of a region the destination meets", MAPK "  cta.map(P[0:2], S[0:2] + @gather(P[1:3], 1, 0))\n}",
     "gather reads 'P', which this map writes: the element it picks may be one another thread (or this one, earlier) "
     "has already overwritten; gather from a copy, or write another buffer", V},
    {"map: every warp writing one place", "kernel k(S: f32[4, 8] global, P: f32[4, 8] global) threads=64 {\n"
     "  warp.map(@P, S)\n}", "all 2 warps write the same part of 'P'; index it by warp_id (P[warp_id]) or select one instance (warp[0].map)", V},
    {"map: a local operand at cta scope", MAPK "  local L: f32[8]\n  cta.map(P, S + @L)\n}",
     "'L' is local (private to each thread) and cannot be used at cta scope; use it at thread or warp scope", V},
    {"map: each lane's own array into one place", MAPK "  local L: f32[8]\n  warp.map(P[0], @L)\n}",
     "every lane holds its own 'L', so a warp cannot compute one 'P' from it; map at thread scope", V},
    {"map: a fragment into shared memory",
     "func f(S: f32[16, 64] local layout=mma_m16n8k16_c, G: f32[16, 64] shared) threads=32 {\n  warp.map(G, @S)\n}",
     "'S' is a fragment (a tile the lanes share); a map reads a fragment only into a fragment destination of the same "
     "lanes, and 'G' is not one: copy it to shared memory first", V},
    {"map: a thread's own array into a fragment",
     "func f(S: f32[16, 64] local layout=mma_m16n8k16_c, L: f32[16, 64] local) threads=32 {\n  warp.map(S, @L)\n}",
     "'L' is each thread's own array and 'S' a fragment (a tile the lanes share); the operands of a fragment destination "
     "are fragments of its lanes, or shared or global tiles", V},
    {"map: a row statistic in the wrong lanes",
     "func f(S: f32[16, 64] local layout=mma_m16n8k16_c, m: f32[16, 1] local layout=linear(reg=((8, 0)), "
     "lane=((1, 0), (2, 0), (4, 0), (0, 0), (0, 0)))) threads=32 {\n  warp.map(S, S - @m)\n}",
     "fragment 'm' holds the element that register 0 of 'S' reads in register 0 of lane 0, but not in lane 1 "
     "(element [0, 2] of 'S'); a map reads an operand fragment at one register for every lane: give 'm' a layout that "
     "matches 'S', or read it from shared memory", V},
    /* ---- barriers ---- */
    {"missing sync before a read", HEAD "  shared As: f32[4, 8]\n  shared Bs: f32[4]\n  cta.copy(As, A)\n  cta.sum(Bs, @As)\n}",
     "missing barrier: 'As' is read here but other threads wrote it at line 4 with no barrier "
     "between; add cta.sync() before this statement", V},
    {"missing sync before overwriting", TILES "  cta.sum(Bs, As)\n  cta.copy(B, Bs)\n  cta.fill(@Bs, 0)\n}",
     "missing barrier: 'Bs' is overwritten here while other threads may still read it at line 7; "
     "add cta.sync() before this statement", V},
    {"two writers", HEAD "  shared As: f32[4, 8]\n  cta.fill(As, 0)\n  cta.copy(@As, A)\n}",
     "missing barrier: 'As' is written here and by other threads at line 3 with no barrier "
     "between; add cta.sync() before this statement", V},
    {"a warp barrier does not order warps", TILES128 "  warp.sum(Bs[warp_id], As[warp_id])\n  warp.sync()\n  cta.copy(B, @Bs)\n}",
     "missing barrier: 'Bs' is read here but other threads wrote it at line 6 with no barrier "
     "between; add cta.sync() before this statement", V},
    {"warp 1 reads what warp 0 wrote", TILES128 "  warp[0].fill(Bs[0], 1)\n  warp[1].copy(B[1], @Bs[0])\n}",
     "missing barrier: 'Bs' is read here but other threads wrote it at line 6 with no barrier "
     "between; add cta.sync() before this statement", V},
};

static void test_case(void **state) {
    const bad_case *c = *state;
    int line, col;
    char *text = strip_marker(c->src, strlen(c->src), &line, &col);
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    tilec_status st = check_text(ctx, text, strlen(text), 32);
    tilec_diag d = {0};
    if (tilec_diag_count(ctx) == 0 || tilec_diag_get(ctx, 0, &d) != TILEC_OK) {
        fprintf(stderr, "case '%s': no diagnostic (status %s)\n", c->name, tilec_status_name(st));
        fail();
    }
    if (st != c->status || strcmp(d.message, c->message) != 0 || d.line != line || d.col != col) {
        fprintf(stderr, "case '%s'\n  want %s %d:%d %s\n  got  %s %d:%d %s\n%s", c->name,
                tilec_status_name(c->status), line, col, c->message, tilec_status_name(st), d.line,
                d.col, d.message, tilec_diag_text(ctx));
        fail();
    }
    assert_int_equal(d.severity, TILEC_SEV_ERROR);
    /* the rendering shows the position, the message, the line and a caret */
    char head[512];
    snprintf(head, sizeof head, "t.tile:%d:%d: error: %s\n", line, col, c->message);
    assert_non_null(strstr(tilec_diag_text(ctx), head));
    assert_non_null(strstr(tilec_diag_text(ctx), "^"));
    tilec_close(ctx);
    free(text);
}

/* A megabyte-long line: the error is found at its far end and the excerpt is cut. */
static void test_long_line(void **state) {
    (void)state;
    const char *head = "kernel k(A: f32[4] global) threads=32 {";
    size_t pad = 1 << 20, hn = strlen(head);
    char *src = malloc(hn + pad + 64);
    memcpy(src, head, hn);
    memset(src + hn, ' ', pad);
    strcpy(src + hn + pad, "cta.avg(A, A)\n}\n");
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    assert_int_equal(check_text(ctx, src, strlen(src), 32), TILEC_ERR_PARSE);
    tilec_diag d;
    assert_int_equal(tilec_diag_get(ctx, 0, &d), TILEC_OK);
    assert_int_equal(d.line, 1);
    assert_int_equal(d.col, (int)(hn + pad + 5));
    assert_string_equal(d.message, "unknown operation 'avg'; expected copy, fill, sync, map, sum, max, min, prod, sumsq, norm2, mean, argmax, argmin, aminmax, logsumexp, var or std");
    assert_true(strlen(tilec_diag_text(ctx)) < 1000); /* the excerpt is a window, not 1 MB */
    tilec_close(ctx);
    free(src);
}

/* Every byte value at every position of a valid program: no crash, a status either way. */
static void test_every_byte(void **state) {
    (void)state;
    const char *good = "kernel k(A: f32[4, 8] global, B: f32[4] global, m: f32[4, 1] global) threads=32 {\n"
                       "  shared As: f32[4, 8]\n  cta.copy(As, A)\n  cta.sync()\n"
                       "  cta.sum(B, As, axes=(-1))\n  cta.map(As, where(gt(index(1), 2), -exp(As - m) * 1.5e-3, f32(i32(As))))\n}\n";
    size_t n = strlen(good);
    char *buf = malloc(n);
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    static const unsigned char bytes[] = {0, 1, '\n', ' ', '#', '-', ':', ',', '[', ']', '(', ')',
                                          '{', '}', '=', '.', '9', 'x', 0x80, 0xff, '+', '*', '/', 'e'};
    for (size_t i = 0; i < n; i++)
        for (size_t b = 0; b < sizeof bytes; b++) {
            memcpy(buf, good, n);
            buf[i] = (char)bytes[b];
            tilec_status st = check_text(ctx, buf, n, 32);
            assert_true(st == TILEC_OK || st == TILEC_ERR_PARSE || st == TILEC_ERR_VERIFY);
            if (st != TILEC_OK) assert_true(tilec_diag_count(ctx) > 0);
        }
    tilec_close(ctx);
    free(buf);
}

/* Hostile sizes: too much text, too many statements, too many kernels — each a clear
 * error where it is decided, not memory or time spent on it. */
static void expect_parse_error(const char *src, size_t n, int line, int col, const char *message) {
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    tilec_program *p = NULL;
    assert_int_equal(tilec_parse(ctx, NULL, src, n, &p), TILEC_ERR_PARSE);
    assert_null(p);
    tilec_diag d;
    assert_int_equal(tilec_diag_get(ctx, 0, &d), TILEC_OK);
    assert_string_equal(d.message, message);
    assert_int_equal(d.line, line);
    assert_int_equal(d.col, col);
    tilec_close(ctx);
}

static void test_limits(void **state) {
    (void)state;
    size_t n = TILEC_MAX_SOURCE + 1; /* the size alone decides: the text is not read */
    char *big = malloc(n);
    memset(big, ' ', n);
    char want[128];
    snprintf(want, sizeof want, "<input>: %zu bytes of .tile text; tilec reads at most 16 MiB", n);
    expect_parse_error(big, n, 0, 0, want);
    free(big);
    /* statement 4097 of a kernel */
    size_t cap = 64 + (TILEC_MAX_STMTS + 1) * 14;
    char *src = malloc(cap);
    size_t at = (size_t)snprintf(src, cap, "kernel k(A: f32[4] global) threads=32 {\n");
    for (int i = 0; i <= TILEC_MAX_STMTS; i++) at += (size_t)snprintf(src + at, cap - at, "  cta.sync()\n");
    snprintf(src + at, cap - at, "}\n");
    expect_parse_error(src, strlen(src), TILEC_MAX_STMTS + 2, 3, "kernel 'k' has more than 4096 statements; split it");
    free(src);
    /* kernel 1025 of a program */
    cap = (TILEC_MAX_KERNELS + 1) * 64;
    src = malloc(cap);
    at = 0;
    for (int i = 0; i <= TILEC_MAX_KERNELS; i++)
        at += (size_t)snprintf(src + at, cap - at, "kernel k%d(A: f32[4] global) threads=32 {\n}\n", i);
    expect_parse_error(src, at, 2 * TILEC_MAX_KERNELS + 1, 1, "more than 1024 kernels and funcs in one program; split the file");
    free(src);
    /* an expression nested a million deep (parentheses, minus signs, calls, a chain of
     * additions): an error at the 65th level, not a stack overflow in the parser or in a
     * later walk of the tree */
    static const char *const nest[] = {"(", "-", "exp(", "S + "};
    static const int col[] = {78, 77, 270, 268};
    for (int i = 0; i < 4; i++) {
        size_t deep = 1000000, w = strlen(nest[i]);
        cap = 256 + deep * (w + 1);
        src = malloc(cap);
        at = (size_t)snprintf(src, cap, "kernel k(S: f32[4] global, P: f32[4] global) threads=32 {\n  cta.map(P, ");
        for (size_t j = 0; j < deep; j++, at += w) memcpy(src + at, nest[i], w);
        at += (size_t)snprintf(src + at, cap - at, "S)\n}\n");
        expect_parse_error(src, at, 2, col[i], "expression nests more than 64 levels deep; compute part of it into a "
                           "local buffer with a map statement of its own");
        free(src);
    }
}

int main(void) {
    enum { N = sizeof cases / sizeof cases[0] };
    struct CMUnitTest tests[N + 3];
    for (size_t i = 0; i < N; i++)
        tests[i] = (struct CMUnitTest){cases[i].name, test_case, NULL, NULL, (void *)&cases[i]};
    tests[N] = (struct CMUnitTest)cmocka_unit_test(test_long_line);
    tests[N + 1] = (struct CMUnitTest)cmocka_unit_test(test_every_byte);
    tests[N + 2] = (struct CMUnitTest)cmocka_unit_test(test_limits);
    return cmocka_run_group_tests_name("bad input", tests, NULL, NULL);
}
