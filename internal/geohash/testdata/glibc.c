/* Prints glibc's sin, cos and asin for pseudo-random arguments in the ranges
 * the geo code uses, as C99 hex floats: "f x result" per line.
 *   gcc -O2 glibc.c -o /tmp/glibc -lm && /tmp/glibc > libm.txt */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    srand48(7015);
    for (int i = 0; i < 3000; i++) {
        volatile double x = (drand48() * 2 - 1) * M_PI;
        volatile double y = drand48();
        printf("sin %a %a\ncos %a %a\nasin %a %a\n", x, sin(x), x, cos(x), y, asin(y));
    }
    return 0;
}
