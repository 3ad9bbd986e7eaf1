/* Compiles tilec.h alone (no other include before it) and uses a little of it, so a
 * header that leans on an include of its user fails here. */
#include "tilec.h"

int main(void) {
    tilec_region r = tilec_region_whole(0);
    return (r.nindex == 0 && TILEC_DTYPE_COUNT == 7 && TILEC_MAX_RANK == 8) ? 0 : 1;
}
